"""Many list schedules at once (estimates/list_schedule.py) against the heap, one program at a
time (occupancy.makespan): the same double, not an approximation of it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.estimates.list_schedule import RepeatedLaunch, repeated_makespans
from iosim.estimates.occupancy import makespan
from tests.conftest import examples

_LENGTH = st.one_of(
    st.floats(1e-7, 1e-3, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.25, 0.5, 0.75, 1.0]),  # exact sums: ties between slots
)


_LAUNCHES = st.lists(st.tuples(st.lists(_LENGTH, min_size=1, max_size=12),
                               st.integers(1, 9), st.integers(0, 30)),
                     min_size=1, max_size=6)


# the README run samples the ci profile's share of 200 examples (examples); `pytest -m slow` all 200
@settings(max_examples=examples(200), deadline=None)
@given(launches=_LAUNCHES)
def test_every_launch_is_the_heap_schedule(launches):
    every_launch_is_the_heap_schedule(launches)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(launches=_LAUNCHES)
def test_every_launch_is_the_heap_schedule_at_200_examples(launches):
    every_launch_is_the_heap_schedule(launches)


def every_launch_is_the_heap_schedule(launches):
    """Random head programs (distinct lengths, repeated ones, equal ones), slots and head counts,
    several launches at once (sharing a run where lengths and slots agree)."""
    given_launches = [RepeatedLaunch(tuple(lengths), repeats, slots)
                      for lengths, slots, repeats in launches]
    # the same lengths and slots at other head counts too: one run answers several counts
    given_launches += [RepeatedLaunch(launch.lengths, launch.repeats * 3 + 1, launch.slots)
                       for launch in given_launches]
    got = repeated_makespans(given_launches).tolist()
    want = [makespan(list(launch.lengths) * launch.repeats, launch.slots)
            for launch in given_launches]
    assert got == want


def test_causal_backward_launches_are_the_reference_schedule():
    """The Triton backward's causal kernels (decreasing and increasing program lengths) at the
    fitted H200 schedule, several head counts and both programs-per-SM values of the H200
    profile: scheduled_compute_s (the heap) equals the batched schedule bit for bit."""
    from iosim.algorithms import get_algorithm
    from iosim.estimates.roofline import roofs_for
    from iosim.estimates.schedule import scheduled_compute_s, scheduled_launch
    from iosim.inputs.gpus import resolve_hardware
    from iosim.inputs.workload import Workload

    roofs = roofs_for(resolve_hardware("h200").hardware, "fp16", "measured")
    schedule, sm_count = roofs.schedule, roofs.sm_count
    assert schedule is not None and sm_count is not None
    peaks = {"matmul_peak": roofs.matmul_flops_per_s, "vector_peak": roofs.vector_flops_per_s}
    launches, want = [], []
    for n, d, heads, batch in ((1280, 64, 8, 4), (3000, 128, 16, 1), (768, 64, 1, 1),
                               (2048, 128, 64, 2)):
        w = Workload(n, d=d, heads=heads, batch=batch, causal=True, pass_="bwd")
        for kernel in get_algorithm("triton").kernels(w):
            if kernel.kind != "fused" or not kernel.name.startswith("bwd_"):
                continue
            args = (kernel, w, None, schedule)
            launches.append(scheduled_launch(*args, sm_count=sm_count, **peaks))
            want.append(scheduled_compute_s(*args, sm_count=sm_count, **peaks))
    assert len(set(launch.lengths for launch in launches)) > 4  # unequal programs, simulated
    assert repeated_makespans(launches).tolist() == want
