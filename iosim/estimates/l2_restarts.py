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

import numpy as np

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


def _distinct_steps_at(window: list[_Program], los: list[int], his: list[int],
                       own_read: float, own_write: float) -> tuple[list[int], list[float]]:
    """For each window (lo, hi] of `los`, `his`: the distinct tiles the programs walked in it,
    summed over heads (per head, the union of the depth ranges [max(lo, start) − start,
    min(hi, end) − start) of its programs), and the own tiles of the programs that start
    (own_read) or end (own_write) in it. One array pass for every window: the union is the sum
    over ranges sorted by start of what each adds beyond the running maximum of the ends
    before it, the heads kept apart by an offset larger than any depth."""
    start = np.array([p.start for p in window], dtype=np.int64)
    end = np.array([p.end for p in window], dtype=np.int64)
    unit = np.array([p.unit for p in window], dtype=np.int64)
    lo = np.array(los, dtype=np.int64)[:, None]
    hi = np.array(his, dtype=np.int64)[:, None]
    a = np.maximum(lo, start) - start
    b = np.minimum(hi, end) - start
    offset = unit * (int((end - start).max(initial=0)) + 1)
    empty = b <= a  # outside this window: an empty range at its head's offset adds nothing
    a = np.where(empty, 0, a) + offset
    b = np.where(empty, 0, b) + offset
    order = np.argsort(a, axis=1, kind="stable")
    a, b = np.take_along_axis(a, order, axis=1), np.take_along_axis(b, order, axis=1)
    reach = np.maximum.accumulate(b, axis=1)
    before = np.concatenate([np.full((len(los), 1), np.iinfo(np.int64).min), reach[:, :-1]],
                            axis=1)
    steps = np.maximum(0, b - np.maximum(a, before)).sum(axis=1)
    starting = ((lo < start) & (start <= hi)).sum(axis=1)
    ending = ((lo < end) & (end <= hi)).sum(axis=1)
    owned = starting * own_read + ending * own_write
    return [int(n) for n in steps], [float(o) for o in owned]


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
        # the tile at depth x: read by the predecessor at its start + x, by this program at its
        # start + x; in between, what every program walked (LRU: distinct tiles), at SAMPLES
        # depths at once (one window holding every sample's programs: the others count 0)
        xs = [(2 * sample + 1) * length // (2 * SAMPLES) for sample in range(SAMPLES)]
        first = bisect.bisect_left(starts, previous.start + xs[0] - longest)
        last = bisect.bisect_right(starts, program.start + xs[-1])
        window = [p for p in programs[first:last] if p.end > previous.start + xs[0]]
        steps, owned = _distinct_steps_at(window, [previous.start + x for x in xs],
                                          [program.start + x for x in xs], own_read, own_write)
        misses = sum(miss_probability(n * tile_bytes + o, capacity)
                     for n, o in zip(steps, owned, strict=True))
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
