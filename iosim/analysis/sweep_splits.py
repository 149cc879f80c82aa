"""`sweep --splits auto`: each point's split count chosen by the rule compare's `--splits auto`
uses (analysis/split_choice.py: the least time under the decoding time model), put in the grid
before the vectorised runner (sweep.py) counts the point at that count, as compare then counts
splitkv at its pick (split_choice.with_best_pick).

The choice is made point by point with split_choice.best_split_count (the same argmin as
choose_splits' table, without timing the counts its lower bound rules out, each count it times
on compare's own counts without the rest of compare: analysis/decode_counts_lean.py), once per
distinct (workload, GPU, blocks, SRAM) of the grid: the rule has one home, and a one-point sweep
equals compare (tests/test_sweep_equals_compare.py, tests/test_decode_counts_lean.py). It costs
a few milliseconds a point (benchmarks/sweep_splits_auto_speed.py), not the vectorised runner's
microseconds: no choice is shared between points of different workloads (the model's times
follow each point's exact bytes, not only the class of (grid, key blocks, SMs) FA2's heuristic
is decided by, and no proof that the pick cannot move within a class was made).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.analysis.grid import Grid
from iosim.analysis.split_choice import best_split_count
from iosim.analysis.sweep_spec import AXES, SPLITS_AUTO, WORKLOAD_AXES, SweepSpec, spec_workload
from iosim.inputs.hardware import Hardware
from iosim.record import replace

CHOICE_AXES = ("gpu", *WORKLOAD_AXES, "sram_bytes", "sram_elements", "block_q", "block_kv")
"""What a point's choice depends on (every axis but splits)."""


def with_auto_splits(spec: SweepSpec, hardware: Sequence[Hardware], grid: Grid) -> Grid:
    """`grid` with each point whose split count is SPLITS_AUTO given its chosen count (the
    grid's other points keep theirs: a number, or 0 for FA2's heuristic)."""
    if SPLITS_AUTO not in spec.splits or grid.tiling is None:
        return grid
    shape = spec.shape
    splits = np.array(np.broadcast_to(grid.tiling.splits, shape), dtype=np.int64)
    auto_at = spec.splits.index(SPLITS_AUTO)
    split_axis = AXES.index("splits")
    chosen: dict[tuple[Any, ...], int] = {}
    values = [spec.values(a) for a in AXES]
    ranges = [range(n) if a != "splits" else range(auto_at, auto_at + 1)
              for a, n in zip(AXES, shape, strict=True)]
    for index in itertools.product(*ranges):
        at = {a: values[k][index[k]] for k, a in enumerate(AXES) if k != split_axis}
        key = tuple(at[a] for a in CHOICE_AXES)
        if key not in chosen:
            workload = spec_workload(spec, **{a: at[a] for a in WORKLOAD_AXES})
            chosen[key] = best_split_count(
                workload, hardware[index[AXES.index("gpu")]], block_q=at["block_q"],
                block_kv=at["block_kv"], sram=at["sram_bytes"],
                sram_elements=at["sram_elements"], profile=spec.profile)
        splits[index] = chosen[key]
    return replace(grid, tiling=replace(grid.tiling, splits=splits))
