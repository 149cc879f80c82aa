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
from tests.fresh_sets import assert_fresh  # noqa: E402
from tests.seen_sets import AXES, ID, NEEDS_TORCH, backward_seen  # noqa: E402

L2_BYTES = 60 * 2**20
"""The H200's L2 (configs/gpus/h200.yaml)."""
FRESH10 = D.DATA / "backward-h200-fresh10.json"


def _grid() -> list:  # type: ignore[type-arg]
    pytest.importorskip("torch")  # the grid's BwdPoint lives in a module that imports torch
    from benchmarks import backward_h200 as BH

    return [p for p, _, _ in BH.fresh10_grid()]


@NEEDS_TORCH
def test_the_tenth_grid_is_new() -> None:
    """No point equal (dtype, N, N_kv, d, batch·heads·kv, mask) to one of any earlier record
    (fresh1-9, the probes, the calibration records) or earlier grid."""
    points = _grid()
    assert_fresh(points, ID, backward_seen("backward-h200-fresh10.json", "fresh10_grid"),
                 size=(12, 16), axes=AXES)
    shapes = {(p.n, p.d, p.batch * p.heads, p.kv_heads * p.batch, p.causal) for p in points}
    assert len(shapes) == len(points)


def test_the_tenth_grid_varies_every_axis() -> None:
    points = _grid()
    assert {p.d for p in points} == {64, 128}
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


def test_as_measured_on_the_tenth_set(record: dict) -> None:  # type: ignore[type-arg]
    """Measured, held out (reports/backward-h200.md, tenth set: `python3
    benchmarks/backward_h200.py $OUT/f10 --fresh10 --deadline-s 150` on the H200, bwd11's rule
    frozen at bwd11-frozen): eager's DRAM rows 116 of 140 within the bound with the rule, 108
    of 140 with main's LRU; its dK GEMM 12 of 16 (6), dQ 13 (11), dP 10 (9), dV 16 (16), the
    GQA group sum 0 of 5 (1); SDPA's rows do not move (three SDPA runs at batch·heads 1 are
    not judged: no layout copies)."""
    from iosim.calibrate import fresh3_bwd as F3
    from iosim.calibrate import fresh10_bwd as F10
    from iosim.calibrate import gemm_handover_fit as G
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    h200 = load_hardware(config_dir() / "h200.yaml")
    kept, dropped = F10.matched(record)
    assert len(dropped) == 3
    rows = F3.judged(kept, h200, rules_before=G.rule_off)

    def within(quantity: str, before: bool = False) -> tuple[int, int]:
        mine = [r for r in rows if r.what == "eager" and r.quantity == quantity]
        return sum(F3.inside_before(r) if before else bool(F3.inside(r)) for r in mine), len(mine)

    # as judged since bwd13's rules (calibrate/fresh12_bwd.py; fresh10 is among the records
    # they were drawn from), which move both sides and name eager's GEMMs in launch order (the
    # third is dK): at bwd11-frozen dK 12 (6), dQ 13 (11), dP 10 (9), sum 0 (1), all 116 (108)
    assert within("DRAM bwd_dk") == (12, 16) and within("DRAM bwd_dk", True) == (11, 16)
    assert within("DRAM bwd_dq") == (12, 16) and within("DRAM bwd_dq", True) == (6, 16)
    assert within("DRAM bwd_dp") == (11, 16) and within("DRAM bwd_dp", True) == (9, 16)
    assert within("DRAM bwd_sum_dkdv") == (5, 5) and within("DRAM bwd_sum_dkdv", True) == (4, 5)
    eager = [r for r in rows if r.what == "eager" and r.quantity.startswith("DRAM")]
    assert sum(bool(F3.inside(r)) for r in eager) == 121
    assert sum(F3.inside_before(r) for r in eager) == 111 and len(eager) == 140
    assert all(r.estimate == r.without for r in rows
               if r.what == "sdpa" and r.quantity.startswith("DRAM"))
