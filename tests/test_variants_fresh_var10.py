"""Issue 14, var10: the fresh set of the prefix re-read rule (estimates/prefix_waves.py),
calibrate/variants_points.py CASCADE_FRESH6, is new against every earlier set and record, and
covers what the brief asks of it (reports/variants-h200.md, "Issue 14, var10")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_variants_fresh_var9 import loose, recorded, shape

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.variants_points", exc_type=ImportError)

ROOT = Path(__file__).parent.parent
L2 = 62914560  # the H200's 60 MiB (iosim/data/gpus/h200.yaml l2_size)


def test_cascade_fresh6_has_no_earlier_shape() -> None:
    fresh = P.CASCADE_FRESH6
    shapes = [shape(p) for p in fresh]
    assert len(set(shapes)) == len(shapes) >= 8
    listed = {shape(p) for name in dir(P) if name != "CASCADE_FRESH6"
              and isinstance(getattr(P, name), list)
              for p in getattr(P, name) if isinstance(p, dict) and "kind" in p}
    assert len(listed) > 100
    assert not set(shapes) & listed
    seen = set()
    for row in recorded(own=("cascade_fresh6",)):
        try:
            seen.add(loose(row))
        except (TypeError, ValueError):  # a row whose fields are not counts (a header, a note)
            continue
    assert len(seen) > 100  # the records were read
    assert not {loose(p) for p in fresh} & seen
    # nor a prefix probe's (benchmarks/mla-prefill-h200: the points var6-var7 looked at)
    probes = [ROOT / "benchmarks/mla-prefill-h200/prefix-probe.json",
              ROOT / "benchmarks/mla-prefill-h200/fresh/prefix-fresh.json"]
    probed = {loose(x["point"]) for path in probes
              for x in json.loads(path.read_text())["spec"]}
    assert probed and not {loose(p) for p in fresh} & probed


def test_cascade_fresh6_covers_the_brief() -> None:
    """Batch 8-64, prefix 2k-32k in whole pages, GQA and MQA, both head dims, a mixed batch,
    prefixes whose K+V is beyond the L2 and ones within it, grids of several waves."""
    fresh = P.CASCADE_FRESH6
    assert all(8 <= p["batch"] <= 64 and len(p["suffix_lens"]) == p["batch"] for p in fresh)
    assert all(2000 <= p["prefix_len"] <= 32000 and p["prefix_len"] % 16 == 0 for p in fresh)
    assert {p["kv_heads"] == 1 for p in fresh} == {True, False}
    assert all(p["heads"] > p["kv_heads"] for p in fresh)
    assert {p["d"] for p in fresh} == {64, 128}
    assert any(len(set(p["suffix_lens"])) > 1 for p in fresh)
    prefix = [p["prefix_len"] * p["kv_heads"] * p["d"] * 4 for p in fresh]  # K+V, fp16
    assert sum(b > L2 for b in prefix) >= 2
    assert sum(0.2 * L2 < b < L2 for b in prefix) >= 5
    # at 8 splits, more programs than one wave of the H200's 132 SMs × 5 can hold
    assert sum(p["batch"] * p["kv_heads"] * 8 > 660 for p in fresh) >= 5


def test_the_fresh6_record_measured_exactly_the_set_written_before() -> None:
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    if "cascade_fresh6" not in record:
        pytest.skip("the fresh record is not in yet")
    assert sorted(shape(p) for p in record["cascade_fresh6"]) == sorted(
        shape(p) for p in P.CASCADE_FRESH6)
