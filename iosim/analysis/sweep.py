"""`sweep`: every algorithm's exact closed-form counts and roofline time over a grid, vectorised.

The runner, generic over the algorithms (it imports none by name beyond the standard baseline
from the registry): the grid is data (sweep_spec.py, grid.py), each algorithm's tiles come from
the same rules `compare` uses (inputs/tiling.py:tiles_for, then `Algorithm.choose_tiles`, on
arrays), and each kernel is costed by the same per-kernel evaluation
(estimates/roofline.py:kernel_cost) and summed by the same totals (total_cost). The only Python
loops run over chunks of points, groups of points that share a kernel list, algorithms,
kernels and accesses — never over points. Tests hold every column equal to `compare`.

An algorithm's kernel list may depend on the workload and the tiling (a backward with GQA adds
kernels, split-KV's combine kernel runs only with several splits): each algorithm declares the
axes it depends on (`Algorithm.kernel_axes`), the runner asks `kernels` once per combination of
those axes' values, and runs the closed forms once per distinct kernel list over the points
that have it.

In a sweep, blocks that do not fit the SRAM are not an error (as they are in `compare`): the
point is marked `fits_sram = False` and its counts say what the blocks would cost if they did.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from iosim.algorithms import ALGORITHMS, Algorithm
from iosim.algorithms.blocks import BlockSums
from iosim.algorithms.closedform import Dims, kernel_sums
from iosim.algorithms.loopnest import Kernel
from iosim.analysis.grid import Grid, along, build_grid, take
from iosim.analysis.sweep_measured import MeasuredColumns, measured_columns, refuse_unmodelled
from iosim.analysis.sweep_result import AlgorithmGrid, SweepResult
from iosim.analysis.sweep_spec import (
    AXES,
    SCHEMA,
    SPLITS_AUTO,
    WORKLOAD_AXES,
    SweepSpec,
    axes_as_tuples,
    check_spec,
    counts_in_python_ints,
    spec_workload,
)
from iosim.estimates.footprint import footprint_bytes, kept_for_backward
from iosim.estimates.launch_floor import launched_backward, triton_backward_floor
from iosim.estimates.roofline import KernelCost, kernel_cost, total_cost
from iosim.inputs.tiling import Tiles, Tiling, tiles_for
from iosim.record import Record, replace

__all__ = ["CHUNK_POINTS", "SCHEMA", "AlgorithmGrid", "SweepResult", "SweepSpec", "sweep"]

CHUNK_POINTS = 1 << 18
"""Points evaluated per step (bounds the temporaries; one progress tick each)."""

_OUTPUTS_INT = ("block_q", "block_kv", "hbm_read_bytes", "hbm_write_bytes", "matmul_flops",
                "elementwise_flops", "splits", "bwd_block_q", "bwd_block_kv")
_OUTPUTS_FLOAT = ("time_s", "memory_time_s", "compute_time_s", "memory_bound_time_s")
CALL = "call_time_s"
"""One call as do_bench times it, where it is not the kernels' time (AlgorithmGrid.call_time_s)."""


