"""Issue 14, var11: the fresh set of prefix_waves.FAR_COPY_SHARE, calibrate/variants_points.py
CASCADE_FRESH7, is new against every earlier set and record, and covers what the brief asks of
it (reports/variants-h200.md, "Issue 14, var11")."""

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


def test_cascade_fresh7_has_no_earlier_shape() -> None:
    assert_fresh(P.CASCADE_FRESH7, variant_shape,
                 variants_seen(P, ("CASCADE_FRESH7",), ("cascade_fresh7",)), size=(8, None),
                 axes={"batch": lambda p: p["batch"], "prefix": lambda p: p["prefix_len"]})


def test_cascade_fresh7_covers_the_brief() -> None:
    """At least 8 shared-prefix batches, prefixes 0.3-0.8 of the L2 and a few beyond it, GQA and
    MQA, both head dims, a mixed batch, grids of several waves at 8-32 splits."""
    fresh = P.CASCADE_FRESH7
    assert all(len(p["suffix_lens"]) == p["batch"] and p["prefix_len"] % 16 == 0 for p in fresh)
    assert {p["kv_heads"] == 1 for p in fresh} == {True, False}
    assert all(p["heads"] > p["kv_heads"] for p in fresh)
    assert {p["d"] for p in fresh} == {64, 128}
    assert any(len(set(p["suffix_lens"])) > 1 for p in fresh)
    share = [p["prefix_len"] * p["kv_heads"] * p["d"] * 4 / L2 for p in fresh]  # K+V, fp16
    assert sum(s > 1.0 for s in share) >= 2
    assert sum(0.3 <= s <= 0.8 for s in share) >= 7
    assert all(0.3 <= s <= 0.8 or s > 1.0 for s in share)
    # at 32 splits, more programs than one wave (132 SMs × 5 programs at d 128, × 10 at d 64)
    slots = {128: 660, 64: 1320}
    rows = [-(-(p["heads"] // p["kv_heads"]) // 16) for p in fresh]  # row blocks of 16
    assert all(p["batch"] * r * p["kv_heads"] * 32 > slots[p["d"]] for p, r in zip(fresh, rows, strict=True))


def test_the_fresh7_record_measured_exactly_the_set_written_before() -> None:
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    if "cascade_fresh7" not in record:
        pytest.skip("the fresh record is not in yet")
    assert sorted(map(variant_shape, record["cascade_fresh7"])) == sorted(
        map(variant_shape, P.CASCADE_FRESH7))
