"""`sweep --splits auto`: each point's split count chosen by the rule compare's `--splits auto`
uses (analysis/split_choice.py: the least time under the decoding time model), put in the grid
before the vectorised runner (sweep.py) counts the point at that count, as compare then counts
splitkv at its pick (split_choice.with_best_pick).

The choice is made once per distinct (workload, GPU, blocks, SRAM) of the grid, for all the
points of one GPU and tiling options at once: split_choice_grid.best_split_counts times every
point at every count on arrays with the functions compare calls (the same argmin as
choose_splits' table, to the last bit: tests/test_split_choice_grid.py), and the points it
does not cover (a window, packed sequences, a shared prefix) take split_choice.best_split_count
one by one. The rule has one home, and a one-point sweep equals compare
(tests/test_sweep_equals_compare.py). No choice is shared between points of different workloads
(the model's times follow each point's exact bytes, not only the class of (grid, key blocks,
SMs) FA2's heuristic is decided by); benchmarks/sweep_splits_auto_speed.py times it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.analysis.grid import Grid
from iosim.analysis.split_choice import best_split_count, check_choice
from iosim.analysis.split_choice_grid import best_split_counts
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
    values = [spec.values(a) for a in AXES]
    ranges = [range(n) if a != "splits" else range(auto_at, auto_at + 1)
              for a, n in zip(AXES, shape, strict=True)]
    # each distinct choice once, its points' indices kept; the choices of one GPU and tiling
    # options at once (split_choice_grid.best_split_counts: arrays over points and counts)
    at_key: dict[tuple[Any, ...], list[tuple[int, ...]]] = {}
    for index in itertools.product(*ranges):
        key = tuple(values[AXES.index(a)][index[AXES.index(a)]] for a in CHOICE_AXES)
        at_key.setdefault(key, []).append(index)
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for key in at_key:
        at = dict(zip(CHOICE_AXES, key, strict=True))
        groups.setdefault(tuple(at[a] for a in _OPTION_AXES), []).append(key)
    gpu_index = {name: k for k, name in enumerate(spec.values("gpu"))}
    for option_values, keys in groups.items():
        opts = dict(zip(_OPTION_AXES, option_values, strict=True))
        hw = hardware[gpu_index[opts["gpu"]]]
        options = {"block_q": opts["block_q"], "block_kv": opts["block_kv"],
                   "sram": opts["sram_bytes"], "sram_elements": opts["sram_elements"],
                   "profile": spec.profile}
        workloads = [spec_workload(spec, **dict(zip(WORKLOAD_AXES, key[1:1 + len(WORKLOAD_AXES)],
                                                    strict=True))) for key in keys]
        for workload in dict.fromkeys(w for w in workloads):
            check_choice(workload, hw, options)  # the errors best_split_count raises
        picks = best_split_counts(workloads, hw, options)
        for key, workload, pick in zip(keys, workloads, picks, strict=True):
            if pick is None:  # not covered on arrays: the per-point search
                pick = best_split_count(workload, hw, **options)
            for index in at_key[key]:
                splits[index] = pick
    return replace(grid, tiling=replace(grid.tiling, splits=splits))


_OPTION_AXES = ("gpu", "sram_bytes", "sram_elements", "block_q", "block_kv")
"""The axes a choice's options come from (one call of best_split_counts each)."""
