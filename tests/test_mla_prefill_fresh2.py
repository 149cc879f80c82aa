"""var6's fresh MLA prefill set (calibrate/mla_prefill_points.py FRESH2) is fresh: no shape of
it was measured before (the FIT and FRESH sets of tests/data/h200-mla-prefill*.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fresh_sets import assert_fresh, seen

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.mla_prefill_points", exc_type=ImportError)

DATA = Path(__file__).parent / "data"


def shape(p: dict) -> tuple:
    return tuple(p[k] for k in ("batch", "n", "heads", "causal", "dtype", "d", "d_v"))


def test_fresh2_has_no_earlier_shape() -> None:
    assert_fresh(P.FRESH2, shape, [
        seen("the FIT and FRESH lists of calibrate/mla_prefill_points.py", map(shape, [*P.FIT,
                                                                                   *P.FRESH])),
        *(seen(f"tests/data/{name} {section}",
               map(shape, json.loads((DATA / name).read_text())[section]))
          for name, section in (("h200-mla-prefill.json", "fit"),
                                ("h200-mla-prefill-fresh.json", "fresh")))],
        size=(5, None), axes={"batch": lambda p: p["batch"], "N": lambda p: p["n"],
                              "mask": lambda p: p["causal"]})
    # some beyond the 60 MiB L2 (K and V: batch · heads · N · (192 + 128) · 2 bytes)
    assert any(p["batch"] * p["heads"] * p["n"] * 320 * 2 > 60 * 2**20 for p in P.FRESH2)
