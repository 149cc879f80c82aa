"""`compare`: every algorithm's traffic, FLOPs and roofline time for one workload on one GPU."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iosim._version import __version__
from iosim.algorithms import ALGORITHMS, DEFAULT_ALGORITHMS, Algorithm, get_algorithm
from iosim.algorithms.loopnest import (
    KV_HEAD_TENSORS,
    Access,
    Dims,
    Kernel,
    element_bytes,
    kernel_programs,
)
from iosim.algorithms.traffic import Traffic, TrafficTotals
from iosim.errors import IosimError
from iosim.estimates.l2 import DramEstimate, dram_estimate
from iosim.estimates.roofline import KernelEstimate, Profile, Roofs, estimate_kernels, roofs_for
from iosim.estimates.training import (
    IO_TENSORS,
    RNG_STATE_BYTES,
    Occupancy,
    convention_flops,
    saved_for_backward,
)
from iosim.inputs.hardware import Hardware, resolve_hardware
from iosim.inputs.units import parse_quantity
from iosim.inputs.workload import Tiling, Workload, make_tiling

SCHEMA = "iosim.compare/1"


@dataclass(frozen=True, slots=True)
class Footprint:
    """HBM an algorithm holds: inputs and outputs, plus what it adds on top of them."""

    io_bytes: int
    """Q, K, V (K and V sized by the KV heads) and O."""
    extra: tuple[tuple[str, int], ...]
    """(tensor, bytes) held beyond the inputs and outputs at the algorithm's peak."""
    capacity_bytes: float
    saved: tuple[tuple[str, int], ...] = ()
    """(tensor, bytes) the forward keeps in HBM for the backward pass (passes with a backward)."""

    @property
    def extra_bytes(self) -> int:
        return sum(b for _, b in self.extra)

    @property
    def total_bytes(self) -> int:
        return self.io_bytes + self.extra_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes


def _tensor_bytes(access: Access, workload: Workload, splits: int = 1) -> int:
    """Size in HBM of the whole tensor an access touches (every split's copy of a partial)."""
    length = workload.n if access.rows == "q" else workload.seq_kv
    width = {"d": workload.d, "1": 1, "kv": workload.seq_kv}[access.cols]
    per_kv = access.per_kv_head or access.tensor in KV_HEAD_TENSORS
    instances = workload.batch * (workload.heads_kv if per_kv else workload.heads)
    copies = splits if access.per_split else 1
    size = length * width * instances * copies * element_bytes(access.element,
                                                                workload.element_bytes)
    return int(size) if np.ndim(size) == 0 else size  # arrays in a sweep (footprint_bytes)


def footprint(kernels: Sequence[Kernel], workload: Workload, hardware: Hardware, *,
              saved: Sequence[Access] = (), tiling: Tiling | None = None,
              fixed: Sequence[tuple[str, int]] = ()) -> Footprint:
    """Inputs/outputs plus the N×N matrices alive at once and the statistics kept in HBM.

    N×N matrices: the most that any one kernel touches (standard's softmax reads S while it
    writes P, so both are alive), together with the tensors kept for the backward pass (`saved`)
    that exist by then (from their first write; from the start of a backward-only pass).
    Statistics: every per-row fp32 tensor the algorithm writes. Workspace: every other tensor
    it writes that is not an input or output (dQaccum, dK_expanded, the split-KV partials).
    `fixed`: small buffers outside the loop nests (the RNG state). With a backward pass the
    inputs and outputs include dO, dQ, dK and dV.
    """
    splits = tiling.splits if tiling else 1
    io, candidates, stats, workspace, saved_bytes = _held(kernels, workload, saved, splits)
    peak: dict[str, int] = {}
    for current in candidates:
        if sum(current.values()) > sum(peak.values()):
            peak = current
    extra = {**peak, **stats, **workspace, **dict(fixed)}
    kept = tuple(saved_bytes.items()) + tuple(fixed)
    return Footprint(io, tuple(extra.items()), hardware.hbm_capacity_bytes, kept)


def footprint_bytes(kernels: Sequence[Kernel], workload: Any, *, saved: Sequence[Access] = (),
                    splits: Any = 1, fixed: Sequence[tuple[str, int]] = ()) -> Any:
    """Footprint.total_bytes on numbers or numpy arrays alike (a sweep's workload holds arrays
    of n, seq_kv, d, batch, heads, heads_kv, element_bytes): the same tensors as `footprint`,
    the N×N peak as the elementwise largest kernel."""
    io, candidates, stats, workspace, _ = _held(kernels, workload, saved, splits)
    peak: Any = 0
    for current in candidates:
        peak = np.maximum(peak, sum(current.values()))
    return io + peak + sum(stats.values()) + sum(workspace.values()) + sum(b for _, b in fixed)


