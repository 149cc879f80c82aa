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


def test_split_kv_dram_bytes_within_10_percent_of_ncu(record: dict[str, Any]) -> None:
    import decode_choices_h200 as check

    points = check.dram_points(record)
    for kind, least in (("decode", 78), ("paged", 24), ("shared prefix", 8)):
        ratios = [p["ratio"] for p in points if p["kind"] == kind]
        assert sum(abs(x - 1) <= 0.10 for x in ratios) >= least, kind
