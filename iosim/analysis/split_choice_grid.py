"""`--splits auto` at many points at once: splitkv's predicted time at every (point, split
count) as numpy arrays, and each point's best count.

split_choice.choose_splits times each count of one workload on compare's counts (a table of
up to 128 compare calls); best_split_count, what `sweep --splits auto` and compare's pick run,
calls `best_split_counts` here with one point, and the sweep with all of its points
(sweep_splits.py). Nothing here is a rule of its own: every number is the function compare
calls, evaluated on arrays of shape (points, counts) —

  * the tiling: inputs/tiling.py tiles_for with splitkv's code tiles (compare's blocks), then
    with those blocks given (the decoding time model's tiling: decode_time.DecodeCounts runs
    compare at them, so its programs per SM are the given blocks'), as a sweep tiles;
  * the kernels: SplitKV.forward at one split and at two (every count above one has the
    kernel list of two: SplitKV.split_class), once per group of points with the same kernel
    list; their bytes, FLOPs and grids by the closed form (closedform.access_elements,
    kernel_flops, kernel_programs) with Dims.splits the counts;
  * the DRAM estimate (estimates/l2.py dram_estimate) of those two kernels: the split
    kernel's terms by shared_prefix_dram.split_term_bytes (the rule split_terms charges), the
    combine kernel's as l2.py's _ClosedForm charges a whole-tensor kernel after the split
    kernel (each state it reads found in L2 by l2_model.hit_fraction over the two kernels'
    footprints, each output written back once), then, as dram_estimate applies them, the
    launch-order rules of a decoding step (estimates/launch_order_dram.py: straddle_rereads,
    the re-reads row_blocks_once adds where a wave boundary parts a chunk's row blocks;
    query_compulsory, query_once's Q once per row block; wave_miss_share, the share of states
    states_from_l2 re-reads), else shared_prefix_dram.states_stay_in_l2 (the states read back
    from L2); prefix_once and row_blocks_once's own division change nothing here (no shared
    prefix; a split kernel the L2 model charges once per KV head);
  * the time: decode_kernel_time's arithmetic (memory_seconds, chain_seconds, busy_seconds:
    the functions KernelTime's properties call, on floats or arrays, the same doubles).

The points this covers: a decoding or chunked-prefill step over one contiguous (or paged) KV
sequence per request, dense, any batch, heads, KV heads, KV length, head dims, dtype (FP8
scales included), page size, MLA's latent cache, on any GPU. A window, packed sequences or a
shared-prefix batch (whose L2 model takes other branches: masked_shared_passes,
row_blocks_once, prefix_once), and a compiled occupancy given per head dim
(`programs_per_sm`), take split_choice's per-point search instead (best_split_walk).
tests/test_split_choice_grid.py holds every point of a grid equal to choose_splits: the pick
and the time of every eligible count, to the last bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.closedform import (
    Dims,
    access_elements,
    kernel_flops,
    kernel_programs,
    kernel_sums,
)
from iosim.algorithms.loopnest import Kernel, element_bytes, tensor_bytes
from iosim.algorithms.splitkv import MAX_SPLITS, SplitKV
from iosim.analysis.compare import gpu_cc, gpu_sram_per_sm
from iosim.analysis.decode_kernel_time import (
    Ceilings,
    busy_seconds,
    ceilings,
    chain_seconds,
    grid_utilisation,
    grid_waves,
    matmul_peak,
    memory_seconds,
)
from iosim.analysis.requests import sram_budget
from iosim.errors import TilingError
from iosim.estimates.combine import KERNEL as COMBINE_KERNEL
from iosim.estimates.l2_model import copies_in_l2, hit_fraction
from iosim.estimates.launch_order_dram import (
    RowBlockGrid,
    query_compulsory,
    straddle_rereads,
    wave_miss_share,
)
from iosim.estimates.roofline import kernel_read_write
from iosim.estimates.shared_prefix_dram import (
    PARTIAL_STATES,
    SPLITKV_KERNEL,
    split_reads_once,
    split_term_bytes,
    states_stay_in_l2,
)
from iosim.inputs.api_values import check_int
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import dtype_code
from iosim.inputs.ints import both, cdiv, select
from iosim.inputs.limits import MAX_BLOCK
from iosim.inputs.tiling import TilingInputs, tiles_for, working_set_bytes
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

CHUNK = 2048
"""Points evaluated at once (× 128 counts: bounds the temporaries to a few MB each)."""

COUNTS = np.arange(1, MAX_SPLITS + 1, dtype=np.int64).reshape(1, -1)
"""Every split count FA2 runs, one column each."""


def vectorised(workload: Workload) -> bool:
    """Whether best_split_counts times this workload on arrays (the module docstring)."""
    return (not workload.masked and workload.prefix_len is None
            and workload.suffix_lens is None and workload.sparsity_fraction == (1, 1))


class _Arrays(Record, frozen=False):
    """The Workload fields the closed form and the L2 model read (tensor_bytes, Dims), one row
    per point (shape (points, 1), broadcasting against the counts' columns)."""

    n: np.ndarray
    n_kv: np.ndarray
    d: np.ndarray
    d_v: np.ndarray
    batch: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    causal: np.ndarray
    page_size: np.ndarray
    element_bytes: int
    output_element_bytes: int
    masked: bool = False
    """No window and no packed sequences (vectorised)."""


def _arrays(workloads: Sequence[Workload]) -> _Arrays:
    def column(name: str) -> np.ndarray:
        return np.array([getattr(w, name) or 0 for w in workloads], dtype=np.int64).reshape(-1, 1)

    first = workloads[0]
    return _Arrays(column("n"), column("n_kv"), column("d"), column("d_v"), column("batch"),
                   column("heads"), column("kv_heads"),
                   np.array([w.causal for w in workloads]).reshape(-1, 1), column("page_size"),
                   first.element_bytes, first.output_element_bytes)


def workload_arrays(workloads: Sequence[Workload]) -> Any:
    """The workloads' fields as (points, 1) columns, one dtype (what tensor_bytes and Dims read
    of a workload: analysis/whole_tensor_dram.py reads them too)."""
    return _arrays(workloads)


def check_blocks(block_q: int | None, block_kv: int | None) -> None:
    """make_tiling's checks of given block sizes (the same errors)."""
    from iosim.inputs.ints import check_count

    for name, value in (("block_q", block_q), ("block_kv", block_kv)):
        if value is not None:
            check_count(name, value, TilingError)
            check_int(name, value, high=MAX_BLOCK, error=TilingError)


class _Tiling(Record, frozen=False):
    """The decoding time model's tiling at each point (compare's forward blocks, given)."""

    block_q: np.ndarray
    block_kv: np.ndarray
    per_sm: np.ndarray
    fits: np.ndarray
    """Whether make_tiling accepts the point (else the per-point search raises its error)."""


def _tiling(a: _Arrays, workloads: Sequence[Workload], hw: Hardware,
            options: dict[str, Any]) -> _Tiling:
    """compare's blocks of splitkv at each point (tiling_for), then the tiling make_tiling
    gives at those blocks given (forward_tiling, as DecodeCounts runs compare)."""
    w = workloads[0]
    sram, _ = sram_budget(hw, w.element_bytes, sram=options.get("sram"),
                          sram_elements=options.get("sram_elements"))
    block_q, block_kv = options.get("block_q"), options.get("block_kv")
    splitkv = ALGORITHMS["splitkv"]
    inputs = TilingInputs(a.n, a.n_kv, a.d, a.heads, a.kv_heads, a.batch, a.element_bytes,
                          sram, False, block_q or 0, block_kv or 0, 0, 0, a.causal,
                          dtype_code(w.dtype), gpu_cc(hw), gpu_sram_per_sm(hw),
                          str(options.get("tiles", "code")), None, masked=False, varlen=None,
                          d_v=a.d_v, latent_kv=w.latent_kv, prefix_len=0)
    first = tiles_for(inputs, splitkv.outer, splitkv.code_tiles(inputs))
    given = replace(inputs, block_q=np.asarray(first.block_q), block_kv=np.asarray(first.block_kv))
    model = tiles_for(given, splitkv.outer, splitkv.code_tiles(given))
    smallest = working_set_bytes(1, 1, a.d, a.element_bytes, d_v=a.d_v, v_in_k=w.latent_kv)
    fits = np.asarray(model.fits) & (smallest <= sram)
    if block_q is not None or block_kv is not None:
        fits = fits & np.asarray(first.fits)
    shape = a.n.shape

    def column(value: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(value, dtype=np.int64), shape)

    return _Tiling(column(model.block_q), column(model.block_kv), column(model.per_sm),
                   np.broadcast_to(fits, shape))


def best_split_counts(workloads: Sequence[Workload], hw: Hardware,
                      options: dict[str, Any]) -> list[int | None]:
    """Each workload's best split count (split_choice.choose_splits(...).best.splits), None
    where `vectorised` says no or make_tiling would refuse the point (the caller runs the
    per-point search there). `options`: compare's tiling options (block_q, block_kv, sram,
    sram_elements, tiles); one GPU."""
    out: list[int | None] = [None] * len(workloads)
    check_blocks(options.get("block_q"), options.get("block_kv"))
    splitkv = ALGORITHMS["splitkv"]
    assert isinstance(splitkv, SplitKV)
    axes = sorted(splitkv.kernel_axes - {"splits"})
    lists: dict[tuple[Any, ...], tuple[tuple[Kernel, ...], ...]] = {}
    groups: dict[tuple[tuple[Kernel, ...], ...], list[int]] = {}
    for i, w in enumerate(workloads):
        if vectorised(w):
            # the kernel lists at one split and at more, asked once per combination of the
            # workload fields they depend on (SplitKV.kernel_axes), as the sweep asks them
            key = tuple(getattr(w, a) for a in axes)
            if key not in lists:
                lists[key] = (splitkv.forward(w, 1), splitkv.forward(w, 2))
            groups.setdefault(lists[key], []).append(i)
    c = ceilings(hw)
    for kernels, at in groups.items():
        for start in range(0, len(at), CHUNK):
            part = at[start:start + CHUNK]
            picks = _best(c, kernels, [workloads[i] for i in part], hw, options)
            for i, pick in zip(part, picks, strict=True):
                out[i] = pick
    return out


def _best(c: Ceilings, kernels: tuple[tuple[Kernel, ...], ...], workloads: Sequence[Workload],
          hw: Hardware, options: dict[str, Any]) -> list[int | None]:
    """One group of points with the same kernel lists: the count of least time (the smallest
    on a tie), eligible counts only (split_choice.eligible_counts)."""
    times, eligible, fits = split_times(c, kernels, workloads, hw, options)
    best = np.argmin(np.where(eligible, times, np.inf), axis=1) + 1
    return [int(b) if ok else None for b, ok in zip(best.tolist(), fits[:, 0].tolist(),
                                                   strict=True)]


def split_times(c: Ceilings, kernels: tuple[tuple[Kernel, ...], ...],
                workloads: Sequence[Workload], hw: Hardware, options: dict[str, Any]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time_s of the split kernel and the combine, at every point × count 1 .. the points'
    largest min(128, T_c); which counts are eligible; whether make_tiling accepts the point),
    for workloads whose kernel lists at one split and at more are `kernels`
    (SplitKV.forward(w, 1), SplitKV.forward(w, 2))."""
    a = _arrays(workloads)
    t = _tiling(a, workloads, hw, options)
    key_blocks = cdiv(a.n_kv, t.block_kv)
    top = np.minimum(MAX_SPLITS, key_blocks)
    counts = COUNTS[:, :max(1, int(top.max()))]  # no point weighs a count past its top
    eligible = (top >= counts) & ((counts == 1) | (
        cdiv(key_blocks, counts) != cdiv(key_blocks, np.maximum(counts - 1, 1))))
    w = workloads[0]
    peak = matmul_peak(hw, w)
    one_split, more = kernels
    one = _kernel_seconds(c, one_split, a, t, np.ones((1, 1), dtype=np.int64), hw, peak, w)
    many = _kernel_seconds(c, more, a, t, counts, hw, peak, w)
    times = np.where(counts == 1, one, many)
    return times, eligible & t.fits, np.asarray(t.fits)


def _kernel_seconds(c: Ceilings, kernels: Sequence[Kernel], a: _Arrays, t: _Tiling,
                    counts: np.ndarray, hw: Hardware, peak: float, w: Workload) -> np.ndarray:
    """The kernels' times added (split_choice.lean_time_s), at each point and count."""
    dims, sums, oblivious = _oblivious(kernels, a, t, counts, w.packing)
    terms = _dram_terms(kernels, oblivious, a, t, dims, hw)
    dram = None if terms is None else {name: sum(charged) for name, charged in terms.items()}
    total: Any = 0.0
    for k in kernels:
        moved = (sum(oblivious[k.name]) if dram is not None
                 else sum(kernel_read_write(k, dims, sums[k.name])))
        charged = dram[k.name] if dram is not None else moved
        matmul, elementwise = kernel_flops(k, dims, sums[k.name])
        compute = (np.asarray(matmul, dtype=np.float64) / peak
                   + np.asarray(elementwise, dtype=np.float64) / c.vector_flops_per_s)
        programs: Any = 0
        slots: Any = 0
        blocks: Any = 0
        flops = 0.0
        co_resident: Any = 1
        if k.grid is not None:
            programs = kernel_programs(k, dims)
            slots = t.per_sm * int(hw.sm_count or 0)
        if k.name == SPLITKV_KERNEL:
            blocks = cdiv(cdiv(a.n_kv, t.block_kv), counts)
            flops = 2.0 * t.block_q * t.block_kv * (a.d + a.d_v)
            if w.latent_kv and hw.sm_count:
                co_resident = cdiv(np.minimum(programs, slots), hw.sm_count)
        memory = memory_seconds(c, np.asarray(charged, dtype=np.float64),
                                np.asarray(moved, dtype=np.float64))
        waves = grid_waves(np.asarray(programs), np.asarray(slots))
        chain = chain_seconds(c, waves, np.asarray(blocks), flops, co_resident)
        busy = busy_seconds(c, memory, compute, grid_utilisation(np.asarray(programs),
                                                                 np.asarray(slots)), chain)
        total = total + ((c.launch_s + c.ramp_s) + busy)
    return np.asarray(total, dtype=np.float64)


def _oblivious(kernels: Sequence[Kernel], a: _Arrays, t: _Tiling, counts: np.ndarray,
               packing: str) -> tuple[Dims, dict[str, Any], dict[str, list[Any]]]:
    """The closed form's Dims, kernel sums and each access's L2-oblivious bytes (in the
    kernel's accesses' order), at each point and count."""
    dims = Dims(a.n, a.n_kv, a.d, a.batch, a.heads, a.kv_heads, a.element_bytes, t.block_q,
                t.block_kv, a.causal, counts, 1, 1, None, None, a.d_v, a.output_element_bytes,
                page_size=a.page_size, window=None, seqlens=None, packing=packing)
    sums = {k.name: kernel_sums(k, dims) for k in kernels}
    oblivious = {k.name: [access_elements(x, k, dims, sums[k.name]) * element_bytes(
        x.element, a.element_bytes, a.output_element_bytes) for x in k.accesses]
        for k in kernels}
    return dims, sums, oblivious


def dram_terms_at(kernels: Sequence[Kernel], workloads: Sequence[Workload], block_q: np.ndarray,
                  block_kv: np.ndarray, per_sm: np.ndarray, splits: np.ndarray,
                  hw: Hardware) -> dict[str, list[np.ndarray]] | None:
    """Each kernel's DRAM bytes per access (its DramTerms' bytes, in its accesses' order) under
    estimates/l2.py dram_estimate at each point's own tiling (the blocks, programs per SM and
    split count a sweep chose, one value per workload), for `kernels` the split-KV list of
    every workload (SplitKV.forward at those splits; `vectorised` workloads of one dtype and
    packing): what sweep_split_dram.py charges in place of dram_estimate point by point. None
    without the L2 size or the SM count. Arrays of shape (points,)."""
    a = _arrays(workloads)

    def column(values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=np.int64).reshape(-1, 1)

    t = _Tiling(column(block_q), column(block_kv), column(per_sm),
                np.ones((len(workloads), 1), dtype=bool))
    dims, _, oblivious = _oblivious(kernels, a, t, column(splits), workloads[0].packing)
    terms = _dram_terms(kernels, oblivious, a, t, dims, hw)
    if terms is None:
        return None
    shape = (len(workloads),)
    return {name: [np.broadcast_to(np.asarray(b, dtype=np.int64), (len(workloads), 1)
                                   ).reshape(shape) for b in charged]
            for name, charged in terms.items()}


def _dram_terms(kernels: Sequence[Kernel], oblivious: dict[str, list[Any]], a: _Arrays,
                t: _Tiling, dims: Dims, hw: Hardware) -> dict[str, list[Any]] | None:
    """Each kernel's DRAM bytes per access under estimates/l2.py dram_estimate (None without
    the L2 size or the SM count: compare.dram_or_none), for split-KV's split kernel and its
    combine kernel (the module docstring)."""
    capacity = hw.l2_bytes
    if capacity is None or hw.sm_count is None:
        return None
    terms: dict[str, list[Any]] = {}
    for index, k in enumerate(kernels):
        if index == 0:
            assert k.name == SPLITKV_KERNEL and split_reads_once(k, a)  # type: ignore[arg-type]
            terms[k.name] = split_term_bytes(k, oblivious[k.name], a, capacity)
        else:
            assert k.name == COMBINE_KERNEL and k.loop is None
            terms[k.name] = _after_split_kernel(kernels[0], k, oblivious[k.name], a, capacity)
    split = kernels[0]
    # dram_estimate's launch-order rules (estimates/launch_order_dram.py), decoding points only:
    # the row blocks a wave boundary parts, Q once per row block, the states' read-back
    concurrent = hw.sm_count * t.per_sm
    decoding = a.n == 1
    charged = _straddled(split, terms[split.name], a, t, dims, concurrent, capacity)
    charged = [select(both(decoding, b > size), size, b) if size is not None else b
               for b, size in zip(charged, query_compulsory(split, a), strict=True)]
    terms[split.name] = charged
    written = sum(b for x, b in zip(split.accesses, charged, strict=True)
                  if x.tensor in PARTIAL_STATES and x.op == "write")
    if len(kernels) > 1 and np.any(written):
        reread = _states_reread(split, charged, written, kernel_programs(split, dims),
                                concurrent, capacity)
        kept = states_stay_in_l2(written, sum(charged), capacity, a.n)
        by_waves = both(decoding, written > 0)
        combine = kernels[1]
        terms[combine.name] = [
            np.where(by_waves, np.rint(moved * reread).astype(np.int64), np.where(kept, 0, b))
            if x.tensor in PARTIAL_STATES and x.op == "read" else b
            for x, b, moved in zip(combine.accesses, terms[combine.name],
                                   oblivious[combine.name], strict=True)]
    return terms


def _straddled(split: Kernel, charged: list[Any], a: _Arrays, t: _Tiling, dims: Dims,
               concurrent: Any, capacity: float) -> list[Any]:
    """shared_prefix_dram.row_blocks_once on the split kernel's terms (the split kernel is
    charged once per KV head, so only its wave-boundary re-reads: straddle_rereads), at every
    point and count."""
    g = a.heads // a.kv_heads
    blocks = np.where(g > 1, cdiv(g, t.block_q), 1)
    if not split.pack_heads or not np.any(blocks > 1):
        return charged
    kv_reads = [x.op == "read" and x.tensor in ("K", "V") for x in split.accesses]
    kv = sum(b for b, is_kv in zip(charged, kv_reads, strict=True) if is_kv)
    grid = RowBlockGrid(requests=a.batch, kv_heads=a.kv_heads, row_blocks=blocks,
                        splits=dims.splits, key_blocks=cdiv(a.n_kv, t.block_kv))
    again = straddle_rereads(grid, kv, concurrent, capacity)
    applies = (a.n == 1) & (blocks > 1) & (again > 0)
    safe = np.maximum(kv, 1)
    return [np.where(applies, b + np.rint(again * b / safe).astype(np.int64), b) if is_kv else b
            for b, is_kv in zip(charged, kv_reads, strict=True)]


def _states_reread(split: Kernel, charged: list[Any], written: Any, programs: Any,
                   concurrent: Any, capacity: float) -> Any:
    """launch_order_dram.states_reread_share with the split kernel its one writer: the share
    of the partial states the combine reads from DRAM, at every point and count."""
    stream = sum(b for x, b in zip(split.accesses, charged, strict=True)
                 if x.op == "read" and x.tensor not in PARTIAL_STATES)
    share = wave_miss_share(stream, programs, concurrent, written, 0, capacity)
    return written * share / np.maximum(written, 1)


def _footprint(kernel: Kernel, a: _Arrays) -> Any:
    """l2.py _ClosedForm._footprint: the distinct bytes a kernel touches (shared tiles in both
    L2 copies)."""
    seen: dict[str, Any] = {}
    for x in kernel.accesses:
        size = tensor_bytes(x, a, per_head=False) * copies_in_l2(kernel, x)  # type: ignore[arg-type]
        seen[x.tensor] = np.maximum(seen.get(x.tensor, 0), size)
    return sum(seen.values())


def _after_split_kernel(split: Kernel, kernel: Kernel, oblivious: list[Any], a: _Arrays,
                        capacity: float) -> list[Any]:
    """l2.py _ClosedForm.run on a whole-tensor kernel (no loop: no shared or serial tiles, no
    broadcast or group re-reads) right after the split kernel: a tensor the split kernel
    touched is still in L2 for the hit fraction of its footprint and the combine's first pass
    (_carried; dirty where the split kernel wrote it), a read costs what misses, a write its
    size less what merges with dirty lines, each capped at the L2-oblivious count."""
    # the split kernel's last access of a tensor says whether it left it dirty (l2.py _Touch)
    touched = {x.tensor: x.op == "write" for x in split.accesses}
    before = _footprint(split, a)
    hit = hit_fraction(before, _footprint(kernel, a) - before, capacity)
    out = []
    written: set[str] = set()
    for x, moved in zip(kernel.accesses, oblivious, strict=True):
        size = tensor_bytes(x, a, per_head=False)  # type: ignore[arg-type]
        found = hit if x.tensor in touched else 0.0
        dirty = touched.get(x.tensor, False)
        if x.op == "write":
            if x.tensor in written:
                charged: Any = 0
            else:
                charged = np.rint(size * (1 - (found if dirty else 0.0))).astype(np.int64)
            written.add(x.tensor)
        else:
            charged = np.rint(size * (1 - found)).astype(np.int64)
        out.append(np.minimum(charged, moved))
    return out
