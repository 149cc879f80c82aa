"""The list schedule of estimates/occupancy.py where a program with its SM to itself runs faster
than one of the SM's `per_sm` slots.

Why: the slots of estimates/schedule.py each run at 1/per_sm of their SM's rate, the rate an
SM reaches when all its slots are busy. A program alone on its SM gets the SM's whole issue
rate and shared-memory bandwidth, less the latencies it cannot hide alone: it reaches a share
`lone_share` of the SM's rate (1/per_sm ≤ lone_share ≤ 1; 1/per_sm is the slot model, 1 a
program that alone saturates its SM). With k programs on an SM each runs at

    rate(k) = max(1, per_sm · min(lone_share, 1/k))

times its slot's rate. Measured where this matters: FlexAttention's d 64 template at 2
programs per SM (tests/data/h200-impl-flexfresh8.json #1 and #7, grids of 110 and 50 programs
on 132 SMs, whose kernels ran 1.46× and 1.64× faster than the slot model said).

When k is counted (`shared_makespan`, the rule shipped): at launch. A grid of at most
sm_count · per_sm programs is placed breadth first (program i on SM i mod sm_count, the block
scheduler filling every SM before any second program), and each program runs at rate(k) of
the k its SM was given, to its end; a larger grid fills every SM, so it is the slot schedule
(`makespan`). The alternative, k counted at each moment (`moment_makespan`: once an SM's other
programs end, the survivor speeds up), fits the seen records worse (benchmarks/flex9_fit.py
--moment: summed |log error| 2.84 against 2.41 on their 49 kernels, about 3.1 with no lone
rule; the causal d 64 grids' tails, whose survivors it speeds up, pull efficiency_d64 from 1.0
to 0.81, and the full-wave d 64 kernels come out 15-19 points higher): it is kept to report
what it would have given, not used. Why the measured survivor does not speed up is not known;
the rule is what the seen records support. Judged fresh: docs/implementations.md (round 9).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from iosim.estimates.occupancy import makespan


def sharing_rate(k: int, per_sm: int, lone_share: float) -> float:
    """A program's rate, in its slot's rate, with k programs on its SM (module docstring)."""
    return max(1.0, per_sm * min(lone_share, 1.0 / k))


def _drain(started_s: float, remaining: list[float], per_sm: int, lone_share: float) -> float:
    """When an SM whose programs have `remaining` slot-seconds left at `started_s` ends."""
    t, done = started_s, 0.0
    left = sorted(remaining)
    for i, r in enumerate(left):
        t += (r - done) / sharing_rate(len(left) - i, per_sm, lone_share)
        done = r
    return t


def shared_makespan(lengths: Sequence[float], sm_count: int, per_sm: int,
                    lone_share: float) -> float:
    """When the last program ends, its SM's share counted at launch (module docstring);
    `lengths` are each program's seconds at its slot's rate, in launch order."""
    if len(lengths) > sm_count * per_sm:
        return makespan(lengths, sm_count * per_sm)
    by_sm: list[list[float]] = [[] for _ in range(sm_count)]
    for i, length in enumerate(lengths):
        by_sm[i % sm_count].append(length)
    return max((max(r) / sharing_rate(len(r), per_sm, lone_share) for r in by_sm if r),
               default=0.0)


def moment_makespan(lengths: Sequence[float], sm_count: int, per_sm: int,
                    lone_share: float) -> float:
    """When the last program ends, its SM's share counted at each moment (module docstring:
    the alternative not used); `lengths` as shared_makespan's."""
    slots = sm_count * per_sm
    if not lengths:
        return 0.0
    if len(lengths) <= slots:
        by_sm: list[list[float]] = [[] for _ in range(sm_count)]
        for i, length in enumerate(lengths):
            by_sm[i % sm_count].append(length)
        return max(_drain(0.0, r, per_sm, lone_share) for r in by_sm if r)
    free = [(float(lengths[i]), i) for i in range(slots)]
    heapq.heapify(free)
    placed_s = 0.0
    for length in lengths[slots:]:
        placed_s, slot = heapq.heappop(free)
        heapq.heappush(free, (placed_s + length, slot))
    ends: list[list[float]] = [[] for _ in range(sm_count)]
    for end, slot in free:
        ends[slot % sm_count].append(end - placed_s)
    return max(_drain(placed_s, r, per_sm, lone_share) for r in ends)
