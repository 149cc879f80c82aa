"""SDPA's flash backward and eager PyTorch's backward against iosim's DRAM estimate: the records,
iosim's model of each point, and every kernel's DRAM bytes beside ncu's (torch_bwd_fit.py's
first half; its time model is there). Pure: no GPU, no torch.

The closed-form L2 estimate of every kernel (estimates/l2.py), with the dirty lines a kernel
leaves in L2 moved to the next one as the Triton backward's comparison does
(backward_fit.handover). Launches are matched to the loop nest's kernels by position (the two
reduce kernels of the GQA sum count as one).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.loopnest import Kernel
from iosim.analysis.compare import compare
from iosim.analysis.comparison import AlgorithmEstimate
from iosim.analysis.impl_kernels import impl_kernels, impl_workload
from iosim.calibrate import CalibrationError, dirty_ledger, split_k
from iosim.calibrate.backward_fit import DIRTY_SHARE, handover, load_record, workload_of
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from iosim.record import Record

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
RECORDS = (DATA / "backward-h200.json", DATA / "backward-h200-torch.json")
FRESH = DATA / "backward-h200-fresh.json"
FRESH2 = DATA / "backward-h200-fresh2.json"
FRESH3 = DATA / "backward-h200-fresh3.json"
"""bwd4's rules on a third fresh set (fresh3_bwd.py), made after they were frozen."""
FRESH4 = DATA / "backward-h200-fresh4.json"
"""The Triton backward alone at eight more small-N points (fresh3_bwd.py)."""
FRESH5 = DATA / "backward-h200-fresh5.json"
FRESH6 = DATA / "backward-h200-fresh6.json"
FRESH7 = DATA / "backward-h200-fresh7.json"
"""bwd7's rules (the protocol residue, the launcher floor) on a seventh fresh set (fresh7_bwd.py)."""
FRESH8 = DATA / "backward-h200-fresh8.json"
"""bwd8's rule (eager's mask and scale backward out of place) on an eighth set (fresh8_bwd.py)."""
FRESH9 = DATA / "backward-h200-fresh9.json"
"""bwd9's eager host floor on a ninth set, eager and SDPA timed only (fresh9_bwd.py)."""
FRESH10 = DATA / "backward-h200-fresh10.json"
"""bwd11's GEMM-handover rule (estimates/l2_handover.py) on a tenth set (fresh10_bwd.py)."""
FRESH11 = DATA / "backward-h200-fresh11.json"
"""bwd12's SDPA host floor on an eleventh set, SDPA and eager timed only (fresh11_bwd.py)."""
FRESH12 = DATA / "backward-h200-fresh12.json"
"""bwd13's backward rules on a twelfth set, eager and SDPA per kernel (fresh12_bwd.py)."""
"""bwd5's rules (the L2's soft cutoff) on a fifth fresh set (fresh5_bwd.py)."""
"""Gaps (a) and (c) as shipped after FRESH was seen, on a second fresh set (the lead's call)."""
"""Issue 10's open gaps on fresh points (fresh_bwd.py), judged apart from RECORDS."""
IMPLS = {"sdpa": "sdpa-flash", "eager": "torch-naive"}


def load(paths: tuple[Path, ...] | list[Path] = RECORDS) -> list[dict[str, Any]]:
    """The records, each with its `path`; a file that is not one: CalibrationError, one line."""
    return [{**load_record(path, "benchmarks/backward_h200.py --torch-only"), "path": str(path)}
            for path in paths]


_MODELS: dict[tuple[Workload, str, str], AlgorithmEstimate] = {}


def model(w: Workload, what: str, hardware: Hardware) -> AlgorithmEstimate:
    """iosim's estimate of the implementation that ran (`compare --impl`), cached."""
    key = (w, what, hardware.path)
    if key not in _MODELS:
        _MODELS[key] = compare(w, hardware, impl=IMPLS[what]).algorithms[1]
    return _MODELS[key]


def forget_models() -> None:
    """Drop model's cached estimates (after the L2 model's constants were changed)."""
    _MODELS.clear()


def launched(w: Workload, what: str, a: AlgorithmEstimate) -> tuple[Kernel, ...]:
    """The loop-nest kernels behind `a` (compare's own steps: impl_workload, impl_kernels)."""
    impl = get_implementation(IMPLS[what])
    iw = impl_workload(impl, w)
    return impl_kernels(impl, iw, ALGORITHMS[impl.algorithm].kernels(iw, a.tiling))


