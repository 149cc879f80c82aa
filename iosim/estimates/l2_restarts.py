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
`slots` in launch order; a program's tile at depth x was last read by its predecessor (at the
predecessor's start + x), and it hits if the distinct tiles every program walked in between
(the union of their walked ranges, per head, and the own tiles of programs that start or end
in between) fit the L2. That reuse distance grows with x while the older programs still run
(the restarting program's own sweep adds to theirs), so it is evaluated at SAMPLES depths of
each program; each depth misses with the chance l2_cutoff.miss_probability gives its reuse
distance (a real L2 loses lines gradually before the stream reaches its nominal size: the
share and width fitted there, with Algorithm 4's sweeps; they replace bwd4's
RESTART_CAPACITY_SHARE = 0.8, a step at 0.8 of the L2). A program walks a tile per time
unit, as in l2.py.
Cost: the first few heads are scheduled exactly (MAX_UNITS, or enough for four waves); the
remaining heads repeat the last scheduled head's misses (the schedule is periodic once the
heads' programs overlap in steady state). Where that is more than MAX_PROGRAMS programs (N
beyond about 500,000 with FA2's 128-key blocks) l2.py keeps its earlier closed form, which has
no restarts.
"""

from __future__ import annotations

import bisect
import heapq

from iosim.estimates.l2_cutoff import miss_probability, never_misses
from iosim.estimates.l2_waves import Lengths
from iosim.record import Record

MAX_UNITS = 3
"""Heads scheduled exactly (more where four waves of programs need more): a bound on the time."""


MAX_PROGRAMS = 12_000
"""Programs scheduled at most (under a second on one core): beyond, the closed form without
restarts."""


def _simulated_units(units: int, per_unit: int, slots: int) -> int:
    return min(units, max(MAX_UNITS, -(-4 * slots // per_unit) + 1))


def programs_within(units: int, per_unit: int, slots: int = 0) -> bool:
    """Whether `restart_misses` schedules at most MAX_PROGRAMS programs for this kernel."""
    return _simulated_units(units, per_unit, slots) * per_unit <= MAX_PROGRAMS


class _Program(Record):
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


SAMPLES = 8
"""Depths at which a program's reuse distance is evaluated (evenly spread over its sweep)."""


def restart_misses(lengths: Lengths, units: int, slots: int, tile_bytes: float,
                   own_read: float, own_write: float, capacity: float) -> float:
    """Steps of every unit's programs that miss beyond the first pass, summed over all units
    (`lengths`: steps of a unit's programs in launch order; `tile_bytes`: bytes one step of a
    head touches, its L2 copies counted; `own_read`, `own_write`: a program's own tiles, read
    at its start and written at its end)."""
    per_unit = len(lengths)
    if per_unit < 2 or units < 1:
        return 0.0
    simulated = _simulated_units(units, per_unit, slots)
    programs = _schedule(lengths, simulated, min(slots, simulated * per_unit))
    starts = [p.start for p in programs]
    longest = max(lengths[0], lengths[per_unit - 1])
    running = min(slots, len(programs))
    missed = [0.0] * simulated
    for k in range(1, len(programs)):
        program, previous = programs[k], programs[k - 1]
        if program.unit != previous.unit or program.start == previous.start:
            continue  # a head's first program (compulsory), or one started with its predecessor
        gap = program.start - previous.start
        # at most `running` programs walk distinct tiles in a window of `gap` steps, each
        # starting and ending in it: below the L2, every depth hits
        if never_misses(running * (gap * tile_bytes + own_read + own_write), capacity):
            continue
        length = program.end - program.start
        misses = 0.0
        for sample in range(SAMPLES):
            # the tile at depth x: read by the predecessor at its start + x, by this program at
            # its start + x; in between, what every program walked (LRU: distinct tiles)
            x = (2 * sample + 1) * length // (2 * SAMPLES)
            lo, hi = previous.start + x, program.start + x
            first = bisect.bisect_left(starts, lo - longest)
            last = bisect.bisect_right(starts, hi)
            window = [p for p in programs[first:last] if p.end > lo]
            steps = _distinct_steps(window, lo, hi)
            own = sum((lo < p.start <= hi) * own_read + (lo < p.end <= hi) * own_write
                      for p in window)
            misses += miss_probability(steps * tile_bytes + own, capacity)
        missed[program.unit] += length * misses / SAMPLES
    if simulated == units:
        return float(sum(missed))
    return float(sum(missed) + missed[-1] * (units - simulated))


def _schedule(lengths: Lengths, units: int, slots: int) -> list[_Program]:
    """The units' programs in launch order, list-scheduled on `slots` (each takes the first
    slot to free)."""
    free = [0] * slots
    heapq.heapify(free)
    out = []
    for unit in range(units):
        for j in range(len(lengths)):
            start = heapq.heappop(free)
            out.append(_Program(unit, start, start + lengths[j]))
            heapq.heappush(free, start + lengths[j])
    return out
