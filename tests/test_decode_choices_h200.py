"""iosim's decoding choices held to the H200 record of issue 14 (tests/data/h200-variants.json,
measured by benchmarks/variants_h200.py on branch gpu14; the figures are
benchmarks/decode_choices_h200.py's, quoted in docs/variants-decoding.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

RECORD = Path(__file__).parent / "data" / "h200-variants.json"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    if not RECORD.exists():
        pytest.skip("the H200 variants record is not merged yet (branch gpu14)")
    data: dict[str, Any] = json.loads(RECORD.read_text())
    return data


def test_the_split_pick_is_within_5_percent_of_the_fastest_on_8_shapes(
        record: dict[str, Any]) -> None:
    import decode_choices_h200 as check

    picks = check.split_picks(record)
    assert len(picks) == 10
    assert sum(r["pick_over_fastest"] <= 1.05 for r in picks) >= 8


def test_the_cascade_verdict_is_right_on_8_batches_with_both_winners(
        record: dict[str, Any]) -> None:
    import decode_choices_h200 as check

    rows = check.verdicts(record)
    right = [r for r in rows if r["iosim"] == r["measured"]]
    assert len(right) >= 8
    assert {r["measured"] for r in right} == {"cascade", "splitkv"}


def test_dram_bytes_within_10_percent_of_ncu(record: dict[str, Any]) -> None:
    # ncu's DRAM read + write with the dirty lines the point left in L2 (as
    # reports/variants-h200.md counts them); `python benchmarks/decode_choices_h200.py --points`
    # (issue 14, var3): decode 70 of 74 (the four misses are dec-b1-1k-gqa, 5 MB), paged 24 of 24,
    # shared prefix split-KV 9 of 10 (cas-b32-p16k-s16: its 67 MB prefix outgrows the L2),
    # cascade 10 of 10 (1 of 10 before its prefix rule was its own)
    import decode_choices_h200 as check

    points = check.dram_points(record, ("decode", "paged", "cascade"))
    for kind, least in (("decode", 70), ("paged", 24), ("shared prefix splitkv", 9),
                        ("shared prefix cascade", 10)):
        ratios = [p["ratio"] for p in points if p["kind"] == kind]
        assert sum(abs(x - 1) <= 0.10 for x in ratios) >= least, kind


def test_the_held_out_judge_set_is_recorded_whole_and_apart_from_the_fit_set(
        record: dict[str, Any]) -> None:
    # a record check, not a pass rate: the judge set's results are reported, pass or fail, in
    # docs/variants-decoding.md (benchmarks/decode_choices_h200.py)
    import decode_choices_h200 as check

    from iosim.calibrate import variants_points as VP

    def shape(p: dict[str, Any]) -> tuple[Any, ...]:
        keys = ("batch", "n_kv", "heads", "kv_heads", "d", "prefix_len", "suffix_lens")
        return tuple(str(p.get(k)) for k in keys)

    for judge, fit, points in (("decode_judge", "decode", VP.DECODE_JUDGE),
                               ("cascade_judge", "cascade", VP.CASCADE_JUDGE)):
        assert [r["id"] for r in record[judge]] == [p["id"] for p in points], judge
        assert not {shape(r) for r in record[judge]} & {shape(r) for r in record[fit]}, judge
    picks = check.split_picks(record, "decode_judge")
    assert len(picks) == len(VP.DECODE_JUDGE)
    for r, d in zip(picks, record["decode_judge"], strict=True):
        timed = {s["splits"] for s in d["sweep"]}
        assert r["pick"] in timed and r["fa2"] in timed and r["pick_over_fastest"] >= 1.0
    rows = check.verdicts(record, "cascade_judge")
    assert len(rows) == len(VP.CASCADE_JUDGE)
    for r, c in zip(rows, record["cascade_judge"], strict=True):
        faster = min(c["best_splitkv"]["time_s"], c["best_cascade"]["time_s"])
        assert (c["best_cascade"]["time_s"] == faster) == (r["measured"] == "cascade")
