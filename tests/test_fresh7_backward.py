"""bwd7's rules judged on the seventh fresh H200 set (fresh7_bwd.py): the grid's new-ness,
committed before the run, and (once the record is in) the report as measured. No GPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iosim.calibrate import torch_bwd_dram as D  # noqa: E402

pytest.importorskip("torch")  # the grid's BwdPoint lives in a module that imports torch
from benchmarks import backward_h200 as BH  # noqa: E402


def _earlier_ids() -> set[str]:
    """Every point of every earlier backward record and of every earlier grid (measured or
    not), by its id (dtype/N/[N_kv/]d/batch·heads·kv/mask)."""
    ids: set[str] = set()
    for path in [*sorted(D.DATA.glob("backward-h200*.json")), D.DATA / "bwd7-probe-h200.json"]:
        if path.name == "backward-h200-fresh7.json":
            continue
        record = json.loads(path.read_text())
        if not isinstance(record, dict):  # backward-h200-resources.json: compiled kernels, no point
            continue
        ids |= {p["id"] for p in record.get("points", []) if "id" in p}
        counters = record.get("counters", {})
        ids |= {i["id"] for i in counters.get("items", [])}
    main, eager = BH.grid(False)
    ids |= {p.id for p in main + eager}
    ids |= {p.id for p, _, _ in BH.torch_grid()}
    for make in (BH.fresh_grid, BH.fresh2_grid):
        torch_points, flash1 = make()
        ids |= {p.id for p, _, _ in torch_points} | {p.id for p in flash1}
    for make3 in (BH.fresh3_grid, BH.fresh5_grid, BH.fresh6_grid):
        torch_points, flash1, triton = make3()
        ids |= {p.id for p, _, _ in torch_points} | {p.id for p in flash1 + triton}
    ids |= {p.id for p in BH.fresh4_grid()}
    return ids


def _fresh7_points() -> list:  # type: ignore[type-arg]
    torch_points, flash1, triton = BH.fresh7_grid()
    return [p for p, _, _ in torch_points] + flash1 + triton


def test_the_seventh_grid_is_new() -> None:
    points = _fresh7_points()
    assert len({p.id for p in points}) == len(points)
    assert not {p.id for p in points} & _earlier_ids()


def test_the_seventh_grid_varies_every_axis() -> None:
    points = _fresh7_points()
    heads = [p.batch * p.heads for p in points]
    assert min(heads) < 8 and max(heads) >= 64
    assert {p.d for p in points} == {64, 128}
    assert {p.causal for p in points} == {True, False}
    assert {p.dtype for p in points} == {"fp16", "bf16"}
    assert any(p.kv_heads < p.heads for p in points)
    assert max(p.n for p in points) == 65536
    assert sum(p.n & (p.n - 1) != 0 for p in points) == len(points) - 1


FRESH7 = D.FRESH7


@pytest.mark.skipif(not FRESH7.exists(), reason="the seventh record is not in yet")
def test_the_record_is_the_grid() -> None:
    record = json.loads(FRESH7.read_text())
    assert {p["id"] for p in record["points"]} == {p.id for p in _fresh7_points()}
