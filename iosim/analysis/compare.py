"""`compare`: every algorithm's traffic, FLOPs and roofline time for one workload on one GPU.

The orchestration only: the request is checked by requests.py, tiles are sized by
inputs/tiling.py and each algorithm's `finish_tiling`, kernels are costed by
estimates/roofline.py, the footprint by estimates/footprint.py; the result types are
comparison.py and their JSON compare_records.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms import ALGORITHMS, Algorithm
from iosim.algorithms.loopnest import Dims, Kernel, kernel_programs
from iosim.analysis.comparison import AlgorithmEstimate, Comparison, Theorem2
from iosim.analysis.requests import check_splits, choose_algorithms, default_algorithms, sram_budget
from iosim.errors import IosimError
from iosim.estimates.footprint import footprint, kept_for_backward
from iosim.estimates.l2 import DramEstimate, dram_estimate
from iosim.estimates.roofline import Profile, estimate_kernels, roofs_for, total_cost
from iosim.estimates.training import (
    Occupancy,
    convention_flops,
)
from iosim.inputs.hardware import Hardware, resolve_hardware
from iosim.inputs.tiling import Tiling, make_tiling
from iosim.inputs.workload import Workload

__all__ = ["compare", "default_algorithms", "tiling_for"]


def _dram_or_none(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                  hardware: Hardware) -> DramEstimate | None:
    if hardware.l2_bytes is None or hardware.sm_count is None:
        return None
    return dram_estimate(kernels, workload, tiling, hardware)


def tiling_for(
    algorithm: Algorithm, workload: Workload, sram_bytes: int, sram_source: str, *,
    block_q: int | None = None, block_kv: int | None = None,
) -> Tiling | None:
    """The forward's blocks of a tiled algorithm (make_tiling for its loop order), else None."""
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
    splits: int | None = None,
) -> Comparison:
    """Count, place on the roofline and time every requested algorithm; returns a Comparison.

    Default algorithms: standard, flash1, flash2, and splitkv for a decoding step (N = 1,
    forward). `hardware` is a Hardware, a shipped GPU name or alias, or a path to a YAML file.
    `block_q`/`block_kv` are B_r/B_c in rows (default: Alg. 1 line 1), `sram` a size ("192KiB"
    or bytes) and `sram_elements` elements, replacing the GPU's sram_per_block. Speed-ups and
    traffic ratios are against standard attention, computed even when not listed. `splits` is
    splitkv's number of KV splits (default: FlashAttention-2's heuristic).
    """
    if isinstance(hardware, str):
        resolved = resolve_hardware(hardware)
        hw, requested, note = resolved.hardware, hardware, resolved.note
    else:
        hw, requested, note = hardware, hardware.name, None
    check_splits([splits])
    chosen = choose_algorithms(algorithms or default_algorithms(workload),
                               splits_given=splits is not None)
    roofs = roofs_for(hw, workload.dtype, profile)
    sram_bytes, sram_source = sram_budget(hw, workload.element_bytes, sram=sram,
                                          sram_elements=sram_elements)

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
        totals = total_cost(kernel_estimates)
        time_s, hbm = float(totals.time_s), int(totals.hbm_read_bytes + totals.hbm_write_bytes)
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
    n, n_kv, d = workload.n, workload.n_kv, workload.d
    theorem2 = Theorem2(m, float(n * d + n * n_kv), n * n_kv * d * d / m)
    return Comparison(workload, hw, requested, note, roofs, sram_bytes, sram_source, theorem2,
                      results)
