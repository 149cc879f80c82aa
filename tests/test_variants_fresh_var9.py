"""var9's fresh decoding sets (calibrate/variants_points.py DECODE_FRESH3, CASCADE_FRESH5,
MLA_FRESH4) are fresh: no shape of them was measured or listed before — not in any section of
tests/data/h200-variants.json, not among the shared-prefix probes, not in any other point list,
and (by batch, KV length, heads and KV heads alone) in no JSON or CSV record under tests/data
or benchmarks/ — and they cover what the brief asks: ≥ 15 points, the four families, batch
1-64, KV 1k-128k, some beyond the 60 MiB L2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import markdown_table, without_prefix_rereads
from tests.fresh_sets import assert_fresh, seen
from tests.seen_sets import variant_loose, variant_shape, variants_seen

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.variants_points", exc_type=ImportError)

ROOT = Path(__file__).parent.parent
FRESH = ("DECODE_FRESH3", "CASCADE_FRESH5", "MLA_FRESH4")
FRESH_SECTIONS = ("decode_fresh3", "cascade_fresh5", "mla_fresh4")
L2 = 60 * 2**20


def fresh_points() -> list[dict[str, Any]]:
    return [p for name in FRESH for p in getattr(P, name)]


def test_var9_fresh_sets_have_no_earlier_shape() -> None:
    assert_fresh(fresh_points(), variant_shape, variants_seen(P, FRESH, FRESH_SECTIONS),
                 size=(15, None), axes={"kind": lambda p: p["kind"],
                                        "KV length": lambda p: variant_loose(p)[1]})


def test_var9_fresh_sets_cover_the_families_and_reach_beyond_the_l2() -> None:
    decode, cascade, mla = (getattr(P, name) for name in FRESH)
    assert {p["kv_heads"] == 1 for p in decode} == {True, False}  # MQA and GQA
    assert all(p["heads"] > p["kv_heads"] for p in decode)
    assert {p["batch"] for p in fresh_points()} <= set(range(1, 65))
    assert min(p["batch"] for p in fresh_points()) == 1
    assert max(p["batch"] for p in fresh_points()) == 64
    kv = [variant_loose(p)[1] for p in fresh_points()]
    assert min(kv) >= 1000
    assert max(kv) <= 128 * 1024
    assert any(p["batch"] * p["n_kv"] * p["kv_heads"] * p["d"] * 4 > L2 for p in decode)
    assert any(p["batch"] * p["n_kv"] * 576 * 2 > L2 for p in mla)
    assert any(p["prefix_len"] * p["kv_heads"] * p["d"] * 4 > L2 for p in cascade)
    assert all(p["prefix_len"] % 16 == 0 for p in cascade)  # whole pages of 16


@pytest.mark.parametrize(("name", "section"), list(zip(FRESH, FRESH_SECTIONS, strict=True)))
def test_the_fresh_record_measured_exactly_the_sets_written_before(name: str,
                                                                   section: str) -> None:
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    if section not in record:
        pytest.skip("the fresh record is not in yet")
    rows = [{**p, "id": p["id"].removesuffix("-pcontig")} for p in record[section]]
    assert sorted(map(variant_shape, rows)) == sorted(map(variant_shape, getattr(P, name)))


FP8_KEYS = ("dtype", "n", "heads", "causal", "fp8_scales", "d")


def test_var9_fp8_fresh_set_has_no_earlier_point() -> None:
    """FP8_FRESH3 (benchmarks/fp8_mask_fit.py's fresh judgement): no (dtype, n, heads, mask,
    scales, d) of an earlier FP8 section or list, both masks, both scale kinds, e4m3 and
    e5m2, n a multiple of the kernel's 128 × 64 blocks and not a power of two."""
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())

    def key(p: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(p.get(k) for k in FP8_KEYS)

    assert_fresh(P.FP8_FRESH3, key, [
        seen("the earlier FP8 sections of tests/data/h200-variants.json",
             (key(p) for name, rows in record.items() if name.startswith("fp8")
              and name != "fp8_fresh3" and isinstance(rows, list) for p in rows), at_least=30),
        seen("the earlier FP8 lists of calibrate/variants_points.py",
             (key(p) for name in dir(P) if name.startswith("FP8") and name != "FP8_FRESH3"
              for p in getattr(P, name) if isinstance(p, dict)), at_least=30)],
        size=(8, None), axes={"mask": lambda p: p["causal"], "scales": lambda p: p["fp8_scales"],
                              "dtype": lambda p: p["dtype"]})
    points = P.FP8_FRESH3
    assert {p["fp8_scales"] for p in points} == {"tensor", "block"}
    assert {p["dtype"] for p in points} == {"fp8_e4m3", "fp8_e5m2"}
    assert all(p["n"] % 128 == 0 and p["n"] & (p["n"] - 1) for p in points)
    assert any(3 * p["n"] * p["heads"] * p["d"] > L2 for p in points)


def _report_table(header: str) -> list[list[str]]:
    """The rows of the table whose header starts so in reports/variants-h200.md's var9
    section, under its fresh set's heading."""
    report = (ROOT / "reports/variants-h200.md").read_text()
    start = report.index("### The fresh set", report.index("## Issue 14, var9:"))
    return markdown_table(report[start:report.index("\n## ", start + 1)], header)


def test_the_report_is_the_record_and_the_shipped_model_with_the_residue() -> None:
    """Every fresh counted point once in the report; its ncu columns the record's, its "on"
    columns the shipped model plus the protocol residue; the family counts those rows'."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import var9_residue_judge as judge

    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    with without_prefix_rereads():  # the model this report shipped (var10's rule came later)
        rows = {r["id"]: r for r in judge.residue_rows(record) if r["section"] in FRESH_SECTIONS}
    table = _report_table("| counted point | section | ncu read MB")
    assert len(table) == len({c[0] for c in table}) == len(rows) == 54
    for cells in table:
        r = rows[cells[0]]
        assert cells[1] == r["section"]
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
        assert cells[5] == f"{sum(abs(e) <= judge.WITHIN for e in errors)} of {len(errors)}"


def test_the_fp8_report_is_the_frozen_fit_on_the_record() -> None:
    """The FP8 fresh table of the var9 section: every fp8_fresh3 point once, its measured time
    the record's, both models' errors benchmarks/fp8_mask_fit.py's (the rates refitted on the
    seen sections: 1,030 and 865 TFLOP/s, as the report says)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fp8_mask_fit as fit

    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    rates = fit.fit(fit.rows_of(record, fit.SEEN))
    assert (rates[False], rates[True]) == (1030e12, 865e12)
    fresh = {r["id"]: r for r in fit.rows_of(record, fit.FRESH)}
    report = (ROOT / "reports/variants-h200.md").read_text()
    start = report.index("### FP8's per-mask key-block cost")
    lines = [line for line in report[start:report.index("Seen points", start)].splitlines()
             if line.startswith("| fp8h-")]
    assert len(lines) == len(fresh) == 8
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        r = fresh[cells[0]]
        assert float(cells[3]) == pytest.approx(r["time_s"] * 1e3, abs=0.0006)
        for at, rate in ((5, fit.SHIPPED_RATE), (7, rates[r["causal"]])):
            error = fit.predict(r, rate) / r["time_s"] - 1
            assert float(cells[at].rstrip("%")) / 100 == pytest.approx(error, abs=0.0006)
