"""A sweep of one implementation (`--impl`): `compare --impl` at every grid point.

An implementation decides per point what runs (FlashAttention-2's split-KV rule picks the split
kernel for small grids), which extra kernels it launches, its tiles and, with the measured
profile, its own efficiencies and host time per call (analysis/impl_kernels.py). The vectorised
runner (sweep.py) has none of that; this one calls `compare` itself at each point, so a sweep
point is compare's estimate by construction, and fills the same result arrays: standard
attention (the baseline) and the implementation. Slower than the vectorised sweep (about 1-2 ms
of CPU per point); a sweep over more than MAX_IMPL_POINTS points is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from iosim.analysis.comparison import AlgorithmEstimate
from iosim.analysis.sweep_result import AlgorithmGrid, SweepResult
from iosim.analysis.sweep_spec import AXES, WORKLOAD_AXES, SweepSpec, check_spec, spec_workload
from iosim.errors import IosimError, TilingError, arg
from iosim.inputs.impl_features import FeatureError
from iosim.inputs.implementations_yaml import get_implementation

MAX_IMPL_POINTS = 100_000
"""An --impl sweep runs compare per point: beyond this it would take minutes."""

_INT = ("block_q", "block_kv", "hbm_read_bytes", "hbm_write_bytes", "matmul_flops",
        "elementwise_flops", "splits", "bwd_block_q", "bwd_block_kv")
_FLOAT = ("time_s", "memory_time_s", "compute_time_s", "memory_bound_time_s")
_CALL = "call_time_s"
"""The call as do_bench times it (AlgorithmEstimate.call_time_s), beside the kernels' time_s."""


def impl_sweep(spec: SweepSpec, *,
               on_progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Every grid point of `spec` estimated by `compare(..., impl=spec.impl)` (the module
    docstring); standard attention as the baseline."""
    from iosim.analysis.compare import compare

    assert spec.impl is not None
    if spec.splits != (None,):
        raise IosimError(f"{arg('impl')} decides the split count (its split-KV rule); drop "
                         f"{arg('splits')}")
    _, hardware, notes = check_spec(spec)
    if spec.points > MAX_IMPL_POINTS:
        raise IosimError(f"a sweep with {arg('impl')} runs compare at every point; "
                         f"{spec.points:,} points are more than {MAX_IMPL_POINTS:,}: narrow a "
                         f"range")
    impl = get_implementation(spec.impl)
    points = spec.points
    grids = {name: _empty(points) for name in ("standard", impl.name)}
    sram = np.zeros(points, dtype=np.int64)
    tiled = False
    roof_notes: dict[str, None] = {}
    axis_values = [spec.values(axis) for axis in AXES]
    step = max(1, points // 100)
    for flat, index in enumerate(itertools.product(*(range(len(v)) for v in axis_values))):
        values = {axis: axis_values[k][index[k]] for k, axis in enumerate(AXES)}
        workload = spec_workload(spec, **{a: values[a] for a in WORKLOAD_AXES})
        hw = hardware[index[AXES.index("gpu")]]
        try:
            c = compare(workload, hw, block_q=values["block_q"], block_kv=values["block_kv"],
                        sram=values["sram_bytes"], sram_elements=values["sram_elements"],
                        profile=spec.profile, impl=impl)
        except FeatureError as exc:
            # refused, naming the point: a grid the implementation cannot run throughout is
            # the user's to narrow (a point left out would read as one it ran)
            raise FeatureError(f"at {_where(values)}: {exc.problem}", param=exc.param) from None
        except TilingError as exc:
            raise IosimError(f"at {_where(values)}: {exc.problem} (a sweep with {arg('impl')} "
                             f"evaluates each point with compare, which refuses blocks that do "
                             f"not fit)", param=exc.param) from None
        sram[flat] = c.sram_bytes
        roof_notes.update(dict.fromkeys(f"{hw.name}, {workload.dtype}: {n}" for n in c.roofs.notes))
        for estimate in c.algorithms:
            key = "standard" if estimate.impl is None else impl.name
            _put(grids[key], flat, estimate, workload.pass_ != "fwd")
            tiled = tiled or (estimate.impl is not None and estimate.tiling is not None)
        if on_progress is not None and (flat + 1) % step == 0:
            on_progress(flat + 1, points)
    standard = AlgorithmGrid(name="standard", tiled=False, **grids["standard"])
    mine = AlgorithmGrid(name=impl.name, tiled=tiled, **grids[impl.name])
    note = (f"--impl {impl.name}: every point is `compare --impl {impl.name}` "
            f"(its loop nest: {impl.algorithm})")
    return SweepResult(spec, hardware, sram, (standard, mine), standard,
                       (*notes, *roof_notes, note))


def _empty(points: int) -> dict[str, np.ndarray]:
    return {**{k: np.zeros(points, dtype=np.int64) for k in _INT},
            **{k: np.zeros(points, dtype=np.float64) for k in (*_FLOAT, _CALL)},
            "fits_sram": np.ones(points, dtype=bool), "fits_in_hbm": np.ones(points, dtype=bool)}


def _put(grid: dict[str, np.ndarray], flat: int, a: AlgorithmEstimate, backward: bool) -> None:
    totals = a.totals
    for key in ("hbm_read_bytes", "hbm_write_bytes", "matmul_flops", "elementwise_flops"):
        grid[key][flat] = int(getattr(totals, key))
    for key in _FLOAT:
        grid[key][flat] = float(getattr(totals, key))
    grid[_CALL][flat] = a.call_time_s
    grid["fits_in_hbm"][flat] = a.footprint.fits
    if a.tiling is not None:
        grid["block_q"][flat], grid["block_kv"][flat] = a.tiling.block_q, a.tiling.block_kv
        grid["splits"][flat] = a.tiling.splits
        if backward:
            grid["bwd_block_q"][flat], grid["bwd_block_kv"][flat] = a.tiling.backward_blocks
    else:
        grid["splits"][flat] = 1


def _where(values: dict[str, Any]) -> str:
    shown = ("n", "n_kv", "d", "block_q", "block_kv", "causal", "sparsity", "window")
    return ", ".join(f"{arg(axis)}" if value is True else f"{arg(axis, value)}"
                     for axis, value in values.items()
                     if axis in shown and value is not None and value is not False
                     and not (axis == "sparsity" and value == 1.0))
