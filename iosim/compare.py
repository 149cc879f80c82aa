"""`compare`: every algorithm's traffic, FLOPs and roofline time for one workload on one GPU."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from iosim._version import __version__
from iosim.algorithms import ALGORITHMS, Algorithm, get_algorithm
from iosim.algorithms.loopnest import KV_HEAD_TENSORS, Access, Kernel, element_bytes
from iosim.errors import IosimError
from iosim.hardware import Hardware, resolve_hardware
from iosim.l2 import DramEstimate, dram_estimate
from iosim.roofline import KernelEstimate, Profile, Roofs, estimate_kernels, roofs_for
from iosim.traffic import Traffic
from iosim.units import parse_quantity
from iosim.workload import Tiling, Workload, make_tiling

SCHEMA = "iosim.compare/1"


@dataclass(frozen=True, slots=True)
class Footprint:
    """HBM an algorithm holds: inputs and outputs, plus what it adds on top of them."""

    io_bytes: int
    """Q, K, V (K and V sized by the KV heads) and O."""
    extra: tuple[tuple[str, int], ...]
    """(tensor, bytes) held beyond the inputs and outputs at the algorithm's peak."""
    capacity_bytes: float

    @property
    def extra_bytes(self) -> int:
        return sum(b for _, b in self.extra)

    @property
    def total_bytes(self) -> int:
        return self.io_bytes + self.extra_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes


def _tensor_bytes(access: Access, workload: Workload) -> int:
    """Size in HBM of the whole tensor an access touches."""
    length = workload.n if access.rows == "q" else workload.seq_kv
    width = {"d": workload.d, "1": 1, "kv": workload.seq_kv}[access.cols]
    per_kv = access.per_kv_head or access.tensor in KV_HEAD_TENSORS
    instances = workload.batch * (workload.heads_kv if per_kv else workload.heads)
    return int(length * width * instances * element_bytes(access.element, workload.element_bytes))


def footprint(kernels: Sequence[Kernel], workload: Workload, hardware: Hardware) -> Footprint:
    """Inputs/outputs plus the N×N matrices alive at once and the statistics kept in HBM.

    N×N matrices: the most that any one kernel touches (standard's softmax reads S while it
    writes P, so both are alive). Statistics: every per-row fp32 tensor the algorithm writes.
    """
    io = sum(_tensor_bytes(Access(t, "read", "prologue", "q", "d", ""), workload)
             for t in ("Q", "O"))
    io += sum(_tensor_bytes(Access(t, "read", "prologue", "kv", "d", ""), workload)
              for t in ("K", "V"))
    peak: dict[str, int] = {}
    for kernel in kernels:
        matrices = {a.tensor: _tensor_bytes(a, workload) for a in kernel.accesses if a.cols == "kv"}
        if sum(matrices.values()) > sum(peak.values()):
            peak = matrices
    stats = {a.tensor: _tensor_bytes(a, workload) for k in kernels for a in k.accesses
             if a.cols == "1" and a.op == "write"}
    return Footprint(io, tuple({**peak, **stats}.items()), hardware.hbm_capacity_bytes)


@dataclass(frozen=True, slots=True)
class AlgorithmEstimate:
    """One algorithm: its kernels on the roofline, its traffic terms and totals."""

    name: str
    title: str
    tiling: Tiling | None
    kernels: tuple[KernelEstimate, ...]
    footprint: Footprint
    baseline_time_s: float
    baseline_hbm_bytes: int
    dram: DramEstimate | None = None
    """The L2-aware DRAM estimate (l2.py); None when the GPU's YAML lacks l2_size or sm_count."""

    @property
    def traffic(self) -> Traffic:
        return Traffic(tuple(t for k in self.kernels for t in k.traffic))

    @property
    def hbm_read_bytes(self) -> int:
        return self.traffic.read_bytes

    @property
    def hbm_write_bytes(self) -> int:
        return self.traffic.write_bytes

    @property
    def hbm_bytes(self) -> int:
        return self.traffic.bytes

    @property
    def matmul_flops(self) -> int:
        return sum(k.matmul_flops for k in self.kernels)

    @property
    def elementwise_flops(self) -> int:
        return sum(k.elementwise_flops for k in self.kernels)

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.elementwise_flops

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    @property
    def bound(self) -> str:
        """The bound of the kernels that hold most of the time."""
        memory = sum(k.time_s for k in self.kernels if k.bound == "memory")
        return "memory" if memory >= self.time_s - memory else "compute"

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
        "block_q": a.tiling.block_q, "block_kv": a.tiling.block_kv, "rule": a.tiling.rule}
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
        },
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
        try:
            value = parse_quantity(sram, "bytes")
        except ValueError as exc:
            raise IosimError(f"--sram: {exc}") from None
        if value < 1 or value != int(value):
            raise IosimError(f"--sram must be a positive whole number of bytes, got {sram!r}")
        return int(value), f"--sram {sram}"
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
) -> Comparison:
    """Count, place on the roofline and time every requested algorithm (default: all).

    `hardware` is a Hardware, a shipped GPU name or alias, or a path to a YAML file.
    Speed-ups and traffic ratios are against standard attention, computed even when not listed.
    """
    if isinstance(hardware, str):
        resolved = resolve_hardware(hardware)
        hw, requested, note = resolved.hardware, hardware, resolved.note
    else:
        hw, requested, note = hardware, hardware.name, None
    names = list(dict.fromkeys(a.strip().lower() for a in (algorithms or ALGORITHMS)))
    if not names or any(not n for n in names):
        raise IosimError(f"--algo needs a comma-separated list of {', '.join(ALGORITHMS)}")
    chosen = [get_algorithm(n) for n in names]
    roofs = roofs_for(hw, workload.dtype, profile)
    sram_bytes, sram_source = sram_budget(hw, workload.element_bytes, sram=sram, sram_elements=sram_elements)

    def estimate(algorithm: Algorithm, baseline: tuple[float, int] | None) -> AlgorithmEstimate:
        tiling = tiling_for(algorithm, workload, sram_bytes, sram_source,
                            block_q=block_q, block_kv=block_kv)
        kernels = algorithm.kernels(workload)
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
        return AlgorithmEstimate(algorithm.name, algorithm.title, tiling, kernel_estimates,
                                 footprint(kernels, workload, hw), base_time, base_bytes, dram)

    standard = estimate(ALGORITHMS["standard"], None)
    baseline = (standard.time_s, standard.hbm_bytes)
    results = tuple(standard if a.name == "standard" else estimate(a, baseline) for a in chosen)

    m = sram_bytes // workload.element_bytes
    n, n_kv, d = workload.n, workload.seq_kv, workload.d
    theorem2 = Theorem2(m, float(n * d + n * n_kv), n * n_kv * d * d / m)
    return Comparison(workload, hw, requested, note, roofs, sram_bytes, sram_source, theorem2,
                      results)
