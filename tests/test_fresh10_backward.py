"""bwd11's GEMM-handover rule (estimates/l2_handover.py) and the tenth fresh H200 set
(fresh10_bwd.py): the grid's new-ness, committed before the run, the rule against the seen
records it was fitted on, and (once the record is in) the report as measured. No GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iosim.calibrate import torch_bwd_dram as D  # noqa: E402

L2_BYTES = 60 * 2**20
"""The H200's L2 (configs/gpus/h200.yaml)."""
FRESH10 = D.DATA / "backward-h200-fresh10.json"


def _grid() -> list:  # type: ignore[type-arg]
    pytest.importorskip("torch")  # the grid's BwdPoint lives in a module that imports torch
    from benchmarks import backward_h200 as BH

    return [p for p, _, _ in BH.fresh10_grid()]


def test_the_tenth_grid_is_new() -> None:
    """No point equal (dtype, N, N_kv, d, batch·heads·kv, mask) to one of any earlier record
    (fresh1-9, the probes, the calibration records) or earlier grid."""
    points = _grid()
    from benchmarks import backward_h200 as BH
    from tests.test_fresh8_backward import _earlier_ids

    earlier = _earlier_ids(own="backward-h200-fresh10.json", later=()) | {
        p.id for make in (BH.fresh8_grid, BH.fresh9_grid) for p, _, _ in make()}
    assert 12 <= len(points) <= 16
    assert len({p.id for p in points}) == len(points)
    assert not {p.id for p in points} & earlier
    shapes = {(p.n, p.d, p.batch * p.heads, p.kv_heads * p.batch, p.causal) for p in points}
    assert len(shapes) == len(points)


def test_the_tenth_grid_varies_every_axis() -> None:
    points = _grid()
    assert {p.d for p in points} == {64, 128}
    assert {p.causal for p in points} == {True, False}
    assert {p.dtype for p in points} == {"fp16", "bf16"}
    assert {p.group for p in points} >= {1, 2, 3}
    assert all(p.n & (p.n - 1) != 0 and 2000 <= p.n <= 8000 for p in points)
    heads = [p.batch * p.heads for p in points]
    assert min(heads) == 1 and max(heads) == 16
    fill = [p.batch * p.heads * p.n * p.n * 2 / L2_BYTES for p in points]
    assert 0.3 <= min(fill) < 0.35 and 2.9 < max(fill) <= 3.0
    assert sum(0.5 <= f <= 1.6 for f in fill) >= 10


@pytest.fixture(scope="module")
def record() -> dict:  # type: ignore[type-arg]
    if not FRESH10.exists():
        pytest.skip("the tenth record is not in yet")
    return D.load([FRESH10])[0]


def test_the_record_is_the_grid(record: dict) -> None:  # type: ignore[type-arg]
    assert {p["id"] for p in record["points"]} == {p.id for p in _grid()}
    assert record["counters"]["status"] == "ok"
