"""bwd9's eager host floor (calibrate/eager_host_floor.py): its constants as fitted on the seen
records, and the ninth fresh set's grid (fresh9_bwd.py), new against every earlier record and
grid, committed before the run. No GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iosim.calibrate import eager_host_floor as HF  # noqa: E402
from iosim.calibrate import torch_bwd_dram as D  # noqa: E402
from iosim.inputs.gpus import config_dir  # noqa: E402
from iosim.inputs.hardware_yaml import load_hardware  # noqa: E402
from tests.fresh_sets import assert_fresh  # noqa: E402
from tests.seen_sets import AXES, ID, NEEDS_TORCH, backward_grid, backward_seen  # noqa: E402


@pytest.fixture(scope="module")
def h200():  # type: ignore[no-untyped-def]
    return load_hardware(config_dir() / "h200.yaml")


def test_launches_count_gqas_two_sums() -> None:
    """The records' ncu lists (backward-h200-fresh8.json): 7 kernels non-causal, 8 causal,
    9 GQA non-causal (fp16/n1650/d128/b1h6kv3), 10 GQA causal (bf16/n1800/d128/b2h4kv2)."""
    plain = ["bwd_dv", "bwd_dp", "bwd_softmax_mul", "bwd_softmax", "bwd_scale", "bwd_dq", "bwd_dk"]
    assert HF.launches(plain) == 7
    assert HF.launches([*plain, "bwd_mask"]) == 8
    assert HF.launches([*plain, "bwd_sum_dkdv"]) == 9
    assert HF.launches([*plain, "bwd_mask", "bwd_sum_dkdv"]) == 10


def test_the_floor_is_the_longer_of_host_and_kernels() -> None:
    names = ["k"] * 7
    host = HF.HOST_CALL_S + 7 * HF.HOST_PER_LAUNCH_S
    assert HF.floored(1e-6, names) == pytest.approx(host)
    assert HF.floored(10 * host, names) == pytest.approx(10 * host)


def test_the_constants_are_the_fit_on_the_seen_records(h200) -> None:  # type: ignore[no-untyped-def]
    from iosim.calibrate import fresh9_bwd as F9

    points = F9.seen_points(h200)
    assert len(points) >= 70
    assert HF.fit_host_floor(points) == pytest.approx((HF.HOST_CALL_S, HF.HOST_PER_LAUNCH_S))


FRESH9 = D.DATA / "backward-h200-fresh9.json"


@NEEDS_TORCH
def test_the_ninth_grid_is_new() -> None:
    pytest.importorskip("torch")  # the grid's BwdPoint lives in a module that imports torch
    from benchmarks import backward_h200 as BH

    assert_fresh(backward_grid("fresh9_grid"), ID,
                 backward_seen("backward-h200-fresh9.json", "fresh9_grid"), size=(10, 14),
                 axes=AXES)
    assert all(eager for _, eager, _ in BH.fresh9_grid())


def test_the_ninth_grid_varies_every_axis(h200) -> None:  # type: ignore[no-untyped-def]
    """Most points where the floor decides (the frozen kernels' time under it), 3-4 where it
    must not; every axis varied."""
    pytest.importorskip("torch")
    from benchmarks import backward_h200 as BH
    from iosim.calibrate import torch_bwd_fit as F

    points = [p for p, _, _ in BH.fresh9_grid()]
    assert {p.d for p in points} == {64, 128}
    assert {p.causal for p in points} == {True, False}
    assert {p.dtype for p in points} == {"fp16", "bf16"}
    assert any(p.kv_heads < p.heads for p in points)
    assert all(p.n & (p.n - 1) != 0 for p in points)
    heads = [p.batch * p.heads for p in points]
    assert min(heads) == 1 and max(heads) >= 24
    rows = [{"id": p.id, **p.fields()} for p in points]
    kernels = [F.predict_time(r, "eager", h200, F.EAGER_TIME, host_floor=False) for r in rows]
    floored = [F.predict_time(r, "eager", h200, F.EAGER_TIME) for r in rows]
    assert sum(0.1e-3 <= k <= 1e-3 and f > k for k, f in zip(kernels, floored, strict=True)) >= 8
    assert 3 <= sum(k >= 1e-3 and f == k for k, f in zip(kernels, floored, strict=True)) <= 4


def test_the_ninth_record_as_judged(h200) -> None:  # type: ignore[no-untyped-def]
    """backward-h200-fresh9.json (`python3 benchmarks/backward_h200.py OUT --fresh9 --no-ncu`,
    H200, torch 2.11.0+cu130): eager's time within ±20 % above 0.2 ms at 10 of 13 points with
    the frozen floor, 8 of 13 without; nothing fitted on it."""
    if not FRESH9.exists():
        pytest.skip("the ninth record is not in yet")
    from iosim.calibrate import fresh9_bwd as F9

    record = D.load([FRESH9])[0]
    rows = F9.rows(record, h200)
    assert len(rows) == 13
    judged = [r for r in rows if r[1] >= HF.JUDGED_ABOVE_S]
    assert sum(abs(f - m) <= HF.BOUND * m for _, m, f, _, _ in judged) == 10
    assert sum(abs(no - m) <= HF.BOUND * m for _, m, _, no, _ in judged) == 8
    big = [r for r in rows if r[3] >= 1e-3]  # GPU-bound: the floor leaves them alone
    assert len(big) == 4 and all(f == no for _, _, f, no, _ in big)
