"""Issue 10's open gaps against the fresh H200 record (tests/data/backward-h200-fresh.json,
`python3 benchmarks/backward_h200.py OUT --fresh` on the lent H200, one call,
benchmarks/backward-h200-fresh/run.log): the record's schema and grid, and iosim's figures
against it as measured there (fresh_bwd.py). No GPU."""

from __future__ import annotations

from operator import itemgetter

import pytest

from iosim.calibrate import fresh_bwd as FB
from iosim.calibrate import torch_bwd_fit as F
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware_yaml import load_hardware
from tests.fresh_sets import assert_fresh
from tests.seen_sets import NEEDS_TORCH, RECORD_AXES, backward_seen


@pytest.fixture(scope="module")
def record() -> dict:
    return F.load([F.FRESH])[0]


@pytest.fixture(scope="module")
def rows(record: dict) -> list[FB.Judged]:
    return FB.judged(record, load_hardware(config_dir() / "h200.yaml"))


def test_the_fresh_grid_varies_what_each_gap_needs(record: dict) -> None:
    points = record["points"]
    assert record["counters"]["status"] == "ok" and not record["flash1_check_failed"]
    by_gap = {g: [p for p in points if p["gap"] == g] for g in "abcd"}
    assert all(p["causal"] and p["n"] >= 32768 for p in by_gap["a"])
    assert {p["d"] for p in by_gap["a"]} == {64, 128} and any(p["kv_heads"] < p["heads"]
                                                              for p in by_gap["a"])
    assert all(p["causal"] and "eager_s" in p for p in by_gap["b"])
    assert {p["n"] % 2 for p in by_gap["c"]} == {0, 1} and all(p["n"] % 8 for p in by_gap["c"])
    flash1 = by_gap["d"]
    assert any(p["batch"] * p["heads"] < record["sm_count"] for p in flash1)
    assert any(p["batch"] * p["heads"] > record["sm_count"] for p in flash1)
    # per-head sweeps (Q, O, dO, dQ) of the running heads beyond the 60 MiB L2, and within it
    sweep = [p["batch"] * p["heads"] * 4 * p["n"] * p["d"] * 2 for p in flash1]
    assert max(sweep) > 2 * record["l2_bytes"] and min(sweep) < record["l2_bytes"] / 4
    assert all(max(p["check_rel_error"].values()) < 1e-2 for p in flash1)  # checked first


def test_every_algorithm_4_run_maps_onto_the_flash1_loop_nest(rows: list[FB.Judged]) -> None:
    """ncu's launches of kernels_fa1_bwd (init, the fused kernel, the GQA sum) are iosim's
    flash1 backward kernels one for one (flash1_rows refuses a mismatch)."""
    kernels = {r.quantity for r in rows if r.gap == "d" and r.quantity.startswith("DRAM")}
    assert kernels == {"DRAM bwd_init", "DRAM bwd_attn", "DRAM bwd_sum_dkdv"}


def test_algorithm_4_dram_as_measured(rows: list[FB.Judged]) -> None:
    """Measured: iosim's serial-sweeps estimate of Alg. 4's fused kernel within ±10 % of ncu
    at 8 of 9 points; the miss is bf16 N = 3000, 12 causal heads, whose sweeps (36 MiB) the
    model keeps in the L2 and the GPU reads 1.66 times (−40 %)."""
    fused = [r for r in rows if r.quantity == "DRAM bwd_attn" and r.what == "flash1"]
    assert len(fused) == 9
    outside = [r for r in fused if abs(r.error) > 0.10]
    assert [r.point for r in outside] == ["bf16/n3000/d128/b1h12kv12/causal"]


def test_fa2_causal_long_sequences_as_measured(rows: list[FB.Judged]) -> None:
    """Measured: FA2's main kernel at causal N >= 32768 within ±10 % at every point (GQA
    6/2 −7.9 %); at d = 64, N = 65536 the GPU reads 1.4 times what the ideal LRU predicts
    (−28 %), +4 % with the restarts' capacity share (l2_restarts.RESTART_CAPACITY_SHARE,
    fitted on these points among others: seen, not judged). SDPA's time within ±15 % at
    every fresh point."""
    main = {r.point: r.error for r in rows if r.gap == "a" and r.quantity == "DRAM bwd_attn"}
    assert len(main) == 5 and all(abs(e) <= 0.10 for e in main.values())
    sdpa = [r for r in rows if r.what == "sdpa" and r.quantity == "time"
            and r.measured >= F.LAUNCH_BOUND_S]
    assert len(sdpa) == 16 and all(abs(r.error) <= 0.15 for r in sdpa)