def sweep(
    spec: SweepSpec, *, on_progress: Callable[[int, int], None] | None = None
) -> SweepResult:
    """Evaluate every algorithm over the grid of `spec`, vectorised (see the module docstring).

    Returns a SweepResult (bytes, FLOPs and seconds per point and algorithm).
    `on_progress(done, total)` is called after each chunk of points (for a progress bar).
    """
    spec = axes_as_tuples(spec)
    if spec.impl is not None:  # what runs is decided per point: compare at each one
        from iosim.analysis.sweep_impl import impl_sweep

        return impl_sweep(spec, on_progress=on_progress)
    algorithms, hardware, notes = check_spec(spec)
    everyone = list(dict.fromkeys([ALGORITHMS["standard"], *algorithms]))
    shape = spec.shape
    grid, roof_notes = build_grid(spec, hardware)
    if SPLITS_AUTO in spec.splits:  # each point's count by compare's rule (sweep_splits.py)
        from iosim.analysis.sweep_splits import with_auto_splits

        grid = with_auto_splits(spec, hardware, grid)
    tiles = {a.name: _tiles(a, grid) for a in everyone}
    plans = {a.name: _kernel_plan(spec, a, tiles[a.name]) for a in everyone}
    has_backward = along("pass_", np.array([p != "fwd" for p in spec.pass_]))
    exact = counts_in_python_ints(spec)
    outputs = {a.name: _outputs(a, tiles[a.name], has_backward, shape, exact) for a in everyone}
    if spec.profile == "measured":  # a list iosim's Triton launcher starts: its call's time too
        for a in everyone:
            if any(launched_backward(kernels) for kernels in plans[a.name].lists):
                outputs[a.name][CALL] = np.zeros(shape, dtype=np.float64)
    measured = None
    if spec.profile == "measured":  # the per-point DRAM estimate and schedule (sweep_measured.py)
        refuse_unmodelled(hardware)
        measured = measured_columns(spec, hardware, everyone, tiles, plans)
    # causal is evaluated one value at a time: block_sums takes it as a Python bool and computes
    # the causal sums only where they are needed
    for done, chunk in _chunks(spec, {"causal"}):
        for c, causal in enumerate(spec.causal):
            where = list(chunk)
            where[AXES.index("causal")] = slice(c, c + 1)
            part = tuple(where)
            g = grid.take(part)
            for algorithm in everyone:
                _evaluate_plan(algorithm, plans[algorithm.name], tiles[algorithm.name], g, causal,
                               outputs[algorithm.name], part, shape, measured)
        if on_progress is not None:
            on_progress(done, spec.points)

    grids = {a.name: AlgorithmGrid(name=a.name, tiled=a.tiled,
                                   **{k: v.reshape(-1) for k, v in outputs[a.name].items()})
             for a in everyone}
    sram = np.broadcast_to(grid.sram_bytes, shape).reshape(-1)
    from iosim.analysis.sweep_verdicts import verdict_notes  # a shared-prefix grid only

    return SweepResult(spec, hardware, sram, tuple(grids[a.name] for a in algorithms),
                       grids["standard"], tuple(dict.fromkeys(
                           [*notes, *roof_notes, *(measured.notes if measured else ()),
                            *verdict_notes(spec, tuple(hardware))])))


def _tiles(algorithm: Algorithm, grid: Grid) -> Tiles:
    """The algorithm's blocks at every point: the rules `compare` applies, on arrays."""
    if not algorithm.tiled:
        return Tiles(0, 0, True)
    assert grid.tiling is not None
    code = algorithm.code_tiles(grid.tiling)
    return algorithm.choose_tiles(tiles_for(grid.tiling, algorithm.outer, code), grid.tiling)


def _outputs(algorithm: Algorithm, t: Tiles, has_backward: np.ndarray,
             shape: tuple[int, ...], exact: bool) -> dict[str, np.ndarray]:
    """The result arrays, with the tiling columns filled in."""
    counts = object if exact else np.int64  # Python ints where int64 could wrap (sweep_spec.py)
    out = {**{k: np.zeros(shape, dtype=counts) for k in _OUTPUTS_INT},
           **{k: np.zeros(shape, dtype=np.float64) for k in _OUTPUTS_FLOAT},
           "fits_sram": np.ones(shape, dtype=bool), "fits_in_hbm": np.ones(shape, dtype=bool)}
    if algorithm.tiled:
        out["block_q"][...] = t.block_q
        out["block_kv"][...] = t.block_kv
        out["fits_sram"][...] = t.fits
        out["bwd_block_q"][...] = np.where(
            has_backward, t.block_q if t.bwd_block_q is None else t.bwd_block_q, 0)
        out["bwd_block_kv"][...] = np.where(
            has_backward, t.block_kv if t.bwd_block_kv is None else t.bwd_block_kv, 0)
    out["splits"][...] = t.splits
    return out


