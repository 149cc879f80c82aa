"""What the decoding time model reads of one algorithm's kernels, without the rest of `compare`.

The model (analysis/decode_kernel_time.py kernel_times) reads, per kernel, its loads and stores
(the L2-oblivious count), its matmul and elementwise FLOPs, its DRAM estimate and its launch
grid. `compare` computes those and much besides (the standard baseline every call, each
kernel's roofline time, the HBM footprint, the convention FLOPs), about seven times the cost.
`sweep --splits auto` weighs a few split counts at every point of a grid
(split_choice.best_split_count), so it takes them here instead, from the same functions compare
calls on the same inputs: the tiling compare runs at (compare.tiling_for and
finish_tiling: the forward blocks once, completed at each split count), the algorithm's
kernels, the closed form's per-kernel sums (closedform.kernel_sums; bytes by
roofline.kernel_read_write and FLOPs by kernel_flops, as kernel_cost counts them), the L2 model
(compare.dram_or_none) and the grid (kernel_programs, kernel_programs_per_sm).
tests/test_decode_counts_lean.py holds every field equal to compare's on random workloads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.closedform import Dims, kernel_flops, kernel_programs, kernel_sums
from iosim.analysis.compare import dram_or_none, finish_tiling, tiling_for
from iosim.analysis.requests import sram_budget
from iosim.estimates.combine import KERNEL as COMBINE_KERNEL
from iosim.estimates.l2 import dram_estimate
from iosim.estimates.l2_model import DramEstimate
from iosim.estimates.roofline import kernel_programs_per_sm, kernel_read_write
from iosim.estimates.shared_prefix_dram import SPLITKV_KERNEL, split_reads_once
from iosim.estimates.training import Occupancy
from iosim.inputs.hardware import Hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record, replace


class KernelCounts(Record):
    """One kernel's loads and stores and FLOPs (KernelEstimate's fields of the same names)."""

    name: str
    hbm_bytes: int
    matmul_flops: float
    elementwise_flops: float


class LeanEstimate(Record):
    """The fields of compare's AlgorithmEstimate that the decoding time model reads."""

    tiling: Tiling | None
    kernels: tuple[KernelCounts, ...]
    dram: DramEstimate | None
    occupancy: tuple[Occupancy, ...]


def forward_tiling(algorithm: str, workload: Workload, hardware: Hardware, *,
                   block_q: int | None = None, block_kv: int | None = None,
                   sram: str | int | None = None, sram_elements: int | None = None,
                   tiles: str = "code", **_: Any) -> Tiling | None:
    """compare's forward blocks of `algorithm` (tiling_for: no split count changes them); the
    other compare options (profile) change none of them: accepted and ignored."""
    sram_bytes, sram_source = sram_budget(hardware, workload.element_bytes, sram=sram,
                                          sram_elements=sram_elements)
    return tiling_for(ALGORITHMS[algorithm], workload, sram_bytes, sram_source, block_q=block_q,
                      block_kv=block_kv, hardware=hardware, tile_rule=tiles)


def lean_estimate(algorithm: str, workload: Workload, hardware: Hardware,
                  forward: Tiling | None, *, splits: int | None, blocks_given: bool,
                  tiles: str = "code") -> LeanEstimate:
    """compare(workload, hardware, algorithms=[algorithm], splits=splits, ...)'s estimate of
    `algorithm`, only the fields LeanEstimate keeps, from its forward blocks `forward`
    (forward_tiling's, with the same options)."""
    alg = ALGORITHMS[algorithm]
    tiling = finish_tiling(alg, forward, workload, hardware, tiles=tiles, splits=splits,
                           blocks_given=blocks_given)
    kernels = alg.kernels(workload, tiling)
    dims = Dims.of(workload, tiling)
    dram = dram_or_none(kernels, workload, tiling, hardware)
    # the loads and stores: the DRAM terms carry the closed form's count of each (one term per
    # access), else the closed form's sums as kernel_cost adds them
    carried: dict[str, int] = {}
    for t in dram.terms if dram is not None else ():
        carried[t.kernel] = carried.get(t.kernel, 0) + t.oblivious_bytes
    counts = []
    for k in kernels:
        sums = kernel_sums(k, dims)
        moved = carried[k.name] if dram is not None else sum(kernel_read_write(k, dims, sums))
        matmul, elementwise = kernel_flops(k, dims, sums)
        counts.append(KernelCounts(k.name, int(moved), float(matmul), float(elementwise)))
    occupancy = tuple(Occupancy(k.name, k.label, int(kernel_programs(k, dims)),
                                hardware.sm_count, kernel_programs_per_sm(k, tiling))
                      for k in kernels if k.grid is not None)
    return LeanEstimate(tiling, tuple(counts), dram, occupancy)


def split_dram_at(workload: Workload, hardware: Hardware, tiling: Tiling,
                  per_sm: int) -> DramEstimate | None:
    """The L2 model's DRAM estimate of split-KV's kernels at `tiling`, `per_sm` programs per SM
    (the compiled split kernel's, where its registers bind before the tiling's shared memory:
    decode_time.Tiles.per_sm) in place of the tiling's; None where compare gives none."""
    if hardware.l2_bytes is None or hardware.sm_count is None:
        return None
    kernels = ALGORITHMS["splitkv"].kernels(workload, tiling)
    return dram_estimate(kernels, workload, tiling, hardware, programs_per_sm=per_sm)


def split_store_bytes(workload: Workload, hardware: Hardware, forward: Tiling | None,
                      counts: Sequence[int], *, tiles: str = "code"
                      ) -> tuple[np.ndarray, np.ndarray]:
    """At each of `counts` (every one above 1): the split kernel's stores (bytes) where the L2
    model charges them at their L2-oblivious count (split_terms: a split kernel over one
    contiguous sequence per request; zeros elsewhere), and the combine kernel's loads and
    stores (its L2-oblivious count). The closed form on an array of counts, as a sweep
    evaluates one kernel list for a class of counts: every count above one has the kernel list
    of two (SplitKV.split_class), its sums taken at each count."""
    alg = ALGORITHMS["splitkv"]
    tiling = finish_tiling(alg, forward, workload, hardware, tiles=tiles, splits=2,
                           blocks_given=True)
    kernels = {k.name: k for k in alg.kernels(workload, tiling)}
    dims = replace(Dims.of(workload, tiling), splits=np.asarray(counts, dtype=np.int64))

    def per_count(total: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(total, dtype=np.float64), (len(counts),))

    split = kernels[SPLITKV_KERNEL]
    stores = per_count(kernel_read_write(split, dims)[1]) if split_reads_once(split, workload) \
        else np.zeros(len(counts))
    combine = kernels.get(COMBINE_KERNEL)
    return stores, (np.zeros(len(counts)) if combine is None
                    else per_count(sum(kernel_read_write(combine, dims))))
