"""bwd5's fifth fresh H200 set: its grid (benchmarks/backward_h200.py `fresh5_grid`, committed
before the run with the rules frozen at the tag `bwd5-frozen`) is new and varies every axis;
bwd4's rules are reproduced for the report's 'before' column. No GPU."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from iosim.calibrate import fresh5_bwd as F5
from iosim.calibrate import l2_cutoff_fit as C
from iosim.calibrate import torch_bwd_fit as F
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware_yaml import load_hardware

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "backward_h200.py"


def _grid() -> tuple[list[Any], list[Any], list[Any]]:
    spec = importlib.util.spec_from_file_location("backward_h200", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch_points, flash1, triton = module.fresh5_grid()
    return [p for p, _, _ in torch_points], flash1, triton


def test_the_fifth_fresh_set_is_new_and_varies_every_axis() -> None:
    torch_points, flash1, triton = _grid()
    points = torch_points + flash1 + triton
    earlier = {p["id"] for r in F.load([F.FRESH, F.FRESH2, F.FRESH3, F.FRESH4, *F.RECORDS])
               for p in r["points"]}
    assert not {p.id for p in points} & earlier
    assert len({p.id for p in points}) == len(points)
    heads = {p.batch * p.heads for p in points}
    assert min(heads) < 132 and max(heads) >= 64  # below one wave of the H200's SMs, and 64+
    assert any(p.n & (p.n - 1) for p in points) and max(p.n for p in points) == 65536
    assert {p.d for p in points} == {64, 128} and {p.dtype for p in points} == {"fp16", "bf16"}
    assert {p.causal for p in points} == {True, False}
    assert any(p.kv_heads < p.heads for p in points)
    for group in (torch_points, flash1, triton):
        assert any(p.kv_heads < p.heads for p in group) and {p.causal for p in group} == {True, False}


def test_the_before_column_is_bwd4s_frozen_model() -> None:
    """rules_bwd4 reproduces bwd4's figures on its third fresh set (reports/backward-h200.md as
    generated at bwd4-frozen: Algorithm 4 at N 6144, d 128, 8 heads 92.9 MB, −97.0 %; FA2's
    causal main kernel at N 50,000, d 64, GQA 8/2 −26.6 %)."""
    hw = load_hardware(config_dir() / "h200.yaml")
    with F5.rules_bwd4():
        rows = {(p, k): (e - m) / m for p, k, e, m in C.points(F.load([F.FRESH3]), hw)}
    assert round(rows[("fp16/n6144/d128/b1h8kv8/full", "flash1 bwd_attn")], 3) == -0.970
    assert round(rows[("fp16/n50000/d64/b1h8kv2/causal", "sdpa bwd_attn")], 3) == -0.266
