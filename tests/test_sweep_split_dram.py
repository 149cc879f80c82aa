"""A measured sweep's DRAM bytes on arrays (analysis/sweep_split_dram.py: split-KV's lists and
standard attention's whole-tensor kernels, analysis/whole_tensor_dram.py) against the
per-point estimate they replace (estimates/l2.py dram_estimate, what the sweep ran before and
what runs with sweep_split_dram.ENABLED off): every field of every algorithm's grid equal, over
GQA, MQA and MHA, head dims 64/128/256, batch 1-64, KV 1k-128k, decoding and 4- and 64-row
chunks (causal too), fixed split counts 1-64, FA2's heuristic and `auto`, a contiguous and a
paged cache, bf16, FP8, MLA's latent cache, and a shared-prefix batch (which the arrays leave
to the per-point path)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from iosim.analysis import sweep_split_dram
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.analysis.sweep_result import AlgorithmGrid, SweepResult
from iosim.record import field_names

GRID: dict[str, Any] = dict(
    n=(1, 4), gpu=("h200",), n_kv=(1000, 33_000, 131_072), d=(64, 128, 256), heads=(8,),
    kv_heads=(8, 2, 1), batch=(1, 7, 64), algorithms=("splitkv",), profile="measured",
    splits=(None, 1, 3, "auto"))

SPECS = {
    "contiguous": SweepSpec(**GRID),
    "contiguous, 16 and 64 splits": SweepSpec(**{**GRID, "n_kv": (33_000, 131_072),
                                                 "splits": (16, 64)}),
    "paged, 16 tokens a page": SweepSpec(**GRID, page_size=16),
    "paged, 3 tokens a page (interpolated efficiency)": SweepSpec(
        **{**GRID, "n": (1,), "d": (128,), "splits": (None, 2, "auto")}, page_size=3),
    "bf16, MLA-like d_v": SweepSpec(**{**GRID, "n": (1,), "kv_heads": (1,), "d_v": (64,),
                                       "d": (128, 256)}, dtype=("bf16",)),
    "causal, a 4- and 64-row chunk": SweepSpec(**{**GRID, "n": (4, 64), "d": (128,),
                                                  "causal": (False, True)}),
    "MLA's latent cache": SweepSpec(**{**GRID, "n": (1,), "heads": (16, 128), "kv_heads": (1,),
                                       "d": (576,), "d_v": (512,), "batch": (1, 16)},
                                    latent_kv=True),
    "FP8 e4m3, per-tensor scales": SweepSpec(**{**GRID, "n": (1,), "d": (128,)},
                                             dtype=("fp8_e4m3",)),
    "FP8 e5m2, per-block scales": SweepSpec(**{**GRID, "n": (1,), "d": (128,)},
                                            dtype=("fp8_e5m2",), fp8_scales="block"),
    "prefill: standard attention beside flash2 (S and P carried between kernels)": SweepSpec(
        n=(256, 2048, 8192), gpu=("h200",), d=(64, 128), heads=(8, 32), kv_heads=(None, 4),
        batch=(1, 4), causal=(False, True), dtype=("fp16", "fp32"), algorithms=("flash2",),
        profile="measured"),
    "prefill, an unfused pipeline (scale, mask)": SweepSpec(
        n=(1024, 4096), gpu=("h200",), d=(128,), heads=(16,), batch=(1, 8), causal=(True,),
        algorithms=("flash2",), profile="measured", unfused=("scale", "mask")),
    "prefill, backward and training step: standard attention's": SweepSpec(
        n=(512, 4096), gpu=("h200",), d=(64, 128), heads=(8,), kv_heads=(None, 2), batch=(1, 4),
        causal=(False, True), pass_=("bwd", "fwdbwd"), algorithms=("flash2",),
        profile="measured"),
    "shared prefix": SweepSpec(n=(1,), gpu=("h200",), n_kv=(9096,), d=(128,), heads=(8,),
                               kv_heads=(2, 8),
                               batch=(4,), algorithms=("splitkv",), profile="measured",
                               splits=(None, 4, "auto"), prefix_len=4096,
                               suffix_lens=(100, 300, 5000, 20)),
}


def _grids(result: SweepResult) -> list[AlgorithmGrid]:
    return [result.baseline, *result.algorithms]


def _equal(on: SweepResult, off: SweepResult) -> None:
    assert on.notes == off.notes
    assert np.array_equal(on.sram_bytes, off.sram_bytes)
    for a, b in zip(_grids(on), _grids(off), strict=True):
        assert a.name == b.name
        for name in field_names(AlgorithmGrid):
            x, y = getattr(a, name), getattr(b, name)
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype and np.array_equal(x, y), (a.name, name)
            else:
                assert x == y, (a.name, name)


@pytest.mark.parametrize("label", list(SPECS))
def test_every_field_equals_the_per_point_estimate(label: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[int] = []
    original = sweep_split_dram.charged_bytes

    def counting(*args: Any) -> dict[int, list[int]]:
        out = original(*args)
        counted.append(len(out))
        return out

    monkeypatch.setattr(sweep_split_dram, "charged_bytes", counting)
    spec = SPECS[label]
    on = sweep(spec)
    monkeypatch.setattr(sweep_split_dram, "ENABLED", False)
    off = sweep(spec)
    _equal(on, off)
    # which lists took the arrays: a shared prefix's stay per point (split_choice_grid
    # .vectorised), FP8's standard attention too (its scales' terms); every other point's two
    lists = 0 if label == "shared prefix" else 1 if label.startswith(("FP8", "prefill")) else 2
    assert sum(counted) == lists * spec.points


def test_the_splits_differ_across_the_grid() -> None:
    """The grids exercise one split and several (the combine kernel), given and chosen."""
    splits = {s for label in ("contiguous", "contiguous, 16 and 64 splits")
              for s in sweep(SPECS[label]).algorithm("splitkv").splits.tolist()}
    assert {1, 3, 16, 64} <= splits and len(splits) > 6


def test_a_grid_counted_in_python_ints_keeps_the_per_point_estimate(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The arrays are int64: a grid whose counts could leave it (sweep_spec
    .counts_in_python_ints) takes none of them, and its bytes stay exact."""
    from iosim.analysis.sweep_spec import counts_in_python_ints

    counted: list[int] = []
    original = sweep_split_dram.charged_bytes
    monkeypatch.setattr(sweep_split_dram, "charged_bytes",
                        lambda *args: counted.append(1) or original(*args))
    spec = SweepSpec(n=(1,), gpu=("h200",), n_kv=(1 << 26,), d=(256,), heads=(8,),
                     kv_heads=(2,), batch=(1 << 20,), algorithms=("splitkv",),
                     profile="measured", splits=(4,))
    assert counts_in_python_ints(spec)
    result = sweep(spec)
    assert counted == []
    assert result.algorithm("splitkv").hbm_read_bytes.dtype == object
