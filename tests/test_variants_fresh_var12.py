"""Issue 14, var12: the fresh set of the paged split kernel's compiled occupancy in split-KV's
wave rules (analysis/decode_time.py MEASURED_TILES), calibrate/variants_points.py
CASCADE_FRESH8, is new against every earlier set and record, and covers what the brief asks of
it (reports/variants-h200.md, "Issue 14, var12")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fresh_sets import assert_fresh
from tests.seen_sets import variant_shape, variants_seen

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.variants_points", exc_type=ImportError)

ROOT = Path(__file__).parent.parent
L2 = 62914560  # the H200's 60 MiB (iosim/data/gpus/h200.yaml l2_size)
SMS = 132


def test_cascade_fresh8_has_no_earlier_shape() -> None:
    """New against every other point list (by shape and loosely), every record row and the
    shared-prefix probes (tests/seen_sets.py variants_seen)."""
    assert_fresh(P.CASCADE_FRESH8, variant_shape,
                 variants_seen(P, ("CASCADE_FRESH8",), ("cascade_fresh8",)), size=(8, None),
                 axes={"batch": lambda p: p["batch"], "prefix": lambda p: p["prefix_len"],
                       "d": lambda p: p["d"]})


def test_cascade_fresh8_covers_the_brief() -> None:
    """At least 8 shared-prefix batches: d 64 and 128, prefixes inside and beyond the L2, batch
    from 2 to 64, MHA, GQA and MQA, a mixed batch; d 64 grids that the occupancy moves (one wave
    at the shared memory's 10 programs per SM, two at the registers' 8)."""
    fresh = P.CASCADE_FRESH8
    assert len(fresh) >= 8
    assert all(len(p["suffix_lens"]) == p["batch"] and p["prefix_len"] % 16 == 0 for p in fresh)
    assert {p["d"] for p in fresh} == {64, 128}
    assert sum(p["d"] == 64 for p in fresh) >= 4
    groups = {p["heads"] // p["kv_heads"] for p in fresh}
    assert 1 in groups and {4, 8} <= groups and any(p["kv_heads"] == 1 for p in fresh)
    assert min(p["batch"] for p in fresh) <= 2 and max(p["batch"] for p in fresh) == 64
    assert any(len(set(p["suffix_lens"])) > 1 for p in fresh)
    share = [p["prefix_len"] * p["kv_heads"] * p["d"] * 4 / L2 for p in fresh]  # K+V, fp16
    assert sum(s > 1.0 for s in share) >= 3 and sum(s < 1.0 for s in share) >= 5
    assert any(s > 1.0 for s, p in zip(share, fresh, strict=True) if p["d"] == 64)

    def programs(p: dict[str, int], splits: int) -> int:  # rows of 16 query heads
        return p["batch"] * -(-(p["heads"] // p["kv_heads"]) // 16) * p["kv_heads"] * splits

    assert any(8 * SMS < programs(p, s) <= 10 * SMS
               for p in fresh if p["d"] == 64 for s in (8, 16, 32))


def test_the_fresh8_record_measured_exactly_the_set_written_before() -> None:
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    if "cascade_fresh8" not in record:
        pytest.skip("the fresh record is not in yet")
    assert sorted(variant_shape(p) for p in record["cascade_fresh8"]) == sorted(
        variant_shape(p) for p in P.CASCADE_FRESH8)
