"""bwd7's rules judged on the seventh fresh H200 set (fresh7_bwd.py): the grid's new-ness,
committed before the run, and (once the record is in) the report as measured. No GPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iosim.calibrate import torch_bwd_dram as D  # noqa: E402

pytest.importorskip("torch")  # the grid's BwdPoint lives in a module that imports torch
from benchmarks import backward_h200 as BH  # noqa: E402
from tests.fresh_sets import assert_fresh  # noqa: E402
from tests.seen_sets import AXES, ID, NEEDS_TORCH, backward_seen  # noqa: E402


def _fresh7_points() -> list:  # type: ignore[type-arg]
    torch_points, flash1, triton = BH.fresh7_grid()
    return [p for p, _, _ in torch_points] + flash1 + triton


@NEEDS_TORCH
def test_the_seventh_grid_is_new() -> None:
    assert_fresh(_fresh7_points(), ID,
                 backward_seen("backward-h200-fresh7.json", "fresh7_grid"), axes=AXES)


def test_the_seventh_grid_varies_every_axis() -> None:
    points = _fresh7_points()
    heads = [p.batch * p.heads for p in points]
    assert min(heads) < 8 and max(heads) >= 64
    assert {p.d for p in points} == {64, 128}
    assert any(p.kv_heads < p.heads for p in points)
    assert max(p.n for p in points) == 65536
    assert sum(p.n & (p.n - 1) != 0 for p in points) == len(points) - 1


FRESH7 = D.FRESH7


@pytest.mark.skipif(not FRESH7.exists(), reason="the seventh record is not in yet")
def test_the_record_is_the_grid() -> None:
    record = json.loads(FRESH7.read_text())
    assert {p["id"] for p in record["points"]} == {p.id for p in _fresh7_points()}


@pytest.fixture(scope="module")
def record() -> dict:  # type: ignore[type-arg]
    if not FRESH7.exists():
        pytest.skip("the seventh record is not in yet")
    return D.load([FRESH7])[0]


def test_the_record_is_checked_and_counted(record: dict) -> None:  # type: ignore[type-arg]
    assert record["counters"]["status"] == "ok" and not record["flash1_check_failed"]
    checked = [p for p in record["points"] if "check_rel_error" in p]
    assert len(checked) == 4 + 8  # Algorithm 4's and the Triton backward's points
    assert all(max(p["check_rel_error"].values()) < 1e-2 for p in checked)


def test_as_measured_on_the_seventh_set(record: dict) -> None:  # type: ignore[type-arg]
    """Measured, held out (reports/backward-h200.md, seventh set; bwd7's rules frozen at
    bwd7-frozen): DRAM s 48/74, a 24/25, d 5/9, t 23/27 (bwd6's rules: t 21/27, the rest the
    same); time s 6/8, a 4/4, d 4/4, t 4/5; the launcher floor 0 of 3 (−36 … −51 %, bwd6's
    kernels' time alone −64 … −87 %); the empty segments 0.89 and 0.48 MB."""
    from iosim.calibrate import fresh3_bwd as F3
    from iosim.calibrate import fresh7_bwd as F7
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    h200 = load_hardware(config_dir() / "h200.yaml")
    rows = F3.judged(record, h200, rules_before=F7.rules_bwd6, old_triton="bwd6")
    got = {(g, dram): F3.count_inside(rows, g, dram) for g in "sadt" for dram in (True, False)}
    # ("s", True): 48 before bwd8's out-of-place passes, 60 before bwd11's GEMM handover (seen),
    # 61 before bwd13's rules (calibrate/fresh12_bwd.py)
    assert got == {("s", True): (62, 74),
                   ("s", False): (6, 8), ("a", True): (24, 25),
                   ("a", False): (4, 4), ("d", True): (5, 9), ("d", False): (4, 4),
                   ("t", True): (23, 27), ("t", False): (4, 5)}
    assert F3.count_inside(rows, "t", dram=True, before=True) == (21, 27)
    floor = F7.floor_rows(record, h200)
    assert len(floor) == 3
    assert all(-0.52 < (f - m) / m < -0.35 for _, m, _, f, _, _ in floor)
    assert all(abs(f - m) < abs(k - m) for _, m, k, f, _, _ in floor)  # better than before
    empty = [s["residue_write_bytes"] for i in record["counters"]["items"]
             if i["what"] == "null" for s in i["segments"]]
    assert [round(e / 1e6, 2) for e in empty] == [0.89, 0.48]
