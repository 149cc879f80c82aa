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
no restarts. A schedule, its restarts and their windows' distinct steps depend only on the
programs' lengths, the heads scheduled and the slots, so they are kept (`_Restarts`) for the
next count of the same schedule: a sweep's points of other head dims, dtypes or head counts
change only the bytes each step and tile moves.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence

import numpy as np

from iosim.estimates.l2_cutoff import miss_probability, never_misses
from iosim.estimates.l2_waves import Lengths

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


def _distinct_steps_at(start: np.ndarray, end: np.ndarray, unit: np.ndarray, lo: np.ndarray,
                       hi: np.ndarray) -> np.ndarray:
    """For each window (lo, hi]: the distinct tiles the programs walked in it, summed over heads
    (per head, the union of the depth ranges [max(lo, start) − start, min(hi, end) − start) of
    its programs). Many restarts at once: row r holds restart r's programs (`start`, `end`,
    `unit`, shape (R, W), padded with programs of length 0 that walk nothing), `lo`, `hi` its
    SAMPLES windows (shape (R, S)); the result has shape (R, S). The union is the sum over
    ranges sorted by first depth of what each adds beyond the running maximum of the ends
    before it, the heads kept apart by an offset larger than any depth."""
    # head by head, latest start first: a range's first depth is 0 for a program that starts
    # in the window and lo − start for one started before it (starts do not decrease in launch
    # order), so this one order sorts every sample's ranges by first depth; the empty ones,
    # put at their head's offset, add nothing and leave the running maximum as it is
    order = np.argsort(unit * (int(start.max(initial=0)) + 1) - start, axis=1, kind="stable")
    narrow = _narrow_type(int(end.max(initial=0)), int(unit.max(initial=0)))
    start, end, unit = (np.take_along_axis(x, order, axis=1).astype(narrow)[:, None, :]
                        for x in (start, end, unit))
    lo, hi = lo.astype(narrow)[:, :, None], hi.astype(narrow)[:, :, None]
    a = np.maximum(lo, start) - start
    b = np.minimum(hi, end) - start
    offset = unit * (int((end - start).max(initial=0)) + 1)
    empty = b <= a
    a = np.where(empty, 0, a) + offset
    b = np.where(empty, 0, b) + offset
    reach = np.maximum.accumulate(b, axis=2)
    before = np.concatenate([np.full((*reach.shape[:2], 1), np.iinfo(narrow).min, narrow),
                             reach[:, :, :-1]], axis=2)
    return np.maximum(0, b - np.maximum(a, before)).sum(  # type: ignore[no-any-return]
        axis=2, dtype=np.int64)


def _narrow_type(latest: int, units: int) -> type[np.signedinteger]:
    """int32 where every value of `_distinct_steps_at` fits it (half the memory traffic of its
    arrays: they are what the restarts cost), else int64. Its largest values: a head's offset
    plus a depth, below (units + 1) · (latest + 1); its sums are taken in int64."""
    return np.int32 if (units + 2) * (latest + 1) < 2**31 else np.int64


def _owned_at(starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              own_read: float, own_write: float) -> np.ndarray:
    """The own tiles of the programs that start (own_read) or end (own_write) in each window
    (lo, hi], counted over the sorted starts and ends of the whole schedule."""
    starting = np.searchsorted(starts, hi, side="right") - np.searchsorted(starts, lo,
                                                                          side="right")
    ending = np.searchsorted(ends, hi, side="right") - np.searchsorted(ends, lo, side="right")
    return starting * own_read + ending * own_write


SAMPLES = 8
"""Depths at which a program's reuse distance is evaluated (evenly spread over its sweep)."""

RESTARTS_AT_ONCE = 16
"""Restarts whose windows are evaluated in one array pass (their arrays, about 1 MB, stay in
the cache: 64 at once was slower)."""


