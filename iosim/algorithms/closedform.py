"""The closed form of loopnest.py's loop nests: exact element counts as sums over the loops.

`closed_form` gives every (kernel, tensor, op) of an algorithm as a named Term; `Dims` holds the
numbers a count depends on, each a Python int or a numpy array, so that a sweep evaluates a whole
grid without a Python loop per point. The sums over visited block pairs are blocks.py's (causal,
split), blockmask.py's (block-sparse) and masks.py's (windows, packed sequences); the tile walk
(tilewalk.py) reads the same loop nests literally, and tests hold the two equal term by term.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms.blockmask import sparse_block_sums, split_work_programs, split_work_rows
from iosim.algorithms.blocks import BlockSums, block_sums, cdiv
from iosim.algorithms.loopnest import (
    Access,
    Kernel,
    Segment,
    element_bytes,
    row_width,
)
from iosim.algorithms.masks import grid_blocks, longest_program, mask_sums
from iosim.algorithms.masks import split_work_rows as mask_split_rows
from iosim.algorithms.packing import packed_problem
from iosim.algorithms.traffic import Term, Traffic
from iosim.errors import IosimError, arg
from iosim.inputs.api_values import check_instance
from iosim.inputs.excerpts import excerpt
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import WORKLOAD_EXAMPLE, Workload
from iosim.record import Record, replace


class Dims(Record):
    """The numbers a count depends on; each a Python int or a numpy array (sweeps)."""

    n_q: Any
    n_kv: Any
    d: Any
    batch: Any
    heads: Any
    kv_heads: Any
    element_bytes: Any
    block_q: Any
    block_kv: Any
    causal: Any
    splits: Any = 1
    """KV splits of split-KV kernels (Tiling.splits)."""
    sparsity_num: Any = 1
    sparsity_den: Any = 1
    """The block-sparse fraction s = num/den of non-zero blocks (1/1: dense)."""
    bwd_block_q: Any = None
    bwd_block_kv: Any = None
    """Block sizes of the kernels that tile with the backward's (None: block_q, block_kv)."""
    d_v: Any = None
    """V's head dim (None: d)."""
    out_bytes: Any = None
    """Bytes per element of O (None: element_bytes)."""
    page_size: Any = 0
    """Tokens per page of a paged KV cache (0: contiguous)."""

    window: Any = None
    """Sliding window W (None, or 0 in a sweep's array: none); masks.py."""
    seqlens: tuple[int, ...] | None = None
    """Packed sequence lengths (None: one sequence); masks.py."""
    packing: str = "varlen"
    """Workload.packing: varlen blocks per sequence, or one document-masked sequence."""

    @property
    def dv(self) -> Any:
        """V's head dim d_v (d where not given)."""
        return self.d if self.d_v is None else self.d_v

    @property
    def packed(self) -> bool:
        """Packed sequences (a tuple of lengths)."""
        return isinstance(self.seqlens, tuple)

    @property
    def varlen(self) -> bool:
        """Packed sequences run as FA2 varlen: a grid of ⌈max_seqlen/B⌉ blocks per sequence."""
        return self.packed and self.packing == "varlen"

    @property
    def masked(self) -> bool:
        """A window or packed sequences at some point: block sums from masks.py."""
        if self.packed:
            return True
        window = self.window
        if isinstance(window, np.ndarray):
            if window.dtype == object:  # Dims built field by field from ones without a window
                return any(v is not None and v > 0 for v in window.ravel().tolist())
            return bool((window > 0).any())
        return window is not None and window > 0

    @classmethod
    def of(cls, workload: Workload, tiling: Tiling | None) -> Dims:
        """One workload's dims: its sizes and the tiling's blocks (whole tensors for an untiled algorithm)."""
        num, den = workload.sparsity_fraction
        return cls(workload.n, workload.n_kv, workload.d, workload.batch, workload.heads,
                   workload.kv_heads, workload.element_bytes,
                   tiling.block_q if tiling else workload.n,
                   tiling.block_kv if tiling else workload.n_kv, workload.causal,
                   tiling.splits if tiling else 1, num, den,
                   tiling.bwd_block_q if tiling else None, tiling.bwd_block_kv if tiling else None,
                   workload.d_v, workload.output_element_bytes, page_size=workload.page_size or 0,
                   window=workload.window, seqlens=workload.seqlens, packing=workload.packing)


