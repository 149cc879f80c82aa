"""Issue 14, var13: the fresh set of split-KV's wave rule over MHA's unpacked grid
(estimates/prefix_waves.py prefix_grid), calibrate/variants_points.py CASCADE_FRESH9, is new
against every earlier set and record, and covers what the brief asks of it
(reports/variants-h200.md, "Issue 14, var13")."""

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


def test_cascade_fresh9_has_no_earlier_shape() -> None:
    """New against every other point list (by shape and loosely), every record row and the
    shared-prefix probes (tests/seen_sets.py variants_seen)."""
    assert_fresh(P.CASCADE_FRESH9, variant_shape,
                 variants_seen(P, ("CASCADE_FRESH9",), ("cascade_fresh9",)), size=(8, None),
                 axes={"batch": lambda p: p["batch"], "prefix": lambda p: p["prefix_len"],
                       "d": lambda p: p["d"], "heads": lambda p: p["heads"]})


def test_cascade_fresh9_covers_the_brief() -> None:
    """At least 8 shared-prefix batches, MHA in at least half (at d 64 and 128, inside and beyond
    the L2), GQA and MQA as controls, batch 2 to 64; the MHA grids in one wave and in several
    (8 programs per SM at d 64, 5 at d 128: analysis/decode_time.py MEASURED_TILES) at the
    counted 8, 16, 32 splits, so ≥ 24 split-KV counts."""
    fresh = P.CASCADE_FRESH9
    assert len(fresh) >= 8 and 3 * len(fresh) >= 24
    assert all(len(p["suffix_lens"]) == p["batch"] and p["prefix_len"] % 16 == 0 for p in fresh)
    mha = [p for p in fresh if p["heads"] == p["kv_heads"]]
    assert 2 * len(mha) >= len(fresh)
    assert {p["d"] for p in mha} == {64, 128} and {p["d"] for p in fresh} == {64, 128}
    groups = {p["heads"] // p["kv_heads"] for p in fresh}
    assert {1, 4, 8} <= groups and any(p["kv_heads"] == 1 for p in fresh)
    assert min(p["batch"] for p in fresh) == 2 and max(p["batch"] for p in fresh) == 64
    assert any(len(set(p["suffix_lens"])) > 1 for p in mha)

    def share(p: dict[str, int]) -> float:  # the prefix's K+V (fp16) against the L2
        return p["prefix_len"] * p["kv_heads"] * p["d"] * 4 / L2

    for d in (64, 128):
        assert any(share(p) > 1.0 for p in mha if p["d"] == d)
        assert any(share(p) < 1.0 for p in mha if p["d"] == d)
    assert any(share(p) > 1.0 for p in fresh if p not in mha)

    def waves(p: dict[str, int], splits: int) -> float:  # one program per (request, head, split)
        return p["batch"] * p["kv_heads"] * splits / (SMS * (8 if p["d"] == 64 else 5))

    spans = [waves(p, s) for p in mha for s in (8, 16, 32)]
    assert any(w <= 1.0 for w in spans) and any(1.0 < w <= 4.0 for w in spans)
    assert any(w > 4.0 for w in spans)


def test_the_fresh9_record_measured_exactly_the_set_written_before() -> None:
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    if "cascade_fresh9" not in record:
        pytest.skip("the fresh record is not in yet")
    assert sorted(variant_shape(p) for p in record["cascade_fresh9"]) == sorted(
        variant_shape(p) for p in P.CASCADE_FRESH9)