# ---------------------------------------------------------------------------------------------
# kernel lists: one per combination of the values of the axes the algorithm declares


class _KernelPlan(Record):
    """An algorithm's distinct kernel lists and, per point, which one applies."""

    lists: tuple[tuple[Kernel, ...], ...]
    which: Any
    """Index into `lists`: an int (one list everywhere) or a broadcastable array."""
    kept: tuple[tuple[Any, Any, str], ...] = ()
    """Per list: (saved accesses, fixed buffers, pass) of footprint.kept_for_backward, for the
    HBM footprint (the pass decides the kernel list, so one pass per list)."""


def _kernel_plan(spec: SweepSpec, algorithm: Algorithm, tiles: Tiles) -> _KernelPlan:
    axes = set(algorithm.kernel_axes)
    if "n_kv" in axes and spec.n_kv == (None,):
        axes.add("n")  # N_kv defaults to N
    if "kv_heads" in axes and spec.kv_heads == (None,):
        axes.add("heads")  # kv_heads defaults to heads
    if "d_v" in axes and spec.d_v == (None,):
        axes.add("d")  # d_v defaults to d
    read_axes = [a for a in WORKLOAD_AXES if a in axes and len(spec.values(a)) > 1]
    split_values: list[int] = [1]
    split_index: Any = 0
    if "splits" in axes:
        # one kernels() call per class of split counts, not per count: a product of every N
        # with every count made a sweep including N = 1 (which adds splitkv) ~30× slower
        classes = np.asarray(algorithm.split_class(np.asarray(tiles.splits)))
        unique, inverse = np.unique(classes, return_inverse=True)
        split_values = [int(v) for v in unique]
        split_index = inverse.reshape(np.shape(classes)) if unique.size > 1 else 0
    lists: dict[tuple[Kernel, ...], int] = {}
    kept: list[tuple[Any, Any, str]] = []
    sizes = [len(spec.values(a)) for a in read_axes] + [len(split_values)]
    table = np.zeros(sizes, dtype=np.int64)
    for combo in itertools.product(*(range(k) for k in sizes)):
        values = {a: spec.values(a)[i] for a, i in zip(read_axes, combo, strict=False)}
        tiling = (Tiling(1, 1, 1, "sweep", "sweep", splits=split_values[combo[-1]])
                  if algorithm.tiled else None)
        workload = spec_workload(spec, **values)
        kernels = algorithm.kernels(workload, tiling)
        if kernels not in lists:
            kept.append((*kept_for_backward(algorithm, workload), workload.pass_))
        table[combo] = lists.setdefault(kernels, len(lists))
    if len(lists) == 1:
        return _KernelPlan(tuple(lists), 0, tuple(kept))
    index = tuple(along(a, np.arange(len(spec.values(a)))) for a in read_axes)
    return _KernelPlan(tuple(lists), table[(*index, split_index)], tuple(kept))


# ---------------------------------------------------------------------------------------------
# evaluation