def _windows(start: np.ndarray, end: np.ndarray, unit: np.ndarray, first: np.ndarray,
             last: np.ndarray, earliest: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The programs of each restart's window (programs first..last − 1, from the schedule's
    start, end and unit arrays) that end after `earliest` (its first window's lo: the others
    walk nothing in any of its windows), one row per restart in launch order, padded to the
    longest with programs of length 0 (start = end = 0)."""
    index = first[:, None] + np.arange(int((last - first).max()))
    inside = index < last[:, None]
    index = np.where(inside, index, 0)
    kept = inside & (end[index] > earliest[:, None])
    # the kept programs first, in launch order, then the row cut to the longest kept
    order = np.argsort(~kept, axis=1, kind="stable")[:, :max(1, int(kept.sum(axis=1).max()))]
    index, kept = np.take_along_axis(index, order, axis=1), np.take_along_axis(kept, order, axis=1)
    return (np.where(kept, start[index], 0), np.where(kept, end[index], 0),
            np.where(kept, unit[index], 0))


class _Restarts:
    """What restart_misses computes from the schedule alone (it does not depend on the bytes
    a step or a program's own tiles move, nor on the L2's size): the programs' starts, ends
    and heads, every restart with its windows, and each restart's distinct steps in its
    windows once computed. Kept for the points of a sweep that share (the programs' lengths,
    the heads scheduled, the slots): a measured training-step sweep asks 1,300 restart
    counts of 438 schedules (benchmarks/sweep_measured_speed.py backward; d, dtype and the
    heads beyond the scheduled ones change only the bytes)."""

    def __init__(self, lengths: tuple[int, ...], simulated: int, slots: int) -> None:
        starts, ends, heads = _schedule(lengths, simulated, slots)
        longest = max(lengths[0], lengths[-1])
        self.running = min(slots, len(starts))
        rows: list[list[int]] = []  # k, gap, first, last, head, length, lo × SAMPLES, hi × SAMPLES
        for k in range(1, len(starts)):
            if heads[k] != heads[k - 1] or starts[k] == starts[k - 1]:
                continue  # a head's first program (compulsory), or one started with its predecessor
            length = ends[k] - starts[k]
            # the tile at depth x: read by the predecessor at its start + x, by this program at
            # its start + x; in between, what every program walked (LRU: distinct tiles), at
            # SAMPLES depths at once (one window holding every sample's programs: the others
            # count 0)
            xs = [(2 * sample + 1) * length // (2 * SAMPLES) for sample in range(SAMPLES)]
            first = bisect.bisect_left(starts, starts[k - 1] + xs[0] - longest)
            last = bisect.bisect_right(starts, starts[k] + xs[-1])
            rows.append([k, starts[k] - starts[k - 1], first, last, heads[k], length,
                         *(starts[k - 1] + x for x in xs), *(starts[k] + x for x in xs)])
        table = np.array(rows, dtype=np.int64).reshape(len(rows), 6 + 2 * SAMPLES)
        self.gap, self.first, self.last = table[:, 1], table[:, 2], table[:, 3]
        self.head, self.length = table[:, 4].tolist(), table[:, 5].tolist()
        self.lo, self.hi = table[:, 6:6 + SAMPLES], table[:, 6 + SAMPLES:]
        self.start_at, self.end_at, self.unit_at = (np.array(x, dtype=np.int64)
                                                    for x in (starts, ends, heads))
        self.sorted_ends = np.sort(self.end_at)
        self.steps = np.zeros((len(rows), SAMPLES), dtype=np.int64)
        """Each restart's distinct steps in each of its SAMPLES windows, where `known`."""
        self.known = np.zeros(len(rows), dtype=bool)

    @property
    def size(self) -> int:
        """Programs and restarts held (what the cache bounds)."""
        return len(self.start_at) + len(self.known)

    def steps_of(self, chosen: np.ndarray) -> np.ndarray:
        """The distinct steps of the chosen restarts' windows (indices into the restarts), the
        ones not yet known computed RESTARTS_AT_ONCE at a time (a row's counts do not depend
        on the rows beside it: the heads' offsets and the padding only separate them)."""
        todo = chosen[~self.known[chosen]]
        for chunk in range(0, len(todo), RESTARTS_AT_ONCE):
            batch = todo[chunk:chunk + RESTARTS_AT_ONCE]
            windows = _windows(self.start_at, self.end_at, self.unit_at, self.first[batch],
                               self.last[batch], self.lo[batch, 0])
            self.steps[batch] = _distinct_steps_at(*windows, self.lo[batch], self.hi[batch])
            self.known[batch] = True
        steps: np.ndarray = self.steps[chosen]
        return steps


_KEPT: dict[tuple[tuple[int, ...], int, int], _Restarts] = {}
KEPT_SIZE = 1_000_000
"""Programs and restarts of the kept schedules, at most (about 100 MB; the oldest dropped
first): a training-step sweep's 438 schedules fit."""


def _restarts(lengths: tuple[int, ...], simulated: int, slots: int) -> _Restarts:
    key = (lengths, simulated, slots)
    kept = _KEPT.get(key)
    if kept is None:
        kept = _Restarts(lengths, simulated, slots)
        held = sum(r.size for r in _KEPT.values())
        while _KEPT and held + kept.size > KEPT_SIZE:
            held -= _KEPT.pop(next(iter(_KEPT))).size
        _KEPT[key] = kept
    return kept


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
    r = _restarts(tuple(lengths[j] for j in range(per_unit)), simulated,
                  min(slots, simulated * per_unit))
    # at most `running` programs walk distinct tiles in a window of `gap` steps, each starting
    # and ending in it: below the L2, every depth hits
    chosen = np.array([i for i, gap in enumerate(r.gap.tolist()) if not never_misses(
        r.running * (gap * tile_bytes + own_read + own_write), capacity)], dtype=np.intp)
    if not len(chosen):
        return 0.0
    missed = [0.0] * simulated
    owned = _owned_at(r.start_at, r.sorted_ends, r.lo[chosen], r.hi[chosen], own_read,
                      own_write).tolist()
    for i, n_row, o_row in zip(chosen.tolist(), r.steps_of(chosen).tolist(), owned,
                               strict=True):
        misses = sum(miss_probability(n * tile_bytes + o, capacity)
                     for n, o in zip(n_row, o_row, strict=True))
        missed[r.head[i]] += r.length[i] * misses / SAMPLES
    if simulated == units:
        return float(sum(missed))
    return float(sum(missed) + missed[-1] * (units - simulated))


def _schedule(lengths: Sequence[int], units: int,
              slots: int) -> tuple[list[int], list[int], list[int]]:
    """The units' programs in launch order, list-scheduled on `slots` (each takes the first
    slot to free): their starts (never decreasing), ends and units."""
    free = [0] * slots
    heapq.heapify(free)
    starts, ends, heads = [], [], []
    steps = [lengths[j] for j in range(len(lengths))]
    for unit in range(units):
        for length in steps:
            start = heapq.heappop(free)
            starts.append(start)
            ends.append(start + length)
            heads.append(unit)
            heapq.heappush(free, start + length)
    return starts, ends, heads
