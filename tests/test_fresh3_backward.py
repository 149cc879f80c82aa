"""bwd4's rules against the third fresh H200 record (tests/data/backward-h200-fresh3.json,
`python3 benchmarks/backward_h200.py OUT --fresh3` on the lent H200, one call, 51 s,
benchmarks/backward-h200-fresh3/): its points written and committed before the run, the rules
frozen at the tag `bwd4-frozen`; iosim's figures against it as measured there
(fresh3_bwd.py). No GPU."""

from __future__ import annotations

from operator import itemgetter

import pytest

from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import fresh5_bwd as F5
from iosim.calibrate import fresh_bwd as FB
from iosim.calibrate import torch_bwd_fit as F
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware_yaml import load_hardware
from tests.fresh_sets import assert_fresh
from tests.seen_sets import NEEDS_TORCH, RECORD_AXES, backward_seen


@pytest.fixture(scope="module")
def record() -> dict:
    return F.load([F.FRESH3])[0]


@pytest.fixture(scope="module")
def rows(record: dict) -> list[FB.Judged]:
    return F3.judged(record, load_hardware(config_dir() / "h200.yaml"))


@NEEDS_TORCH
@pytest.mark.parametrize("n", ["3", "4"])
def test_the_third_and_fourth_fresh_sets_are_new(n: str) -> None:
    record = F.load([getattr(F, f"FRESH{n}")])[0]
    assert_fresh(record["points"], itemgetter("id"),
                 backward_seen(f"backward-h200-fresh{n}.json", f"fresh{n}_grid"),
                 size=(8, None), axes=RECORD_AXES)


def test_the_third_fresh_set_varies_every_gap(record: dict) -> None:
    assert record["counters"]["status"] == "ok" and not record["flash1_check_failed"]
    points = record["points"]
    by_gap = {g: [p for p in points if p["gap"] == g] for g in "sadt"}
    assert any(p["n"] % 8 for p in by_gap["s"]) and {p["d"] for p in by_gap["s"]} == {64, 128}
    assert all(p["causal"] and p["d"] == 64 and p["n"] >= 50000 for p in by_gap["a"])
    flash1 = by_gap["d"]
    assert any(p["batch"] * p["heads"] > record["sm_count"] for p in flash1)
    assert any(p["batch"] * p["heads"] < record["sm_count"] for p in flash1)
    triton = by_gap["t"]
    assert all(p["batch"] * p["heads"] < record["sm_count"] for p in triton)
    assert all(max(p["check_rel_error"].values()) < 1e-2 for p in flash1 + triton)
    assert {p["dtype"] for p in points} == {"fp16", "bf16"}
    assert any(p["kv_heads"] < p["heads"] for p in points)


def test_algorithm_4_time_held_out(rows: list[FB.Judged]) -> None:
    """Measured: the per-tile latency model (estimates/alg4_time.py, fitted on the first fresh
    set) within ±15 % at 7 of 7 held-out points (−6.1 % to +5.7 % as frozen at bwd4-frozen;
    −6.9 % to +6.3 % refitted on the same first set with bwd5's DRAM estimate); flash1's roofline ÷
    utilisation, the rule before, at 2 of 7 (−67 % where one program per head runs alone)."""
    assert F3.count_inside(rows, "d", dram=False) == (7, 7)
    assert F3.count_inside(rows, "d", dram=False, before=True) == (2, 7)


def test_small_kernels_with_the_dirty_line_ledger(rows: list[FB.Judged]) -> None:
    """Measured: of the small backwards' 102 kernels and whole backwards, 83 within their
    bound with the ledger, 55 with the handover to the next kernel alone; FA2's main kernel at
    6 of 7 points within ±10 % (the GQA 4/2 point −19 %), +64 to +67 % before."""
    # 83 before bwd8's out of place, 84 before bwd11's GEMM handover (estimates/l2_handover.py),
    # 90 before bwd13's rules (calibrate/fresh12_bwd.py)
    assert F3.count_inside(rows, "s", dram=True) == (91, 102)
    assert F3.count_inside(rows, "s", dram=True, before=True) == (63, 102)  # 55 in place, 58
    main = [r for r in rows if r.gap == "s" and r.quantity == "DRAM bwd_attn"]
    assert len(main) == 7 and sum(abs(r.error) <= 0.10 for r in main) == 6


def test_init_kernel_and_fa2_d64_long_causal_as_measured(rows: list[FB.Judged]) -> None:
    """Measured: Algorithm 4's init kernel within ±10 % (or 0.1 MB) at 7 of 7 (before: the
    four of 46-364 MB under by 3-27 %). FA2's causal main kernel at d = 64, N >= 50,000: with
    bwd4's frozen rules outside ±10 % at all three points (−12 %, +15 %, −27 % GQA 8/2); with
    bwd5's soft L2 cutoff (estimates/l2_cutoff.py, fitted on this set among the seen ones, so
    not a held-out judgement: backward-h200-fresh5.json is) and the GQA group's K/V re-read by
    each query head (l2.py `_group_rereads`), within it at all three (−4.5 %, +9.2 %, −7.6 %)."""
    init = [r for r in rows if r.quantity == "DRAM bwd_init"]
    assert len(init) == 7 and all(F3.inside(r) for r in init)
    main = [r for r in rows if r.gap == "a" and r.quantity == "DRAM bwd_attn"]
    assert len(main) == 3 and all(abs(r.error) <= 0.10 for r in main)
    with F5.rules_bwd4():
        frozen = F3.judged(F.load([F.FRESH3])[0], load_hardware(config_dir() / "h200.yaml"))
    main = [r for r in frozen if r.gap == "a" and r.quantity == "DRAM bwd_attn"]
    assert len(main) == 3 and not any(abs(r.error) <= 0.10 for r in main)
    sdpa = [r for r in rows if r.gap == "a" and r.quantity == "time"]
    assert len(sdpa) == 3 and all(abs(r.error) <= 0.15 for r in sdpa)


def test_the_report_lists_every_point(record: dict) -> None:
    text = F3.report(record, load_hardware(config_dir() / "h200.yaml"), with_sensitivity=False)
    assert all(p["id"] in text for p in record["points"])
    assert text.count("### ") == 4


def test_the_triton_backward_at_small_n_on_a_fourth_set() -> None:
    """Measured (tests/data/backward-h200-fresh4.json, `python3 benchmarks/backward_h200.py OUT
    --fresh4`, one call, 50 s; eight points of 0.23-0.57 ms below one wave, written before the
    run): the schedule frozen at bwd4-frozen within ±15 % at 8 of 8 (−5.2 % to +7.8 %); the
    constants before bwd4 at 7 of 8 (+15.1 %)."""
    record = F.load([F.FRESH4])[0]  # new: test_the_third_and_fourth_fresh_sets_are_new
    assert all(p["batch"] * p["heads"] < record["sm_count"] for p in record["points"])
    rows = F3.judged(record, load_hardware(config_dir() / "h200.yaml"))
    assert F3.count_inside(rows, "t", dram=False) == (8, 8)
    assert F3.count_inside(rows, "t", dram=False, before=True) == (7, 8)