def kernel_dims(kernel: Kernel, dims: Dims) -> Dims:
    """The dims a kernel's loops run over: its pass's block sizes, and g·n_q rows per KV head
    for a kernel that packs heads. The last answer is kept for the same two objects (records
    are immutable; closed_form and the L2 model ask it once per access of a kernel)."""
    last = _LAST_KERNEL_DIMS
    if last and last[0] is kernel and last[1] is dims:
        kept: Dims = last[2]
        return kept
    out = _kernel_dims(kernel, dims)
    _LAST_KERNEL_DIMS[:] = (kernel, dims, out)
    return out


_LAST_KERNEL_DIMS: list[Any] = []
"""kernel_dims' last (kernel, dims, answer)."""


def _kernel_dims(kernel: Kernel, dims: Dims) -> Dims:
    forward = (dims.block_q, dims.block_kv)
    blocks = pass_blocks(kernel, forward, (dims.bwd_block_q, dims.bwd_block_kv))
    if blocks is not forward:  # identity: the values may be arrays
        dims = replace(dims, block_q=blocks[0], block_kv=blocks[1])
    if not kernel.pack_heads:
        return dims
    rows, heads = packed_problem(dims.n_q, dims.heads, dims.kv_heads, True)
    return replace(dims, n_q=rows, heads=heads, causal=False)


def pass_blocks(kernel: Kernel, forward: tuple[Any, Any], backward: tuple[Any, Any]
                ) -> tuple[Any, Any]:
    """(B_r, B_c) a kernel's loops step by: its fixed tiles, else the backward's blocks for a
    kernel that tiles with them (when the algorithm sizes them apart: not None), else the
    forward's. The one rule behind kernel_dims (ints or arrays) and kernel_blocks."""
    if kernel.tile is not None:
        return kernel.tile
    if kernel.blocks == "backward" and backward[0] is not None:
        return backward
    return forward


def kernel_blocks(kernel: Kernel, tiling: Tiling | None, n_q: int, n_kv: int) -> tuple[int, int]:
    """(B_r, B_c) a kernel's loops step by for one workload: `pass_blocks` of the tiling, or
    (without a tiling) whole sequences unless the kernel fixes its tiles."""
    if tiling is None:
        return kernel.tile if kernel.tile is not None else (n_q, n_kv)
    return pass_blocks(kernel, (tiling.block_q, tiling.block_kv),
                       (tiling.bwd_block_q, tiling.bwd_block_kv))


def _is_dense(dims: Dims) -> bool:
    num, den = dims.sparsity_num, dims.sparsity_den
    return not isinstance(num, np.ndarray) and not isinstance(den, np.ndarray) and num == den


def segment_dims(dims: Dims, segment: Segment) -> Dims:
    """The dims of one segment of a ragged launch: its sizes, one request per batch entry, no
    mask (every key of a decoding step is visible)."""
    return replace(dims, n_q=segment.n_q, n_kv=segment.n_kv, batch=segment.batch, causal=False)


_Part = tuple[Kernel, Dims, BlockSums, int]
_SEGMENTS: dict[tuple[int, int], tuple[Kernel, Dims, list[_Part]]] = {}
"""The segments of recent ragged kernels with their sums, by the identity of (kernel, dims): a
count asks for them once per access (each kept entry holds its kernel and dims, so that their
ids are not reused)."""


