"""var6's fresh MLA prefill set (calibrate/mla_prefill_points.py FRESH2) is fresh: no shape of
it was measured before (the FIT and FRESH sets of tests/data/h200-mla-prefill*.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# the point lists import calibrate/variants.py, which imports torch: CI's torch step runs this
P = pytest.importorskip("iosim.calibrate.mla_prefill_points", exc_type=ImportError)

DATA = Path(__file__).parent / "data"


def shape(p: dict) -> tuple:
    return tuple(p[k] for k in ("batch", "n", "heads", "causal", "dtype", "d", "d_v"))


def test_fresh2_has_no_earlier_shape() -> None:
    earlier = {shape(p) for p in [*P.FIT, *P.FRESH]}
    for name, section in (("h200-mla-prefill.json", "fit"),
                          ("h200-mla-prefill-fresh.json", "fresh")):
        earlier |= {shape(p) for p in json.loads((DATA / name).read_text())[section]}
    fresh = [shape(p) for p in P.FRESH2]
    assert len(set(fresh)) == len(fresh) >= 5
    assert not set(fresh) & earlier
    # some beyond the 60 MiB L2 (K and V: batch · heads · N · (192 + 128) · 2 bytes)
    assert any(b * h * n * 320 * 2 > 60 * 2**20 for b, n, h, *_ in fresh)
