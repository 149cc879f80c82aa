"""Issue 11, round triton13: iosim-triton's lone grids (estimates/lone_prologue.py), the rate of
an SM by what busy grids hold per SM and a lone program's prologue, their fit on the seen
kernels' device times (calibrate/lone_fit.py), and the fresh set that judges them
(TRITONFRESH13)."""

from __future__ import annotations

import json

import pytest

from iosim.analysis.compare import compare
from iosim.calibrate.impl_fit import START, _pieces, held_parameters, predict
from iosim.calibrate.lone_fit import SEEN, lone_points
from iosim.estimates.lone_prologue import lone_rate, prologue_bytes
from iosim.estimates.occupancy import lone_program_time
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from tests.conftest import DATA
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import PREFILL_AXES, impl_seen

H200 = resolve_hardware("h200").hardware
"""This round's record: measured after the freeze, so left out of the newness check."""


def test_a_lone_grid_pays_its_busy_occupancys_rate_and_one_prologue() -> None:
    """c = 1 takes solo_rate_one, c = 2 solo_rate; the prologue is added once; a grid above
    one wave and a memory-bound one are untouched; without solo_rate_one (every other
    implementation) the one solo rate holds for every c, as before this round."""
    t, s = 100e-6, 132
    kw = {"solo_rate_one": 1.25, "prologue_s": 5e-6}
    assert lone_program_time(t, "compute", 100, 1, s, 0.0, 0.5, None, **kw) == \
        pytest.approx(t / 1.25 + 5e-6)
    assert lone_program_time(t, "compute", 100, 2, s, 0.0, 0.5, None, **kw) == \
        pytest.approx(t / 0.5 + 5e-6)
    assert lone_program_time(t, "compute", 200, 1, s, 0.0, 0.5, None, **kw) == t
    assert lone_program_time(t, "memory", 100, 1, s, 0.0, 0.5, None, **kw) == t
    assert lone_program_time(t, "compute", 100, 1, s, 0.0, 0.5, None) == pytest.approx(t / 0.5)
    assert lone_rate(1, 0.5, None) == lone_rate(3, 0.5, 1.25) == 0.5


def test_the_prologue_is_the_q_o_and_first_k_v_tiles() -> None:
    """iosim-triton's d 128 tiles, 128 × 64 (configs/impls/iosim-triton.yaml): Q 32 KiB in,
    O 32 KiB out, one K and one V tile 16 KiB each in: 96 KiB."""
    assert prologue_bytes(128, 64, 128, 2) == 32768 + 32768 + 2 * 16384


def test_the_fit_predicts_what_compare_prints_for_lone_and_busy_grids() -> None:
    """calibrate/impl_fit.py:predict under the shipped figures is compare's call time, for a
    lone grid at d 64 (c = 2), d 128 and d 256 (c = 1) and a grid of many waves: one rule."""
    impl = get_implementation("iosim-triton")
    assert H200.measured is not None
    params = {**START, **held_parameters(H200.measured.impls["iosim-triton"])}
    for w in (Workload(4096, d=64, heads=2), Workload(8192, heads=1, causal=True),
              Workload(4096, d=256, heads=2, dtype="bf16"), Workload(4096, heads=32)):
        want = compare(w, H200, impl="iosim-triton", profile="measured").algorithms[-1]
        assert predict(_pieces(w, impl, H200, 1.0, None), params) == \
            pytest.approx(want.call_time_s, rel=1e-9)


def test_the_seen_lone_kernels_are_within_five_percent() -> None:
    """The 33 lone iosim-triton forwards of the seen records (calibrate/lone_fit.py, `python -m
    iosim.calibrate.lone_fit`, which fitted the three figures on them): every kernel's device
    time (torch.profiler, in the records) within 5 %; under main's one solo rate 0.84 they were
    −12 … +24 % (reports/impl-validation/triton13.md)."""
    rows = lone_points([DATA / f"h200-impl-{s}.json" for s in SEEN], H200)
    assert len(rows) == 33
    assert H200.measured is not None
    params = {**START, **held_parameters(H200.measured.impls["iosim-triton"]),
              "call_overhead_s": 0.0, "host_floor_s": 0.0}
    errors = [predict(p, params) / p.measured_s - 1 for _, _, p in rows]
    assert max(map(abs, errors)) < 0.05
    assert {w.d for _, w, _ in rows} == {64, 128}  # no seen lone d 256: the fresh set's


def test_other_implementations_keep_one_solo_rate() -> None:
    """Only iosim-triton's entry carries the two new terms (calibrate/impl_fit.py LONE_IMPLS)."""
    assert H200.measured is not None
    for name, calibration in H200.measured.impls.items():
        has = {"solo_rate_one", "lone_prologue_bandwidth"} & set(calibration.terms)
        assert bool(has) == (name == "iosim-triton"), name


def test_the_fresh_triton13_set_is_new_and_varies_every_axis() -> None:
    """benchmarks/impl_validation_h200.py's TRITONFRESH13 (measured after tag triton13-frozen):
    no point equals one of any other set of the script or of any committed H200 implementation
    record (this round's aside); at least 14 points, most lone grids, d 64/128/256 among the
    lone ones, fp16 and bf16, causal and not, N = N_kv multiples of 128 none a power of two,
    heads 1-16, batch 1-2, and grids above one wave as controls."""
    from benchmarks import impl_validation_h200 as V

    fresh = V.TRITONFRESH13
    mha_axes = {k: v for k, v in PREFILL_AXES.items() if k != "GQA group"}  # iosim-triton: MHA
    assert_fresh(fresh, as_is, impl_seen("tritonfresh13"), size=(14, None), axes=mha_axes)
    impl = get_implementation("iosim-triton")
    lone = [w for w in fresh if _pieces(w, impl, H200, 1.0, None).alone.any()]
    assert len(lone) > len(fresh) / 2 and len(fresh) - len(lone) >= 3
    assert {w.d for w in lone} == {64, 128, 256}
    assert {(w.dtype, w.causal) for w in fresh} == {(t, c) for t in ("fp16", "bf16")
                                                    for c in (False, True)}
    assert all(w.n == w.n_kv and w.n % 128 == 0 and w.n & (w.n - 1) for w in fresh)
    assert all(w.kv_heads == w.heads for w in fresh)
    assert {min(w.heads for w in fresh), max(w.heads for w in fresh)} == {1, 16}
    assert {w.batch for w in fresh} == {1, 2}


def test_the_fresh_lone_kernels_at_d64_and_d128_are_within_six_percent() -> None:
    """tests/data/h200-impl-tritonfresh13.json (one H200 call after tag triton13-frozen,
    `python3 benchmarks/impl_validation_h200.py OUT.json 75 tritonfresh13 iosim-triton`;
    judged by benchmarks/triton13_judge.py, nothing refitted): the eleven lone d 64 and d 128
    kernels within 6 % of their device times (worst −5.0 %, point 7). The four lone d 256
    kernels, the extrapolation no seen record covered, are 10-19 % too fast (solo_rate_one does
    not hold at d 256's 4-warp kernel: reports/impl-validation/triton13.md), within 20 %."""
    from benchmarks.triton13_judge import rows

    table = rows(json.loads((DATA / "h200-impl-tritonfresh13.json").read_text()))
    lone = [r for r in table if r["lone"]]
    assert len(lone) == 15
    assert all(abs(r["frozen_kernel"]) < 0.06 for r in lone if r["w"].d <= 128)
    d256 = [r["frozen_kernel"] for r in lone if r["w"].d == 256]
    assert len(d256) == 4 and all(-0.20 < e < -0.09 for e in d256)
