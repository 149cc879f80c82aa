"""Many list schedules at once, bit for bit `occupancy.makespan` of each: the sweep's Triton backward.

A kernel's launch repeats one head's programs batch · heads times (estimates/schedule.py), and
`makespan` places them one by one on a heap: 125 million heap steps for the 10,000 points of
`python benchmarks/sweep_measured_speed.py backward`, two minutes of CPU. Here the same schedule
is computed for every (head's program lengths, slots) of a sweep at once, in NumPy, with the
same floating-point additions in the same places, so each result is the reference's own double
(tests/test_list_schedule.py holds the two equal on random and on causal-backward launches):

1. Slots are interchangeable: what the heap holds is a multiset of free times, and a program
   goes to a smallest one (with several equal, any: the multiset after is the same).
2. With the free times sorted, F_0 <= F_1 <= ..., the next programs l_0, l_1, ... go to F_0,
   F_1, ... in turn for as long as F_j <= min(F_i + l_i for i < j): program j then finds no
   smaller free time than F_j among the old ones (sorted) nor the new ones. So each step
   assigns the longest such run at once (at least one program: F_0 always qualifies), each new
   free time F_j + l_j being the very addition the heap makes, and sorts again.
3. The schedule is online: the first H·m programs of a launch of H' > H heads are scheduled as a
   launch of H heads is. So every head count a sweep asks of one (lengths, slots) is read off
   one run, as the largest free time (the reference's `max(free)`) after its H·m programs.
4. What `makespan` answers without its heap is answered as it does: at most `slots` programs,
   the longest; programs all of one length, ⌈programs / slots⌉ times it.

The runs of one slot count step together, one row of a (runs × slots) array each, so a step's
NumPy calls serve every run; a run leaves the array when its last head count is read. On that
sweep one step assigns about one head's programs (half a head where a head has more programs
than half the slots and they lengthen), and its 200 causal runs take up to 16,384 steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iosim.record import Record


class RepeatedLaunch(Record):
    """A launch of `repeats` copies of one head's programs (`lengths`, in launch order, seconds)
    on `slots` slots: its list schedule is makespan(list(lengths) * repeats, slots)."""

    lengths: tuple[float, ...]
    repeats: int
    slots: int
    per_sm: int = 1
    lone_share: float | None = None
    """Where set, an SM's programs share its rate (estimates/sm_sharing.py): the launch is
    scheduled by shared_makespan, point by point, not by the slot schedule above."""


def launch_makespan(launch: RepeatedLaunch) -> float:
    """One launch's schedule: occupancy.makespan, or sm_sharing.shared_makespan where its SMs'
    programs share their rate (`lone_share`)."""
    from iosim.estimates.occupancy import makespan
    from iosim.estimates.sm_sharing import shared_makespan

    lengths = list(launch.lengths) * launch.repeats
    if launch.lone_share is None:
        return makespan(lengths, launch.slots)
    return shared_makespan(lengths, launch.slots // launch.per_sm, launch.per_sm,
                           launch.lone_share)


def repeated_makespans(launches: Sequence[RepeatedLaunch]) -> np.ndarray:
    """makespan(list(l.lengths) * l.repeats, l.slots) of each launch, exactly (module docstring)."""
    out = np.zeros(len(launches))
    wanted: dict[tuple[tuple[float, ...], int], dict[int, list[int]]] = {}
    for at, launch in enumerate(launches):
        programs = len(launch.lengths) * launch.repeats
        if launch.lone_share is not None:
            out[at] = launch_makespan(launch)
        elif programs <= launch.slots:
            out[at] = max(launch.lengths, default=0.0) if launch.repeats > 0 else 0.0
        elif min(launch.lengths) == max(launch.lengths):
            out[at] = -(-programs // launch.slots) * launch.lengths[0]
        else:
            runs = wanted.setdefault((launch.lengths, launch.slots), {})
            runs.setdefault(programs, []).append(at)
    # runs of one slot count step together (a row as wide as the widest run's slots: padding
    # narrower runs to it cost a quarter more work on the sweep of the module docstring)
    for width in sorted({slots for _, slots in wanted}):
        group = [(key, counts) for key, counts in wanted.items() if key[1] == width]
        for (_, counts), values in zip(group, _run_all(group), strict=True):
            for programs, ats in counts.items():
                out[ats] = values[programs]
    return out


def _run_all(runs: list[tuple[tuple[tuple[float, ...], int], dict[int, list[int]]]]
             ) -> list[dict[int, float]]:
    """Per run ((lengths, slots), program counts asked): the largest free time after each count
    of programs, all runs stepping together (rule 2 of the module docstring)."""
    rows = len(runs)
    width = max(slots for (_, slots), _ in runs)
    period = np.array([len(lengths) for (lengths, _), _ in runs], dtype=np.int64)
    slots = np.array([s for (_, s), _ in runs], dtype=np.int64)
    # each row's lengths repeated past `width` more programs: a step's window is one slice
    extent = int(period.max()) + width
    pattern = np.empty((rows, extent))
    for r, ((lengths, _), _) in enumerate(runs):
        pattern[r] = np.resize(np.asarray(lengths, dtype=np.float64), extent)
    targets = [sorted(counts) for _, counts in runs]
    results: list[dict[int, float]] = [{} for _ in runs]
    column = np.arange(width)
    free = np.where(column < slots[:, None], 0.0, np.inf)
    done = np.zeros(rows, dtype=np.int64)
    next_target = np.array([t[0] for t in targets], dtype=np.int64)
    which = np.zeros(rows, dtype=np.int64)  # index into targets of each row's next count
    ids = np.arange(rows)  # the run each row of the arrays is
    before = np.empty_like(free)
    before[:, 0] = np.inf
    while len(ids):
        start = (np.arange(len(ids)) * extent + done % period)[:, None] + column
        ended = free + pattern.reshape(-1)[start]
        # before[:, j] = min(ended[:, :j]): a new free time that may come before F_j
        np.minimum.accumulate(ended[:, :-1], axis=1, out=before[:, 1:])
        takes = (free <= before) & (column < np.minimum(slots, next_target - done)[:, None])
        stops = ~takes
        count = np.where(stops.any(axis=1), stops.argmax(axis=1), width)
        free = np.where(column < count[:, None], ended, free)
        free.sort(axis=1)
        done += count
        reached = np.flatnonzero(done == next_target)
        if not len(reached):
            continue
        keep = np.ones(len(ids), dtype=bool)
        for row in reached.tolist():
            run = int(ids[row])
            results[run][int(done[row])] = float(free[row, slots[row] - 1])
            which[row] += 1
            if which[row] < len(targets[run]):
                next_target[row] = targets[run][which[row]]
            else:
                keep[row] = False
        if not keep.all():
            ids, period, slots, done = ids[keep], period[keep], slots[keep], done[keep]
            next_target, which = next_target[keep], which[keep]
            pattern, free, before = pattern[keep], free[keep], before[keep]
    return results


__all__ = ["RepeatedLaunch", "launch_makespan", "repeated_makespans"]
