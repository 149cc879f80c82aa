"""var7's fresh decoding sets (calibrate/variants_points.py MLA_FRESH3, CASCADE_FRESH4) are fresh:
no shape of them was measured or listed before (tests/seen_sets.py variants_seen: every other
point list, every section of tests/data/h200-variants.json and every other record row, the
shared-prefix probes of benchmarks/mla-prefill-h200/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fresh_sets import assert_fresh
from tests.seen_sets import variant_shape, variants_seen

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.variants_points", exc_type=ImportError)

ROOT = Path(__file__).parent.parent
FRESH_SECTIONS = ("mla_fresh3", "cascade_fresh4")
FRESH = ("MLA_FRESH3", "CASCADE_FRESH4")


@pytest.mark.parametrize("name", FRESH)
def test_var7_fresh_set_has_no_earlier_shape(name: str) -> None:
    # against every other list and record but the fresh run's own sections (var8 added
    # mla_fresh3 and cascade_fresh4, the measurement of these very sets)
    assert_fresh(getattr(P, name), variant_shape, variants_seen(P, FRESH, FRESH_SECTIONS),
                 size=(5, None), axes={"batch": lambda p: p["batch"]})


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
    assert sorted(map(variant_shape, record[section])) == sorted(
        map(variant_shape, getattr(P, name)))
