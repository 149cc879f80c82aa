"""estimates/sm_sharing.py: the list schedule where a program alone on its SM runs faster than
its slot, counted at launch (the rule used) and at each moment (the alternative), checked
against the slot schedule it extends, hand-derived cases, and an independent time-stepped
simulation of the SMs."""

from __future__ import annotations

import random

import pytest

from iosim.estimates.occupancy import makespan
from iosim.estimates.sm_sharing import moment_makespan, shared_makespan


def _simulate(lengths: list[float], sm_count: int, per_sm: int, lone_share: float,
              dt: float) -> float:
    """Time-stepped: every dt, each SM's running programs advance by dt × their rate (an SM
    with k of them gives each min(lone_share, 1/k) of the SM, in slot rates ×per_sm, never
    below its slot), and a waiting program takes any free place, first breadth first over
    the SMs (each SM one, then a second), later to the SM freed first."""
    running: list[list[float]] = [[] for _ in range(sm_count)]
    queue = list(lengths)
    for _ in range(per_sm):
        for sm in range(sm_count):
            if queue:
                running[sm].append(queue.pop(0))
    t = 0.0
    while any(running):
        t += dt
        for sm in range(sm_count):
            k = len(running[sm])
            if not k:
                continue
            rate = max(1.0, per_sm * min(lone_share, 1.0 / k))
            running[sm] = [r - dt * rate for r in running[sm]]
            finished = [r for r in running[sm] if r <= 1e-12]
            running[sm] = [r for r in running[sm] if r > 1e-12]
            for _ in finished:
                if queue:
                    running[sm].append(queue.pop(0))
    return t


def test_at_a_slot_s_share_it_is_the_slot_schedule() -> None:
    rng = random.Random(3)
    for _ in range(20):
        lengths = [rng.uniform(1.0, 5.0) for _ in range(rng.randint(1, 40))]
        for rule in (shared_makespan, moment_makespan):
            assert rule(lengths, 4, 2, 0.5) == pytest.approx(makespan(lengths, 8))


def test_counted_at_launch_only_an_sm_given_one_program_runs_it_faster() -> None:
    # 5 programs on 3 SMs × 2: SMs 0 and 1 hold two each (slot rate to the end: 4.0 and 3.0),
    # SM 2 one (6.0 at 2 × 0.75 of the slot: 4.0); a grid that fills the SMs is the slots'
    assert shared_makespan([4.0, 3.0, 6.0, 1.0, 2.0], 3, 2, 0.75) == pytest.approx(4.0)
    assert shared_makespan([9.0, 3.0, 6.0, 1.0, 2.0], 3, 2, 0.75) == pytest.approx(9.0)
    lengths = [1.0, 2.0, 3.0] * 5
    assert shared_makespan(lengths, 3, 2, 0.9) == makespan(lengths, 6)


def test_a_grid_below_one_program_per_sm_runs_every_program_alone() -> None:
    # each program has its SM to itself: its slot time over per_sm · lone_share
    for rule in (shared_makespan, moment_makespan):
        assert rule([3.0, 6.0, 2.0], 4, 2, 0.9) == pytest.approx(6.0 / 1.8)


def test_counted_at_each_moment_the_survivor_of_two_runs_alone() -> None:
    # SM 0 holds 2.0 and 4.0 (programs 0 and 2 of three on two SMs): both at the slot rate
    # until 2.0, then 2.0 s of slot work alone at 1.5 × the slot: 2 + 2/1.5
    assert moment_makespan([2.0, 1.0, 4.0], 2, 2, 0.75) == pytest.approx(2.0 + 2.0 / 1.5)


@pytest.mark.parametrize("seed", range(6))
def test_counted_at_each_moment_it_is_the_time_stepped_simulation(seed: int) -> None:
    rng = random.Random(seed)
    lengths = [rng.uniform(1.0, 4.0) for _ in range(rng.randint(3, 30))]  # no ties
    share = rng.choice([0.6, 0.8, 1.0])
    dt = 1e-3
    got = moment_makespan(lengths, 3, 2, share)
    assert got == pytest.approx(_simulate(lengths, 3, 2, share, dt), abs=40 * dt)
