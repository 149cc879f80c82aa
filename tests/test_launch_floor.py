"""The Python launcher's floor (estimates/launch_floor.py) against its record: the H200's
launch-floor probe (tests/data/launch-floor-h200.json, benchmarks/launch_floor_h200.py on the
lent H200, the call after fresh6). No GPU."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median

import numpy as np
import pytest

from iosim.estimates import launch_floor as LF

RECORD = Path(__file__).parent / "data" / "launch-floor-h200.json"


@pytest.fixture(scope="module")
def record() -> dict:  # type: ignore[type-arg]
    return json.loads(RECORD.read_text())


def test_launch_cost_is_the_least_squares_line_over_the_trivial_launches(record) -> None:  # type: ignore[no-untyped-def]
    rows = record["trivial"]
    a = np.array([[1.0, r["args"]] for r in rows])
    y = np.array([r["host_per_launch_s"] for r in rows])
    fixed, per_arg = np.linalg.lstsq(a, y, rcond=None)[0]
    assert pytest.approx(fixed, abs=0.1e-6) == LF.LAUNCH_FIXED_S
    assert pytest.approx(per_arg, abs=0.01e-6) == LF.LAUNCH_PER_TENSOR_S


def test_wrapper_and_head_start_reproduce_the_d64_calls(record) -> None:  # type: ignore[no-untyped-def]
    calls = [b for b in record["backward"] if b["d"] == 64]
    segments = median(sum(b["segment_median_s"]) for b in calls)
    launches = sum(LF.launch_s(t) for t in (3, 8, 7))
    assert pytest.approx(segments - launches, abs=0.5e-6) == LF.WRAPPER_S
    hidden = median(sum(b["segment_median_s"]) + 4e-6 - b["do_bench_s"] for b in calls)
    assert pytest.approx(hidden, abs=0.5e-6) == LF.HEAD_START_S
    # and so the floor of such a call is its do_bench time, within the calls' own spread
    floor = LF.launched_time([(1e-6, 3), (4e-6, 8), (4e-6, 7)])
    spread = [b["do_bench_s"] for b in calls]
    assert min(spread) * 0.9 <= floor <= max(spread) * 1.1


def test_a_gpu_bound_backward_is_its_kernels_and_a_tiny_one_the_host() -> None:
    long = [(1e-5, 3), (2e-3, 8), (1e-3, 7)]
    assert LF.launched_time(long) == pytest.approx(sum(g for g, _ in long))
    tiny = [(1e-6, 3), (1e-6, 8), (1e-6, 7)]
    host = LF.WRAPPER_S + sum(LF.launch_s(t) for _, t in tiny) - LF.HEAD_START_S + 1e-6
    assert LF.launched_time(tiny) == pytest.approx(host)
    assert LF.launched_time(tiny, host_scale=1.25) > LF.launched_time(tiny)
    # a fourth launch (GQA's group sum) raises the floor by one launch
    assert LF.launched_time([*tiny, (1e-6, 4)]) == pytest.approx(host + LF.launch_s(4))