def _chunks(spec: SweepSpec, group_axes: set[str]) -> list[tuple[int, tuple[slice, ...]]]:
    """Slices of the grid of about CHUNK_POINTS points each, cut along the longest axis that is
    not evaluated value by value; with the points done after each."""
    shape = spec.shape
    candidates = [a for a in AXES if a not in group_axes and len(spec.values(a)) > 1]
    if not candidates:
        return [(spec.points, tuple(slice(None) for _ in AXES))]
    axis = max(candidates, key=lambda a: len(spec.values(a)))
    k = AXES.index(axis)
    length = shape[k]
    per_value = spec.points // length
    step = max(1, CHUNK_POINTS // per_value)
    out = []
    for start in range(0, length, step):
        stop = min(length, start + step)
        where = [slice(None)] * len(AXES)
        where[k] = slice(start, stop)
        out.append((stop * per_value, tuple(where)))
    return out


def _part_shape(shape: tuple[int, ...], where: tuple[slice, ...]) -> tuple[int, ...]:
    return tuple(len(range(*w.indices(n))) for w, n in zip(where, shape, strict=True))


_TILE_FIELDS = ("block_q", "block_kv", "fits", "bwd_block_q", "bwd_block_kv", "splits")


def _cut_tiles(t: Tiles, cut: Callable[[np.ndarray], Any]) -> Tiles:
    return Tiles(*(cut(v) if isinstance(v, np.ndarray) else v
                   for v in (getattr(t, f) for f in _TILE_FIELDS)))


def _evaluate_plan(algorithm: Algorithm, plan: _KernelPlan, tiles: Tiles, g: Grid,
                   causal: bool, out: dict[str, np.ndarray], where: tuple[slice, ...],
                   shape: tuple[int, ...], measured: MeasuredColumns | None = None) -> None:
    """Each distinct kernel list over the points of this slice that have it."""
    t = _cut_tiles(tiles, lambda v: take(v, where))

    def columns(index: int, cut: Callable[[np.ndarray], Any]) -> _Columns | None:
        if measured is None:
            return None
        lists = measured.lists[algorithm.name][index]
        return {name: (cut(c.memory_bytes), None if c.compute_s is None else cut(c.compute_s),
                       None if c.time_s is None else cut(c.time_s))
                for name, c in lists.items()}

    if len(plan.lists) == 1:
        _evaluate(algorithm, plan.lists[0], g, t, causal, lambda key, value: out[key].__setitem__(
            where, value), plan.kept[0], columns(0, lambda v: take(v, where)), CALL in out)
        return
    part_shape = _part_shape(shape, where)
    which = np.broadcast_to(take(plan.which, where), part_shape)
    for index, kernels in enumerate(plan.lists):
        mask = which == index
        if not mask.any():
            continue

        def pick(v: np.ndarray, mask: np.ndarray = mask) -> np.ndarray:
            return np.asarray(np.broadcast_to(v, part_shape)[mask])

        sub_t = _cut_tiles(t, pick)

        def put(key: str, value: Any, mask: np.ndarray = mask) -> None:
            out[key][where][mask] = value

        def cut(v: np.ndarray, pick: Callable[[np.ndarray], np.ndarray] = pick) -> np.ndarray:
            return pick(take(v, where))

        _evaluate(algorithm, kernels, g.subset(part_shape, mask), sub_t, causal, put,
                  plan.kept[index], columns(index, cut), CALL in out)


_Columns = dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]
"""Per kernel name, over the points being evaluated: the measured profile's DRAM bytes, for
a kernel timed by the Triton backward's schedule its compute time, and for flash1's fused
backward Algorithm 4's per-tile time (NaN where none applies)."""


class _ArrayWorkload(Record):
    """The Workload fields that footprint_bytes reads, as a sweep's arrays."""

    n: Any
    n_kv: Any
    d: Any
    batch: Any
    heads: Any
    kv_heads: Any
    element_bytes: Any
    pass_: str
    d_v: Any
    output_element_bytes: Any
    prefix_len: int | None = None
    suffix_lens: tuple[int, ...] | None = None


