"""Issue 14, var12: the fresh set of the paged split kernel's compiled occupancy in split-KV's
wave rules (analysis/decode_time.py MEASURED_TILES), calibrate/variants_points.py
CASCADE_FRESH8, is new against every earlier set and record, and covers what the brief asks of
it (reports/variants-h200.md, "Issue 14, var12")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_variants_fresh_var9 import loose, recorded, shape

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.variants_points", exc_type=ImportError)

ROOT = Path(__file__).parent.parent
L2 = 62914560  # the H200's 60 MiB (iosim/data/gpus/h200.yaml l2_size)
SMS = 132


def listed_elsewhere() -> list[dict[str, object]]:
    return [p for name in dir(P) if name != "CASCADE_FRESH8"
            and isinstance(getattr(P, name), list)
            for p in getattr(P, name) if isinstance(p, dict) and "kind" in p]


def test_cascade_fresh8_has_no_earlier_shape() -> None:
    fresh = P.CASCADE_FRESH8
    shapes = [shape(p) for p in fresh]
    assert len(set(shapes)) == len(shapes) >= 8
    listed = listed_elsewhere()
    assert len(listed) > 100
    assert not set(shapes) & {shape(p) for p in listed}
    # nor, by batch, KV length, heads and KV heads, any row of any record (cascade_fresh7's too)
    seen = set()
    for row in recorded(own=("cascade_fresh8",)):
        try:
            seen.add(loose(row))
        except (TypeError, ValueError):  # a row whose fields are not counts (a header, a note)
            continue
    assert len(seen) > 100  # the records were read
    assert not {loose(p) for p in fresh} & seen
    # nor a listed set's, loosely (an earlier set with other suffixes or head dim)
    assert not {loose(p) for p in fresh} & {loose(p) for p in listed}
    # nor a prefix probe's (benchmarks/mla-prefill-h200: the points var6-var7 looked at)
    probes = [ROOT / "benchmarks/mla-prefill-h200/prefix-probe.json",
              ROOT / "benchmarks/mla-prefill-h200/fresh/prefix-fresh.json"]
    probed = {loose(x["point"]) for path in probes
              for x in json.loads(path.read_text())["spec"]}
    assert probed and not {loose(p) for p in fresh} & probed


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
    assert sorted(shape(p) for p in record["cascade_fresh8"]) == sorted(
        shape(p) for p in P.CASCADE_FRESH8)