class KernelBytes(Record):
    """One kernel of one ncu run: iosim's DRAM estimate (dirty lines handed over) and ncu's."""

    point: str
    what: str
    kernel: str
    estimate: float
    measured: float
    oblivious: float
    run: int = 0
    """Which ncu run (items' order) the kernel belongs to."""

    @property
    def error(self) -> float:
        """(estimate − measured) / measured."""
        return (self.estimate - self.measured) / self.measured


def _split_half(kernel: str, previous: str | None) -> bool:
    """Whether `kernel` is the second launch of one elementwise op that PyTorch split in two:
    TensorIterator launches an op whose operand spans more than 2**31 bytes as pieces that
    each fit 32-bit indexing (seen in fresh6 at 64 heads × N 5,200 bf16, 3.46 GB per N×N
    matrix: mul, mask and scale each twice, the same kernel back to back). Eager's only: SDPA's
    copies of dO and O are the same kernel back to back and two ops."""
    return previous == kernel and "elementwise_kernel" in kernel


def _split_k(kernel: str) -> bool:
    """Whether `kernel` is cuBLAS's split-K reduce, which sums the partial products of the GEMM
    launched just before it: part of that GEMM. Seen in fresh10 (batch·heads 1, N 3,150-6,100:
    the dV, dQ and dK GEMMs, whose N×d outputs fill few tiles, each followed by a
    `cublasLt::splitKreduce_kernel` of 0-1.7 MB); no earlier eager record has one."""
    return "splitKreduce_kernel" in kernel


def _launches(segment: dict[str, Any], what: str) -> list[float]:
    """DRAM bytes per launch, the GQA sum's two reduce kernels as one, an elementwise op's
    32-bit-indexing halves as one (_split_half), a split-K GEMM with its reduce (_split_k), the
    residue (the closing evict's write-backs) to the last."""
    out: list[float] = []
    reduce_open = False
    previous: str | None = None
    for k in segment["kernels"]:
        nbytes = k["dram_read_bytes"] + k["dram_write_bytes"]
        is_reduce = "reduce_kernel" in k["kernel"] and not _split_k(k["kernel"])
        if (is_reduce and reduce_open) or (what == "eager" and (
                _split_half(k["kernel"], previous) or _split_k(k["kernel"]))):
            out[-1] += nbytes
        else:
            out.append(nbytes)
        reduce_open = is_reduce
        previous = k["kernel"]
    out[-1] += segment["residue_write_bytes"]
    return out


def items(records: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(point, 'sdpa' or 'eager', its ncu segment) for every counted SDPA and eager run."""
    for record in records:
        counters = record.get("counters", {})
        if counters.get("status") != "ok":
            continue
        points = {p["id"]: p for p in record["points"]}
        for item in counters["items"]:
            if item["what"] in IMPLS and item["id"] in points:
                yield points[item["id"]], item["what"], item["segments"][0]


def dram_comparison(records: list[dict[str, Any]], hardware: Hardware,
                    share: float = DIRTY_SHARE) -> list[KernelBytes]:
    """Every kernel of every SDPA and eager ncu run against iosim's estimate, in launch order."""
    assert hardware.l2_bytes is not None
    rows = []
    for run, (p, what, segment) in enumerate(items(records)):
        a = model(workload_of(p), what, hardware)
        assert a.dram is not None
        est = [(k.name, float(a.dram.of_kernel(k.name).read_bytes),
                float(a.dram.of_kernel(k.name).write_bytes)) for k in a.kernels]
        measured = _launches(segment, what)
        if len(measured) != len(est):
            raise CalibrationError(
                f"{p['id']} ({what}): ncu counted {len(measured)} launches, iosim's "
                f"{IMPLS[what]} has {len(est)} kernels ({', '.join(n for n, _, _ in est)})")
        kernels = launched(workload_of(p), what, a)
        last_wave = {k.name: dirty_ledger.last_wave_bytes(k, hardware.sm_count or 0)
                     for k in kernels}
        if what == "eager":  # cuBLAS's split-K partial sums at one GEMM batch (split_k.py)
            partials = {k.name: split_k.partial_bytes(k, workload_of(p)) for k in kernels}
            est = [(name, read, write + partials.get(name, 0.0)) for name, read, write in est]
        for (name, moved), m in zip(handover(est, hardware.l2_bytes, share,
                                             last_wave=last_wave), measured, strict=True):
            rows.append(KernelBytes(p["id"], what, name, moved, m,
                                    float(a.dram.of_kernel(name).oblivious_bytes), run))
    return rows
