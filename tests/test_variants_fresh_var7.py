"""var7's fresh decoding sets (calibrate/variants_points.py MLA_FRESH3, CASCADE_FRESH4) are fresh:
no shape of them was measured before (every section of tests/data/h200-variants.json and the
shared-prefix probes of benchmarks/mla-prefill-h200/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.variants_points", exc_type=ImportError)

ROOT = Path(__file__).parent.parent
FRESH_SECTIONS = ("mla_fresh3", "cascade_fresh4")
KEYS = ("kind", "batch", "n_kv", "heads", "kv_heads", "d", "prefix_len", "suffix_lens")


def shape(p: dict) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in (p.get(k) for k in KEYS))


def earlier() -> set[tuple]:
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    # every section but the fresh run's own (var8 added mla_fresh3 and cascade_fresh4, the
    # measurement of these very sets)
    seen = {shape(p) for name, rows in record.items() if isinstance(rows, list)
            and name not in FRESH_SECTIONS for p in rows if isinstance(p, dict) and "kind" in p}
    for probe in (ROOT / "benchmarks/mla-prefill-h200").rglob("prefix-*.json"):
        seen |= {shape(x["point"]) for x in json.loads(probe.read_text())["spec"]}
    for name in dir(P):
        rows = getattr(P, name)
        if name not in ("MLA_FRESH3", "CASCADE_FRESH4") and isinstance(rows, list):
            seen |= {shape(p) for p in rows if isinstance(p, dict) and "kind" in p}
    return seen


@pytest.mark.parametrize("name", ["MLA_FRESH3", "CASCADE_FRESH4"])
def test_var7_fresh_set_has_no_earlier_shape(name: str) -> None:
    fresh = [shape(p) for p in getattr(P, name)]
    assert len(set(fresh)) == len(fresh) >= 5
    assert not set(fresh) & earlier()


def test_var7_fresh_sets_reach_beyond_the_l2() -> None:
    l2 = 60 * 2**20
    assert any(p["batch"] * p["n_kv"] * 576 * 2 > l2 for p in P.MLA_FRESH3)
    assert any(p["prefix_len"] * p["kv_heads"] * p["d"] * 2 * 2 > l2 / 2 for p in P.CASCADE_FRESH4)
    assert any(p["batch"] * (p["prefix_len"] + p["suffix_lens"][0]) * p["kv_heads"] * p["d"] * 4 > l2
               for p in P.CASCADE_FRESH4)


@pytest.mark.parametrize(("name", "section"), [("MLA_FRESH3", "mla_fresh3"),
                                               ("CASCADE_FRESH4", "cascade_fresh4")])
def test_the_fresh_record_measured_exactly_the_sets_written_before(name: str, section: str) -> None:
    record = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    assert sorted(shape(p) for p in record[section]) == sorted(shape(p) for p in getattr(P, name))