def test_eager_mask_pass_and_unaligned_time_as_measured(rows: list[FB.Judged]) -> None:
    """Measured: the mask pass with its broadcast mask within ±10 % at 5 of 6 fresh points
    (−12 % at N = 4096, d = 64, 2 × 4 heads, where a head's stream, 50 MB, is held to fit the
    L2; without the mask read: −15 % to −17 % wherever the stream overflows it); eager's time
    at N % 8 != 0 with
    the fallback rule within ±20 % (chosen after seeing these points), −32 to −59 % without."""
    mask = [r for r in rows if r.quantity == "DRAM bwd_mask"]
    assert len(mask) == 6 and all(abs(r.error) <= 0.13 for r in mask)
    assert sum(abs(r.error) <= 0.10 for r in mask) == 6  # 5 before bwd8's out-of-place passes
    eager = [r for r in rows if r.gap == "c" and r.what == "eager" and r.quantity == "time"]
    assert len(eager) == 6 and all(abs(r.error) <= 0.20 for r in eager)
    assert all(r.without is not None and r.without < 0.7 * r.measured for r in eager)


def test_the_report_lists_every_fresh_point(record: dict) -> None:
    text = FB.report(record, load_hardware(config_dir() / "h200.yaml"))
    assert all(p["id"] in text for p in record["points"])
    assert "not a held-out judgement" in text


@pytest.fixture(scope="module")
def second() -> list[FB.Judged]:
    """The second fresh set (tests/data/backward-h200-fresh2.json: `python3
    benchmarks/backward_h200.py OUT --fresh2` on the lent H200, one call, 35 s,
    benchmarks/backward-h200-fresh2/ncu.log): gaps (a) and (c) as shipped after the first set
    was seen."""
    return FB.judged(F.load([F.FRESH2])[0], load_hardware(config_dir() / "h200.yaml"))


@NEEDS_TORCH
def test_the_second_fresh_set_is_new() -> None:
    assert_fresh(F.load([F.FRESH2])[0]["points"], itemgetter("id"),
                 backward_seen("backward-h200-fresh2.json", "fresh2_grid"), axes=RECORD_AXES)


def test_the_second_fresh_set_varies_both_gaps() -> None:
    fresh2 = F.load([F.FRESH2])[0]
    assert fresh2["counters"]["status"] == "ok"
    points = fresh2["points"]
    a = [p for p in points if p["gap"] == "a"]
    c = [p for p in points if p["gap"] == "c"]
    assert all(p["causal"] and p["n"] >= 32768 for p in a) and {p["d"] for p in a} == {64, 128}
    assert any(p["kv_heads"] < p["heads"] for p in a)
    assert all(p["n"] % 8 and "eager_s" in p for p in c) and {p["d"] for p in c} == {64, 128}


def test_gaps_a_and_c_as_shipped_on_the_second_fresh_set(second: list[FB.Judged]) -> None:
    """Measured (held out for the rules of bwd3: written down before the run; bwd4's restart
    capacity share and bwd5's L2 cutoff were fitted on it among others): SDPA's time within
    ±15 % at all 6 long causal points and its whole backward's DRAM within ±10 % at all 6 (the
    main kernel at 6 of 6 with bwd5's cutoff, worst +9.1 % bf16 d = 64 N = 57,344; with bwd4's
    step at 0.8 of the L2 5 of 6, +17 % there; with the ideal LRU 4 of 6, −13 % there);
    eager's time at N % 8 != 0 within ±20 % at all 6 (within ±10.4 %), −27 to −55 % without
    the rule."""
    a = [r for r in second if r.gap == "a"]
    assert [abs(r.error) <= 0.15 for r in a if r.quantity == "time"] == [True] * 6
    whole = [r for r in a if r.quantity == "DRAM whole backward"]
    assert len(whole) == 6 and all(abs(r.error) <= 0.10 for r in whole)
    main = [r for r in a if r.quantity == "DRAM bwd_attn"]
    assert sum(abs(r.error) <= 0.10 for r in main) == 6
    eager = [r for r in second if r.gap == "c" and r.what == "eager" and r.quantity == "time"]
    assert len(eager) == 6 and all(abs(r.error) <= 0.20 for r in eager)
    assert all(r.without is not None and r.without < 0.8 * r.measured for r in eager)