def _evaluate(algorithm: Algorithm, kernels: Sequence[Kernel], g: Grid, t: Tiles,
              causal: bool, put: Callable[[str, Any], None],
              kept: tuple[Any, Any, str], measured: _Columns | None = None,
              calls: bool = False) -> None:
    """One kernel list over a slice (or a masked subset) of the grid: the per-point evaluation
    `compare` runs (kernel_cost, total_cost, and the footprint), on arrays; with the measured
    profile, on each point's DRAM bytes and the scheduled backward's compute time."""
    saved, fixed, pass_ = kept
    held = footprint_bytes(kernels, _ArrayWorkload(g.n, g.n_kv, g.d, g.batch, g.heads,
                                                   g.kv_heads, g.element_bytes, pass_, g.d_v,
                                                   g.out_bytes, g.prefix_len, g.suffix_lens),
                           saved=saved, splits=t.splits, fixed=fixed)
    put("fits_in_hbm", held <= g.hbm_capacity)
    if algorithm.tiled:
        block_q, block_kv = t.block_q, t.block_kv
    else:
        block_q, block_kv = g.n, g.n_kv  # as Dims.of does for an untiled algorithm
    dims = Dims(n_q=g.n, n_kv=g.n_kv, d=g.d, batch=g.batch, heads=g.heads, kv_heads=g.kv_heads,
                element_bytes=g.element_bytes, block_q=block_q, block_kv=block_kv, causal=causal,
                splits=t.splits, sparsity_num=g.sparsity_num, sparsity_den=g.sparsity_den,
                bwd_block_q=t.bwd_block_q, bwd_block_kv=t.bwd_block_kv, d_v=g.d_v,
                out_bytes=g.out_bytes, window=g.window, seqlens=g.seqlens, packing=g.packing,
                page_size=g.page_size)
    sums_cache: dict[tuple[bool, str, bool, tuple[int, int] | None], BlockSums] = {}

    def sums_of(kernel: Kernel) -> BlockSums:
        # the block sums depend on the kernel's blocks: its pass's, or its own fixed tiles
        key = (kernel.loop is not None, kernel.blocks, kernel.pack_heads, kernel.tile)
        if key not in sums_cache:
            sums_cache[key] = kernel_sums(kernel, dims)
        return sums_cache[key]

    def cost(kernel: Kernel) -> KernelCost:
        memory, scheduled_s, alg4_s = (measured[kernel.name] if measured is not None
                                       else (None, None, None))
        c = kernel_cost(kernel, dims, bandwidth=g.bandwidth, matmul_peak=g.matmul_peak,
                        vector_peak=g.vector_peak, efficiency=g.efficiency[kernel.kind],
                        additive=g.additive_compute, sums=sums_of(kernel), per_sm=1,
                        sm_count=g.sm_count, memory_bytes=memory)
        if alg4_s is not None:  # Alg. 4's per-tile model replaces the time (alg4_time.py)
            on = ~np.isnan(alg4_s)
            return replace(c, time_s=np.where(on, alg4_s, c.time_s))
        if scheduled_s is None:
            return c
        # the fitted list schedule replaces the compute roof and the utilisation (as
        # roofline.estimate_kernels does), where it applies
        on = ~np.isnan(scheduled_s)
        compute = np.where(on, scheduled_s, c.compute_time_s)
        return replace(c, compute_time_s=compute, time_s=np.where(
            on, np.maximum(c.memory_time_s, compute), c.time_s))

    costs = [cost(kernel) for kernel in kernels]
    totals = total_cost(costs)
    for key in ("hbm_read_bytes", "hbm_write_bytes", "matmul_flops", "elementwise_flops",
                "time_s", "memory_time_s", "compute_time_s", "memory_bound_time_s"):
        put(key, getattr(totals, key))
    if calls:
        put(CALL, _launched_call_s(kernels, costs, measured) if launched_backward(kernels)
            else totals.time_s)


def _launched_call_s(kernels: Sequence[Kernel], costs: Sequence[KernelCost],
                     measured: _Columns | None) -> Any:
    """One call (or a training step's two) as compare times it where iosim's Triton launcher
    starts the backward: the forward kernels, then the backward's kernels or its launcher floor
    (estimates/launch_floor.py), the floor only at the points its fitted schedule timed (as
    compare applies it)."""
    forward = sum((c.time_s for k, c in zip(kernels, costs, strict=True)
                   if not k.name.startswith("bwd_")), np.zeros(()))
    backward = [(k.name, c.time_s) for k, c in zip(kernels, costs, strict=True)
                if k.name.startswith("bwd_")]
    gpu = sum((t for _, t in backward), np.zeros(()))
    on = np.zeros((), dtype=bool)
    for k in kernels:
        scheduled_s = None if measured is None else measured[k.name][1]
        if scheduled_s is not None:
            on = on | ~np.isnan(scheduled_s)
    floor = triton_backward_floor(backward)
    return forward + np.where(on, np.maximum(floor, gpu), gpu)