def _segment_parts(kernel: Kernel, dims: Dims) -> list[_Part]:
    """(plain kernel, dims, sums, runs) of each length of a ragged launch: the segments (runs) of one
    (n_q, n_kv) merged into one of their summed batch (every access, FLOP and program count is
    linear in the batch: `batch × heads` instances of the same per-head count), so a batch
    of mixed lengths costs one count per length, not per run of equal ones."""
    key = (id(kernel), id(dims))
    kept = _SEGMENTS.get(key)
    if kept is not None and kept[0] is kernel and kept[1] is dims:
        return kept[2]
    plain = replace(kernel, segments=())
    batches: dict[tuple[int, int], tuple[int, int]] = {}
    for seg in kernel.segments:
        batch, runs = batches.get((seg.n_q, seg.n_kv), (0, 0))
        batches[(seg.n_q, seg.n_kv)] = (batch + seg.batch, runs + 1)
    parts = []
    for (n_q, n_kv), (batch, runs) in batches.items():
        d = segment_dims(dims, Segment(0, batch, n_q, n_kv))
        parts.append((plain, d, kernel_sums(plain, d), runs))
    if len(_SEGMENTS) >= 64:
        _SEGMENTS.pop(next(iter(_SEGMENTS)))
    _SEGMENTS[key] = (kernel, dims, parts)
    return parts


def _per_segment(kernel: Kernel, dims: Dims) -> list[tuple[Kernel, Dims]]:
    plain = replace(kernel, segments=())
    return [(plain, segment_dims(dims, s)) for s in kernel.segments]


def kernel_sums(kernel: Kernel, dims: Dims) -> BlockSums:
    """Exact sums over the block pairs a kernel visits (its pass's blocks, the causal skip, the
    block-sparse mask); ints or arrays. A ragged launch's sums add its segments'."""
    if kernel.segments:  # each run's sums (a run's sums do not depend on its batch)
        parts = [(sums, runs) for _, _, sums, runs in _segment_parts(kernel, dims)]
        return BlockSums(*(sum(p[i] * runs for p, runs in parts)
                           for i in range(len(BlockSums._fields))))
    kd = kernel_dims(kernel, dims)
    if kernel.loop is None:
        return BlockSums(1, 1, 1, kd.n_q, kd.n_kv, kd.n_q * kd.n_kv)
    if kd.masked:  # a sliding window or packed sequences (masks.py)
        return masked_sums(kd)
    sums = block_sums(kd.n_q, kd.n_kv, kd.block_q, kd.block_kv, kd.causal)
    if _is_dense(kd):
        return sums
    # Prop. 4 / Alg. 5: only the non-zero blocks of the mask (blockmask.py) are visited
    return sparse_block_sums(sums, kd.n_q, kd.n_kv, kd.block_q, kd.block_kv, kd.causal,
                             kd.sparsity_num, kd.sparsity_den)


def access_elements(access: Access, kernel: Kernel, dims: Dims, sums: BlockSums) -> Any:
    """Elements one access moves over the whole workload (a ragged launch: over its segments;
    `sums` is then ignored, each segment has its own)."""
    if kernel.segments:
        return sum(access_elements(access, k, d, sums)
                   for k, d, sums, _ in _segment_parts(kernel, dims))
    kd = kernel_dims(kernel, dims)
    if access.scale:
        return _scale_elements(access, kernel, kd, sums)
    length = kd.n_q if access.rows == "q" else kd.n_kv
    if access.per_page:
        # one entry per page each visited K/V tile spans (paging.py)
        from iosim.algorithms.paging import page_entries  # paging.py builds on Access

        rows = page_entries(kd.n_q, kd.n_kv, kd.block_q, kd.block_kv, kd.causal, kd.splits,
                            kd.page_size, split=kernel.split)
    elif access.where == "inner":
        rows = sums.pair_q_rows if access.rows == "q" else sums.pair_kv_rows
    elif kernel.split and access.where == "outer":
        # one tile per (query block, split) program that has a key block to visit
        rows = (masked_split_rows(kd) if kd.masked else
                split_work_rows(kd.n_q, kd.n_kv, kd.block_q, kd.block_kv, kd.causal, kd.splits))
    elif kernel.split and access.where == "outer_end":
        rows = length * kd.splits  # every program writes its tile, even an empty split
    elif access.per_split and access.where in ("prologue", "epilogue"):
        rows = length * kd.splits  # a whole tensor with one copy per split
    else:
        # whole tensors, or one tile per outer block: every outer block is visited once
        rows = length
    width = row_width(access.cols, kd.d, kd.n_kv, kd.dv)
    instances = 1 if access.once else kd.batch * (kd.kv_heads if access.per_kv_head
                                                  else kd.heads)
    return rows * width * instances


