"""Restarts of a head's stream in FA2's causal backward (K/V outer, query blocks walked down).

Every program of a head walks the same query tiles (Q_i, dO_i, dQaccum_i) from the last block
down, one per step, and program j of a causal head is r·j steps shorter than program 0 (r =
B_c/B_r). The first `slots` programs start together and walk in lockstep: one read of each
tile serves them all. The shortest of them ends first, and the next program starts on the
last block again. The tile it reads there was last read by its predecessor (the program of the
head that started just before it, always longer); in between, the running programs touched
other tiles. When those are more than the L2 holds, the new program misses its whole sweep
and the programs that start after it (a few steps behind) hit what it brought in. The new
programs end together (each started r steps later and is r steps shorter), and the next
cohort restarts the same way. FA2's backward at N = 65,536, d = 128, 4 heads reads its
Q, dO and dQaccum about 1.8 times (tests/data/backward-h200-torch.json), where a single pass
per head was predicted; the tile-by-tile LRU simulation of the same schedule (l2_simulate.py)
reproduces it.

`restart_misses` is that simulation at program granularity: programs list-scheduled on
`slots` in launch order, each either hitting its whole sweep or missing it, by whether the
distinct tiles every running program touched between its predecessor's start and its own
(the union of their walked ranges, per head, and the own tiles of programs that start or end
in between) exceed the L2. A program walks a tile per time unit, as in l2.py. No constant.
Cost: the first few heads are scheduled exactly (MAX_UNITS, or enough for four waves); the
remaining heads repeat the last scheduled head's misses (the schedule is periodic once the
heads' programs overlap in steady state). Where that is more than MAX_PROGRAMS programs (N
beyond about 4 million at d = 128) l2.py keeps its earlier closed form, which has no restarts.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from iosim.estimates.l2_waves import Lengths

MAX_UNITS = 3
"""Heads scheduled exactly (more where four waves of programs need more): a bound on the time."""


MAX_PROGRAMS = 100_000
"""Programs scheduled at most (about 1.5 s on one core): beyond, the closed form without restarts."""


def _simulated_units(units: int, per_unit: int, slots: int) -> int:
    return min(units, max(MAX_UNITS, -(-4 * slots // per_unit) + 1))


def programs_within(units: int, per_unit: int, slots: int = 0) -> bool:
    """Whether `restart_misses` schedules at most MAX_PROGRAMS programs for this kernel."""
    return _simulated_units(units, per_unit, slots) * per_unit <= MAX_PROGRAMS


@dataclass(frozen=True, slots=True)
class _Program:
    unit: int
    start: int
    end: int


def _distinct_steps(running: list[_Program], lo: int, hi: int) -> int:
    """Distinct tiles the programs walked in (lo, hi], summed over heads: per head, the union
    of the depth ranges [max(lo, start) − start, min(hi, end) − start) of its programs."""
    by_unit: dict[int, list[tuple[int, int]]] = {}
    for p in running:
        a, b = max(lo, p.start) - p.start, min(hi, p.end) - p.start
        if b > a:
            by_unit.setdefault(p.unit, []).append((a, b))
    total = 0
    for ranges in by_unit.values():
        ranges.sort()
        top, bottom = ranges[0]
        for a, b in ranges[1:]:
            if a > bottom:
                total += bottom - top
                top, bottom = a, b
            else:
                bottom = max(bottom, b)
        total += bottom - top
    return total


def restart_misses(lengths: Lengths, units: int, slots: int, tile_bytes: float,
                   own_bytes: float, capacity: float) -> float:
    """Steps of every unit's programs that miss beyond the first pass, summed over all units
    (`lengths`: steps of a unit's programs in launch order; `tile_bytes`: bytes one step of a
    head touches, its L2 copies counted; `own_bytes`: a program's own tiles, read and
    written)."""
    per_unit = len(lengths)
    if per_unit < 2 or units < 1:
        return 0.0
    simulated = _simulated_units(units, per_unit, slots)
    free = [0] * min(slots, simulated * per_unit)
    heapq.heapify(free)
    alive: dict[int, _Program] = {}
    ending: list[tuple[int, int]] = []  # (end, index) of the alive programs
    missed = [0.0] * simulated
    previous: _Program | None = None
    index = 0
    for unit in range(simulated):
        for j in range(per_unit):
            start = heapq.heappop(free)
            program = _Program(unit, start, start + lengths[j])
            heapq.heappush(free, program.end)
            if j and previous is not None and start > previous.start:
                lo, hi = previous.start, start
                # an upper bound (every running program walking distinct tiles, each starting
                # and ending in between) spares most unions
                if len(alive) * ((hi - lo) * tile_bytes + 2 * own_bytes) > capacity:
                    window = [p for p in alive.values() if p.end > lo]
                    steps = _distinct_steps(window, lo, hi)
                    turnover = sum((lo < p.start <= hi) + (lo < p.end <= hi) for p in window)
                    if steps * tile_bytes + turnover * own_bytes > capacity:
                        missed[unit] += lengths[j]
            while ending and ending[0][0] <= start:  # ended before this start: never needed again
                del alive[heapq.heappop(ending)[1]]
            alive[index] = program
            heapq.heappush(ending, (program.end, index))
            index += 1
            previous = program
    if simulated == units:
        return float(sum(missed))
    return float(sum(missed) + missed[-1] * (units - simulated))