def kept_for_backward(algorithm: Algorithm, workload: Workload
                      ) -> tuple[tuple[Access, ...], tuple[tuple[str, int], ...]]:
    """(tensors the forward keeps for the backward, fixed buffers) of a pass with a backward;
    nothing for a forward pass."""
    if workload.pass_ == "fwd":
        return (), ()
    saved = saved_for_backward(algorithm.forward(workload), algorithm.backward(workload))
    fixed: tuple[tuple[str, int], ...] = ()
    if algorithm.tiled and "dropout" in workload.unfused:
        fixed = (("R", RNG_STATE_BYTES),)  # Alg. 2 line 1 / Alg. 4: the RNG state
    return saved, fixed


def _held(kernels: Sequence[Kernel], workload: Any, saved: Sequence[Access], splits: Any
          ) -> tuple[Any, list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(inputs+outputs, per kernel the N×N and saved tensors alive during it, statistics,
    workspace, saved tensors): the pieces of `footprint` (see its docstring)."""
    io_tensors = [Access("Q", "read", "prologue", "q", "d", ""),
                  Access("O", "read", "prologue", "q", "d", ""),
                  Access("K", "read", "prologue", "kv", "d", ""),
                  Access("V", "read", "prologue", "kv", "d", "")]
    if workload.pass_ != "fwd":
        io_tensors += [Access("dO", "read", "prologue", "q", "d", ""),
                       Access("dQ", "read", "prologue", "q", "d", ""),
                       Access("dK", "read", "prologue", "kv", "d", ""),
                       Access("dV", "read", "prologue", "kv", "d", "")]
    io = sum(_tensor_bytes(a, workload) for a in io_tensors)
    saved_bytes = {a.tensor: _tensor_bytes(a, workload, splits) for a in saved}
    written = set(saved_bytes) if workload.pass_ == "bwd" else set()
    candidates = []
    for kernel in kernels:
        written |= {a.tensor for a in kernel.accesses if a.op == "write"}
        alive = {t: b for t, b in saved_bytes.items() if t in written}
        matrices = {a.tensor: _tensor_bytes(a, workload) for a in kernel.accesses if a.cols == "kv"}
        candidates.append({**alive, **matrices})
    stats = {a.tensor: _tensor_bytes(a, workload, splits) for k in kernels for a in k.accesses
             if a.cols == "1" and a.op == "write"}
    workspace = {a.tensor: _tensor_bytes(a, workload, splits) for k in kernels for a in k.accesses
                 if a.cols == "d" and a.op == "write" and a.tensor not in IO_TENSORS}
    return io, candidates, stats, workspace, saved_bytes


@dataclass(frozen=True, slots=True)
class AlgorithmEstimate(TrafficTotals):
    """One algorithm: its kernels on the roofline, its traffic terms and totals."""

    name: str
    title: str
    tiling: Tiling | None
    kernels: tuple[KernelEstimate, ...]
    footprint: Footprint
    baseline_time_s: float
    baseline_hbm_bytes: int
    occupancy: tuple[Occupancy, ...] = ()
    """The launch grid of every kernel whose grid iosim models, against the GPU's SMs."""
    convention_flops: float = 0.0
    """FLOPs by the FA2/FA3 convention (training.convention_flops), beside the executed count."""
    dram: DramEstimate | None = None
    """The L2-aware DRAM estimate (l2.py); None when the GPU's YAML lacks l2_size or sm_count."""

    @property
    def traffic(self) -> Traffic:
        return Traffic(tuple(t for k in self.kernels for t in k.traffic))

    @property
    def matmul_flops(self) -> int:
        return sum(k.matmul_flops for k in self.kernels)

    @property
    def elementwise_flops(self) -> int:
        return sum(k.elementwise_flops for k in self.kernels)

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    @property
    def bound(self) -> str:
        """The bound of the kernels that hold most of the time."""
        memory = sum(k.time_s for k in self.kernels if k.bound == "memory")
        return "memory" if memory >= self.time_s - memory else "compute"

    @property
    def occupancy_time_s(self) -> float:
        """Roofline time if each kernel only gets the share of the GPU its grid occupies (an SM
        reaching 1/sm_count of the bandwidth and FLOP/s): time ÷ occupancy, kernel by kernel."""
        share = {o.kernel: o.fraction for o in self.occupancy if o.fraction}
        return sum(k.time_s / share.get(k.name, 1.0) for k in self.kernels)

    @property
    def speedup_vs_standard(self) -> float:
        return self.baseline_time_s / self.time_s

    @property
    def traffic_ratio_vs_standard(self) -> float:
        """Standard's HBM bytes over this algorithm's: how many times less it moves."""
        return self.baseline_hbm_bytes / self.hbm_bytes


@dataclass(frozen=True, slots=True)
class Theorem2:
    """The paper's Theorem 2 leading terms per head, in elements, constants ignored."""

    sram_elements: int
    standard_elements: float
    """Θ(Nd + N²): here N·d + N·N_kv."""
    flash_elements: float
    """Θ(N²d²/M): here N·N_kv·d²/M."""

    @property
    def ratio(self) -> float:
        return self.standard_elements / self.flash_elements


@dataclass(frozen=True, slots=True)
class Comparison:
    """Everything `iosim compare` prints; `to_dict()` is the stable JSON."""

    workload: Workload
    hardware: Hardware
    requested_gpu: str
    gpu_note: str | None
    roofs: Roofs
    sram_bytes: int
    sram_source: str
    theorem2: Theorem2
    algorithms: tuple[AlgorithmEstimate, ...]

    @property
    def score_matrix_bytes_per_head(self) -> int:
        """One N×N matrix (S or P) of one head in the workload's dtype."""
        return self.workload.n * self.workload.seq_kv * self.workload.element_bytes

    @property
    def compulsory_hbm_bytes(self) -> int:
        """Any exact forward: read Q, K, V once (K, V per KV head), write O once."""
        w = self.workload
        q_o = 2 * w.batch * w.heads * w.n * w.d
        k_v = 2 * w.batch * w.heads_kv * w.seq_kv * w.d
        return (q_o + k_v) * w.element_bytes

    def algorithm(self, name: str) -> AlgorithmEstimate:
        for a in self.algorithms:
            if a.name == name:
                return a
        raise KeyError(name)

    def to_records(self) -> list[dict[str, Any]]:
        """One flat row per (algorithm, kernel), for pandas.DataFrame(...)."""
        return [{"algorithm": a.name, **_kernel_dict(k)} for a in self.algorithms for k in a.kernels]

    def term_records(self) -> list[dict[str, Any]]:
        """One flat row per traffic term."""
        return [{"algorithm": a.name, **_term_dict(t)} for a in self.algorithms for t in a.traffic]

    def to_dict(self) -> dict[str, Any]:
        w, hw = self.workload, self.hardware
        return {
            "schema": SCHEMA,
            "iosim_version": __version__,
            "hardware": {
                "name": hw.name,
                "display_name": hw.display_name,
                "requested": self.requested_gpu,
                "path": hw.path,
                "profile": self.roofs.profile,
                "hbm_bandwidth_bytes_per_s": self.roofs.hbm_bandwidth_bytes_per_s,
                "matmul_peak_flops_per_s": self.roofs.matmul_flops_per_s,
                "vector_peak_flops_per_s": self.roofs.vector_flops_per_s,
                "hbm_capacity_bytes": hw.hbm_capacity_bytes,
                "notes": [n for n in (self.gpu_note, *self.roofs.notes) if n],
            },
            "workload": {
                "batch": w.batch, "heads": w.heads, "kv_heads": w.heads_kv, "n": w.n,
                "n_kv": w.seq_kv, "d": w.d, "dtype": w.dtype, "element_bytes": w.element_bytes,
                "causal": w.causal, "pass": w.pass_, "unfused": list(w.unfused),
                "sparsity": w.sparsity,
            },
            "sram": {"bytes": self.sram_bytes, "elements": self.sram_bytes // w.element_bytes,
                     "source": self.sram_source},
            "theorem2": {
                "sram_elements": self.theorem2.sram_elements,
                "standard_leading_elements": self.theorem2.standard_elements,
                "flash_leading_elements": self.theorem2.flash_elements,
                "ratio": self.theorem2.ratio,
            },
            "score_matrix_bytes_per_head": self.score_matrix_bytes_per_head,
            "compulsory_hbm_bytes": self.compulsory_hbm_bytes,
            "algorithms": [_algorithm_dict(a) for a in self.algorithms],
        }


def _kernel_dict(k: KernelEstimate) -> dict[str, Any]:
    return {
        "kernel": k.name, "label": k.label, "kind": k.kind,
        "hbm_read_bytes": k.hbm_read_bytes, "hbm_write_bytes": k.hbm_write_bytes,
        "hbm_bytes": k.hbm_bytes, "flops": k.flops, "matmul_flops": k.matmul_flops,
        "elementwise_flops": k.elementwise_flops,
        "intensity_flops_per_byte": k.intensity_flops_per_byte,
        "memory_time_s": k.memory_time_s, "compute_time_s": k.compute_time_s,
        "efficiency": k.efficiency, "time_s": k.time_s, "bound": k.bound,
        "dram_bytes_on_roof": k.dram_bytes,
    }


def _term_dict(t: Any) -> dict[str, Any]:
    return {"kernel": t.kernel, "tensor": t.tensor, "category": t.category, "op": t.op,
            "elements": t.elements, "element_bytes": t.element_bytes, "bytes": t.bytes,
            "cite": t.cite}


def _algorithm_dict(a: AlgorithmEstimate) -> dict[str, Any]:
    tiling = None if a.tiling is None else {
        "block_q": a.tiling.block_q, "block_kv": a.tiling.block_kv, "rule": a.tiling.rule,
        "splits": a.tiling.splits, "splits_rule": a.tiling.splits_rule}
    return {
        "name": a.name,
        "title": a.title,
        "tiling": tiling,
        "hbm_read_bytes": a.hbm_read_bytes,
        "hbm_write_bytes": a.hbm_write_bytes,
        "hbm_bytes": a.hbm_bytes,
        "flops": a.flops,
        "matmul_flops": a.matmul_flops,
        "elementwise_flops": a.elementwise_flops,
        "flops_fa_convention": a.convention_flops,
        "time_s": a.time_s,
        "bound": a.bound,
        "speedup_vs_standard": a.speedup_vs_standard,
        "traffic_ratio_vs_standard": a.traffic_ratio_vs_standard,
        "footprint": {
            "io_bytes": a.footprint.io_bytes,
            "extra_bytes": a.footprint.extra_bytes,
            "extra": dict(a.footprint.extra),
            "total_bytes": a.footprint.total_bytes,
            "fits_in_hbm": a.footprint.fits,
            "saved_for_backward": dict(a.footprint.saved),
        },
        "occupancy": [{"kernel": o.kernel, "programs": o.programs, "sm_count": o.sm_count,
                       "fraction": o.fraction, "waves": o.waves} for o in a.occupancy],
        "occupancy_time_s": a.occupancy_time_s,
        "kernels": [_kernel_dict(k) for k in a.kernels],
        "bytes_by_tensor": a.traffic.by_category(),
        "terms": [_term_dict(t) for t in a.traffic],
        "dram_estimate": None if a.dram is None else _dram_dict(a.dram),
    }


def _dram_dict(e: DramEstimate) -> dict[str, Any]:
    return {
        "model": e.model, "l2_bytes": e.l2_bytes, "concurrent_programs": e.concurrent_programs,
        "read_bytes": e.read_bytes, "write_bytes": e.write_bytes, "bytes": e.bytes,
        "l2_oblivious_bytes": e.oblivious_bytes,
        "terms": [{"kernel": t.kernel, "tensor": t.tensor, "op": t.op, "bytes": t.bytes,
                   "l2_oblivious_bytes": t.oblivious_bytes, "note": t.note} for t in e.terms],
    }


# ---------------------------------------------------------------------------------------------


def parse_sram(sram: str | int) -> int:
    """--sram as bytes: a size such as 192KiB, or a whole number of bytes."""
    try:
        value = parse_quantity(sram, "bytes")
    except ValueError as exc:
        raise IosimError(f"--sram: {exc}") from None
    if value < 1 or value != int(value):
        raise IosimError(f"--sram must be a positive whole number of bytes, got {sram!r}")
    return int(value)


def sram_budget(
    hardware: Hardware, element_bytes: int, *, sram: str | int | None = None,
    sram_elements: int | None = None,
) -> tuple[int, str]:
    """(bytes, where they came from): --sram, --sram-elements, or the GPU's sram_per_block."""
    if sram is not None and sram_elements is not None:
        raise IosimError("give --sram or --sram-elements, not both")
    if sram_elements is not None:
        if isinstance(sram_elements, bool) or not isinstance(sram_elements, int) or sram_elements < 1:
            raise IosimError(f"--sram-elements must be a whole number of at least 1, got {sram_elements!r}")
        return sram_elements * element_bytes, f"--sram-elements {sram_elements}"
    if sram is not None:
        return parse_sram(sram), f"--sram {sram}"
    kib = hardware.sram_per_block_bytes / 1024
    return int(hardware.sram_per_block_bytes), f"sram_per_block of {hardware.name} ({kib:g} KiB)"


def _dram_or_none(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                  hardware: Hardware) -> DramEstimate | None:
    if hardware.l2_bytes is None or hardware.sm_count is None:
        return None
    return dram_estimate(kernels, workload, tiling, hardware)


def tiling_for(
    algorithm: Algorithm, workload: Workload, sram_bytes: int, sram_source: str, *,
    block_q: int | None = None, block_kv: int | None = None,
) -> Tiling | None:
    if not algorithm.tiled:
        return None
    return make_tiling(workload, sram_bytes, sram_source, block_q=block_q, block_kv=block_kv,
                       outer=algorithm.outer)


def default_algorithms(workload: Workload) -> tuple[str, ...]:
    """standard, flash1, flash2 — and splitkv for a decoding step (N = 1, forward)."""
    if workload.n == 1 and workload.pass_ == "fwd":
        return (*DEFAULT_ALGORITHMS, "splitkv")
    return DEFAULT_ALGORITHMS


def compare(
    workload: Workload,
    hardware: Hardware | str,
    *,
    algorithms: Sequence[str] | None = None,
    block_q: int | None = None,
    block_kv: int | None = None,
    sram: str | int | None = None,
    sram_elements: int | None = None,
    profile: Profile = "spec",
    splits: int | None = None,
) -> Comparison:
    """Count, place on the roofline and time every requested algorithm.

    Default algorithms: standard, flash1, flash2, and splitkv for a decoding step (N = 1,
    forward). `hardware` is a Hardware, a shipped GPU name or alias, or a path to a YAML file.
    Speed-ups and traffic ratios are against standard attention, computed even when not listed.
    `splits` is splitkv's number of KV splits (default: FlashAttention-2's heuristic).
    """
    if isinstance(hardware, str):
        resolved = resolve_hardware(hardware)
        hw, requested, note = resolved.hardware, hardware, resolved.note
    else:
        hw, requested, note = hardware, hardware.name, None
    names = list(dict.fromkeys(
        a.strip().lower() for a in (algorithms or default_algorithms(workload))))
    if not names or any(not n for n in names):
        raise IosimError(f"--algo needs a comma-separated list of {', '.join(ALGORITHMS)}")
    chosen = [get_algorithm(n) for n in names]
    if splits is not None and "splitkv" not in names:
        raise IosimError("--splits applies to splitkv; add it to --algo "
                         "(e.g. --algo standard,flash2,splitkv)")
    roofs = roofs_for(hw, workload.dtype, profile)
    sram_bytes, sram_source = sram_budget(hw, workload.element_bytes, sram=sram, sram_elements=sram_elements)

    def estimate(algorithm: Algorithm, baseline: tuple[float, int] | None) -> AlgorithmEstimate:
        tiling = tiling_for(algorithm, workload, sram_bytes, sram_source,
                            block_q=block_q, block_kv=block_kv)
        tiling = algorithm.finish_tiling(tiling, workload, sm_count=hw.sm_count, splits=splits,
                                         blocks_given=block_q is not None or block_kv is not None)
        kernels = algorithm.kernels(workload, tiling)
        dram = _dram_or_none(kernels, workload, tiling, hw)
        if profile == "measured" and dram is None:
            raise IosimError(f"the measured profile charges DRAM bytes, which need l2_size and "
                             f"sm_count in {hw.path}")
        on_roof = None if profile != "measured" or dram is None else {
            k.name: dram.of_kernel(k.name).bytes for k in kernels}
        kernel_estimates = estimate_kernels(kernels, workload, tiling, roofs, dram_bytes=on_roof)
        time_s = sum(k.time_s for k in kernel_estimates)
        hbm = sum(k.hbm_bytes for k in kernel_estimates)
        base_time, base_bytes = baseline if baseline is not None else (time_s, hbm)
        saved, fixed = kept_for_backward(algorithm, workload)
        dims = Dims.of(workload, tiling)
        occupancy = tuple(
            Occupancy(k.name, k.label, int(kernel_programs(k, dims)), hw.sm_count)
            for k in kernels if k.grid is not None)
        return AlgorithmEstimate(
            algorithm.name, algorithm.title, tiling, kernel_estimates,
            footprint(kernels, workload, hw, saved=saved, tiling=tiling, fixed=fixed),
            base_time, base_bytes, occupancy,
            convention_flops(workload, recompute=algorithm.tiled), dram)

    standard = estimate(ALGORITHMS["standard"], None)
    baseline = (standard.time_s, standard.hbm_bytes)
    results = tuple(standard if a.name == "standard" else estimate(a, baseline) for a in chosen)

    m = sram_bytes // workload.element_bytes
    n, n_kv, d = workload.n, workload.seq_kv, workload.d
    theorem2 = Theorem2(m, float(n * d + n * n_kv), n * n_kv * d * d / m)
    return Comparison(workload, hw, requested, note, roofs, sram_bytes, sram_source, theorem2,
                      results)
