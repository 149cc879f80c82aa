"""A measured sweep's DRAM bytes on arrays: what sweep_measured.py charges split-KV's split and
combine kernels, and standard attention's whole-tensor kernels, at many points at once, in
place of estimates/l2.py dram_estimate called point by point (issue 14: 75 % of `sweep
--splits auto`'s CPU time).

Split-KV's bytes are split_choice_grid.dram_terms_at's, the function `--splits auto`'s choice
already times every count with (the same term functions as dram_estimate: shared_prefix_dram's
split_term_bytes, launch_order_dram's straddle_rereads, query_compulsory and wave_miss_share,
l2_model.hit_fraction; tests/test_split_choice_grid.py holds them to dram_estimate to the last
bit), at each point's own tiling (the sweep's blocks, split count and programs per SM), over
split_choice_grid.vectorised's points (no window, packed sequences, shared prefix or block
sparsity) whose kernel list is the split kernel and, with several splits, the combine. A list
of whole-tensor kernels (standard attention's) is whole_tensor_dram.py's. Both then go through
paged_dram.paged_roof_bytes on the arrays (a paged cache's K/V reads over its efficiency, term
by term in the same order: the same doubles). Every other list keeps the per-point estimate.
Points are grouped by what one call takes as one value (the kind, the kernel list, the GPU,
the element sizes and the packing); tests/test_sweep_split_dram.py holds every field of a
sweep equal with the arrays on and off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms.loopnest import Kernel
from iosim.analysis import whole_tensor_dram
from iosim.analysis.split_choice_grid import dram_terms_at, vectorised, workload_arrays
from iosim.estimates.combine import KERNEL as COMBINE_KERNEL
from iosim.estimates.paged_dram import PageEfficiency, paged_roof_bytes
from iosim.estimates.shared_prefix_dram import SPLITKV_KERNEL, split_reads_once
from iosim.inputs.hardware import Hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record

ENABLED = True
"""Whether measured sweeps take this path (tests switch it off to compare with dram_estimate
point by point)."""


def kind(kernels: Sequence[Kernel], workload: Workload) -> str | None:
    """How this point's list is counted on arrays: "split" (dram_terms_at: split-KV's forward
    list, the split kernel, then the combine with several splits, over one dense sequence per
    request), "whole" (whole_tensor_dram: standard attention's kernels), else None (per
    point)."""
    names = tuple(k.name for k in kernels)
    if names in ((SPLITKV_KERNEL,), (SPLITKV_KERNEL, COMBINE_KERNEL)):
        split = (vectorised(workload) and split_reads_once(kernels[0], workload)
                 and all(k.loop is None for k in kernels[1:]))
        return "split" if split else None
    return "whole" if whole_tensor_dram.covered(kernels, workload) else None


class SplitPoint(Record, frozen=False):
    """One covered point of a chunk: where it goes, its workload and the Tiling the per-point
    estimate would be given (sweep_measured._tiling)."""

    flat: int
    workload: Workload
    tiling: Tiling | None
    """None for an untiled algorithm (standard attention)."""


def charged_bytes(groups: dict[tuple[Any, ...], list[SplitPoint]],
                  kernel_lists: Sequence[tuple[Kernel, ...]], hardware: Sequence[Hardware],
                  paging: dict[int, PageEfficiency]) -> dict[int, list[int]]:
    """Each covered point's charged bytes per kernel (paged_roof_bytes of its DRAM terms), by
    flat index. `groups`: the points by group_key."""
    out: dict[int, list[int]] = {}
    for key, points in groups.items():
        how, li, g = key[0], key[1], key[2]
        kernels, hw = kernel_lists[li], hardware[g]
        if hw.l2_bytes is None or hw.sm_count is None:  # the measured profile refuses it first
            continue
        terms = _split_terms(kernels, points, hw) if how == "split" else _whole_terms(
            kernels, points, hw.l2_bytes)
        columns = [np.asarray(paged_roof_bytes(k, [(x.tensor, b) for x, b in zip(
            k.accesses, terms[k.name], strict=True)], paging.get(g))).tolist() for k in kernels]
        for i, p in enumerate(points):
            out[p.flat] = [int(column[i]) for column in columns]
    return out


def group_key(how: str, li: int, g: int, workload: Workload) -> tuple[Any, ...]:
    """What dram_terms_at and whole_tensor_terms take as one value for all their points."""
    return (how, li, g, workload.element_bytes, workload.output_element_bytes,
            workload.packing, workload.latent_kv)


def _split_terms(kernels: Sequence[Kernel], points: Sequence[SplitPoint],
                 hw: Hardware) -> dict[str, list[np.ndarray]]:
    tilings = [p.tiling for p in points]
    assert all(t is not None for t in tilings)
    terms = dram_terms_at(kernels, [p.workload for p in points],
                          np.array([t.block_q for t in tilings if t]),
                          np.array([t.block_kv for t in tilings if t]),
                          np.array([t.programs_per_sm for t in tilings if t]),
                          np.array([t.splits for t in tilings if t]), hw)
    assert terms is not None
    return terms


def _whole_terms(kernels: Sequence[Kernel], points: Sequence[SplitPoint],
                 capacity: float) -> dict[str, list[np.ndarray]]:
    workloads = [p.workload for p in points]
    terms = whole_tensor_dram.whole_tensor_terms(kernels, workload_arrays(workloads),
                                                 workloads[0].packing, capacity)
    shape = (len(points), 1)
    return {name: [np.broadcast_to(np.asarray(b, dtype=np.int64), shape).reshape(-1)
                   for b in charged] for name, charged in terms.items()}
