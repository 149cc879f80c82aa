"""Issue 14, var10: the fresh set of the prefix re-read rule (estimates/prefix_waves.py),
calibrate/variants_points.py CASCADE_FRESH6, is new against every earlier set and record, and
covers what the brief asks of it (reports/variants-h200.md, "Issue 14, var10")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import as_var10_shipped
from tests.fresh_sets import assert_fresh
from tests.seen_sets import variant_shape, variants_seen

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.variants_points", exc_type=ImportError)

ROOT = Path(__file__).parent.parent
L2 = 62914560  # the H200's 60 MiB (iosim/data/gpus/h200.yaml l2_size)


def test_cascade_fresh6_has_no_earlier_shape() -> None:
    assert_fresh(P.CASCADE_FRESH6, variant_shape,
                 variants_seen(P, ("CASCADE_FRESH6",), ("cascade_fresh6",)), size=(8, None),
                 axes={"batch": lambda p: p["batch"], "prefix": lambda p: p["prefix_len"]})


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
    assert sorted(map(variant_shape, record["cascade_fresh6"])) == sorted(
        map(variant_shape, P.CASCADE_FRESH6))


def _report_table(header: str) -> list[list[str]]:
    """The rows of the table whose header starts so in reports/variants-h200.md's var10
    section, under its fresh set's heading."""
    from tests.conftest import markdown_table

    report = (ROOT / "reports/variants-h200.md").read_text()
    start = report.index("### The fresh set", report.index("## Issue 14, var10:"))
    return markdown_table(report[start:report.index("\n## ", start + 1)], header)


def test_the_var10_report_is_the_record_and_the_shipped_model() -> None:
    """Every counted cascade_fresh6 point once in the report; its ncu columns the record's,
    its "on" columns the shipped model plus the protocol residue (benchmarks/
    var10_prefix_judge.py --fresh); the family counts those rows'."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import var9_residue_judge as judge

    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    if "cascade_fresh6" not in record:
        pytest.skip("the fresh record is not in yet")
    with as_var10_shipped():  # the model this report shipped (var11's share came later)
        rows = {r["id"]: r for r in judge.residue_rows(record)
                if r["section"] == "cascade_fresh6"}
    table = _report_table("| counted point | section | ncu read MB")
    assert len(table) == len({c[0] for c in table}) == len(rows) == 45
    for cells in table:
        r = rows[cells[0]]
        for at, key in ((2, "read"), (3, "write"), (4, "measured")):
            assert float(cells[at].replace(",", "")) == pytest.approx(r[key] / 1e6, abs=0.006)
        assert float(cells[7].replace(",", "")) == pytest.approx(
            (r["model"] + 0.6e6) / 1e6, abs=0.006)
        assert float(cells[8].rstrip("%")) / 100 == pytest.approx(r["error"], abs=0.0006)
    for cells in _report_table("| family | section | off + residue"):
        if cells[1] != "all":
            continue
        family = cells[0].strip("*")
        errors = [r["error"] for r in rows.values() if r["family"] == family]
        assert cells[5] == f"{sum(abs(e) <= 0.10 for e in errors)} of {len(errors)}"