def _scale_elements(access: Access, kernel: Kernel, kd: Dims, sums: BlockSums) -> Any:
    """An FP8 scale access: one fp32 element per program (prologue: one per (batch, head) of a
    kernel; outer: one per outer block, or per split-KV program with work) or per tile loaded
    (inner: one per visited pair)."""
    if access.where == "inner":
        per_head = sums.pairs
    elif access.where == "outer" and kernel.split:
        per_head = split_work_programs(kd.n_q, kd.n_kv, kd.block_q, kd.block_kv, kd.causal,
                                       kd.splits)
    elif access.where == "outer":
        per_head = sums.row_blocks if kernel.loop == "q" else sums.kv_blocks
    else:
        per_head = 1
    return per_head * kd.batch * kd.heads


def kernel_flops(kernel: Kernel, dims: Dims, sums: BlockSums) -> tuple[Any, Any]:
    """(matmul FLOPs, elementwise FLOPs) of a kernel over the whole workload.

    Executed FLOPs: `sums.scores` counts every score of every visited tile, so a causal tiled
    kernel pays for the diagonal tiles in full (FLOP conventions halve N² instead).
    """
    if kernel.segments:
        parts = [kernel_flops(k, d, sums) for k, d, sums, _ in _segment_parts(kernel, dims)]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    kd = kernel_dims(kernel, dims)
    per = {"score": sums.scores, "score_d": sums.scores * kd.d, "score_dv": sums.scores * kd.dv,
           "q_d": kd.n_q * kd.d, "q_dv": kd.n_q * kd.dv, "q": kd.n_q,
           "pair_q_dv": sums.pair_q_rows * kd.dv}
    totals = {"matmul": 0, "elementwise": 0}
    for flop in kernel.flops:
        times = flop.coefficient * (kd.splits if flop.per_split else 1)
        totals[flop.kind] = totals[flop.kind] + times * per[flop.per]
    instances = kd.batch * kd.heads
    return totals["matmul"] * instances, totals["elementwise"] * instances


def kernel_programs(kernel: Kernel, dims: Dims) -> Any:
    """Programs (CTAs) in the kernel's launch grid, or None where the grid is not modelled.

    grid "blocks": batch × heads × outer blocks (× splits), as FA2's grid (num_m_block, b, h) and
    its split-KV grid (num_m_block, num_splits, b·h); "heads": batch × heads, as FA1's grid.
    """
    if kernel.grid is None:
        return None
    if kernel.segments:
        return sum(kernel_programs(k, d) for k, d, _, _ in _segment_parts(kernel, dims))
    kd = kernel_dims(kernel, dims)
    instances = kd.batch * kd.heads
    if kernel.grid == "heads":
        return instances
    if kd.varlen:  # FA2 varlen: ⌈max_seqlen/B⌉ programs per sequence (masks.py)
        block = kd.block_q if kernel.loop == "q" else kd.block_kv
        outer = grid_blocks(kd.n_q, kd.n_kv, block, kernel.loop == "q", kd.seqlens,
                            kd.packing)[0]
        return instances * outer * (kd.splits if kernel.split else 1)
    outer = cdiv(kd.n_q, kd.block_q) if kernel.loop == "q" else cdiv(kd.n_kv, kd.block_kv)
    return instances * outer * (kd.splits if kernel.split else 1)


def check_loop_nest_arguments(kernels: object, workload: object, tiling: object) -> None:
    """What closed_form, walk, walk_arrays and dram_estimate take (the Python API's building
    blocks): an algorithm's kernels (`ALGORITHMS[name].kernels(workload)`), a Workload, and a
    Tiling or None (untiled); anything else is one IosimError naming it (a float workload was an
    AttributeError, tiling=0 was silently untiled)."""
    check_instance("workload", workload, Workload, WORKLOAD_EXAMPLE)
    if tiling is not None:
        check_instance("tiling", tiling, Tiling, "iosim.compare(workload, 'h100').algorithm("
                                                 "'flash2').tiling")
    if not isinstance(kernels, (list, tuple)) or not all(isinstance(k, Kernel) for k in kernels):
        raise IosimError(f"{arg('kernels')} must be an algorithm's kernels, e.g. "
                         f"iosim.ALGORITHMS['flash2'].kernels(workload), got {excerpt(kernels)}",
                         param="kernels")


def closed_form(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None) -> Traffic:
    """The exact traffic of an algorithm's kernels for one workload, as named terms."""
    check_loop_nest_arguments(kernels, workload, tiling)
    dims = Dims.of(workload, tiling)
    terms = []
    for kernel in kernels:
        sums = kernel_sums(kernel, dims)
        for access in kernel.accesses:
            terms.append(Term(
                kernel=kernel.name,
                tensor=access.tensor,
                op=access.op,
                elements=int(access_elements(access, kernel, dims, sums)),
                element_bytes=element_bytes(access.element, workload.element_bytes,
                                            workload.output_element_bytes),
                cite=access.cite,
                init=access.init,
            ))
    return Traffic(tuple(terms))


def _points(dims: Dims) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """(shape, every point's (n_q, n_kv, B_r, B_c, causal, window, splits)) of masked dims."""
    values = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (
        dims.n_q, dims.n_kv, dims.block_q, dims.block_kv, dims.causal,
        0 if dims.window is None else dims.window, dims.splits)))
    shape = values[0].shape
    return shape, list(zip(*(v.ravel().tolist() for v in values), strict=True))


def _lengths(dims: Dims) -> tuple[int, ...] | None:
    return dims.seqlens if dims.packed else None


def masked_sums(dims: Dims) -> BlockSums:
    """masks.mask_sums at every point of `dims` (ints, or a sweep's arrays point by point)."""
    shape, points = _points(dims)
    sums = [mask_sums(n_q, n_kv, bq, bkv, bool(causal), window or None, _lengths(dims),
                      dims.packing)
            for n_q, n_kv, bq, bkv, causal, window, _ in points]
    if not shape:
        return sums[0]
    return BlockSums(*(np.asarray(column, dtype=np.int64).reshape(shape)
                       for column in zip(*sums, strict=True)))


def masked_split_rows(dims: Dims) -> Any:
    """masks.split_work_rows at every point of `dims`."""
    shape, points = _points(dims)
    rows = [mask_split_rows(n_q, n_kv, bq, bkv, bool(causal), window or None, _lengths(dims),
                            splits, dims.packing) for n_q, n_kv, bq, bkv, causal, window, splits in points]
    return rows[0] if not shape else np.asarray(rows, dtype=np.int64).reshape(shape)


def masked_longest(kernel: Kernel, dims: Dims) -> Any:
    """Inner-block steps of the kernel's longest program under the mask, at every point."""
    kd = kernel_dims(kernel, dims)
    shape, points = _points(kd)
    longest = [longest_program(n_q, n_kv, bq, bkv, bool(causal), window or None, _lengths(kd),
                               kernel.loop == "q", kd.packing)
               for n_q, n_kv, bq, bkv, causal, window, _ in points]
    return longest[0] if not shape else np.asarray(longest, dtype=np.int64).reshape(shape)
