"""FlexAttention's decoding template timed from what it runs (issue 11, round 10:
analysis/impl_decoding.py, measured.impls.flex.forward's decode_* figures, benchmarks/flex10_fit.py)."""

from __future__ import annotations

import math

import pytest

from iosim.analysis.compare import compare
from iosim.analysis.impl_forward import runs_decoding_kernel
from iosim.errors import ConfigError
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import PREFILL_AXES, impl_seen

H200 = resolve_hardware("h200").hardware
FLEX = get_implementation("flex")


def test_the_fresh_flex10_set_is_new_and_varies_every_axis() -> None:
    """FLEXFRESH10 (benchmarks/impl_validation_h200.py) has no point of any earlier set or of
    round 8's probe; at least 4 decode steps on the decoding template (N_kv 2k-128k, GQA, batch
    1-32) and prefills varying every axis the brief names."""
    from benchmarks import impl_validation_h200 as V

    fresh = V.FLEXFRESH10
    assert_fresh(fresh, as_is, impl_seen("flexfresh10"), size=(12, None), axes=PREFILL_AXES)
    decodes = [w for w in fresh if runs_decoding_kernel(FLEX, w)]
    assert len(decodes) >= 4
    assert min(w.n_kv for w in decodes) >= 2048 and max(w.n_kv for w in decodes) <= 131072
    assert {w.batch for w in decodes} >= {1, 32} and any(w.group_size > 1 for w in decodes)
    prefill = [w for w in fresh if w.n > 1]
    sm = H200.sm_count or 0
    assert any(w.batch * w.heads < sm and math.ceil(w.n / 128) * w.batch * w.heads < sm
               for w in prefill)
    assert any(w.n % 128 for w in prefill) and {w.d for w in prefill} == {64, 128}
    assert {w.causal for w in prefill} == {True, False}
    assert {w.dtype for w in prefill} == {"fp16", "bf16"}
    assert any(w.group_size > 1 for w in prefill) and any(w.n != w.n_kv for w in prefill)


def _independent_kernel_s(w: Workload) -> float:
    """The template's time rebuilt from templates/flex_decode.py.jinja line by line, apart
    from impl_decoding.py: every program of the grid (x: query block, y: batch·kv head,
    z: split) in launch order, its key blocks [block_n_start, min(end, last_valid)) with the
    empty block mask (one sparse block of 2^30 keys, kv_num_blocks 1, no full blocks), placed
    round robin on the SMs; an SM's time its longest program's, stretched per other walker."""
    f = H200.measured.impls["flex"].forward  # type: ignore[union-attr]
    sms = H200.sm_count or 0
    group = w.heads // w.kv_heads
    block_m = max(16, 2 ** math.ceil(math.log2(w.n * group)))
    splits = max(sms // (w.batch * w.kv_heads) * 2, 1)
    sparse, block_n = 1 << 30, 64
    tile = math.ceil(math.ceil(1 * sparse / splits) / block_n) * block_n  # TILE_KV
    last_valid = min(1 * sparse // block_n, max(math.ceil(w.n_kv / block_n), 1))
    steps_of = []
    for z in range(splits):
        for _y in range(w.batch * w.kv_heads):
            for _x in range(math.ceil(w.n * group / block_m)):
                start = z * (tile // block_n)
                steps_of.append(max(0, min(start + tile // block_n, last_valid) - start))
    step = f["decode_step_s"] + block_n * 2 * w.d * w.element_bytes / f["decode_program_bandwidth"]
    walkers: dict[int, int] = {}
    longest: dict[int, float] = {}
    for i, steps in enumerate(steps_of):
        if steps:
            walkers[i % sms] = walkers.get(i % sms, 0) + 1
            longest[i % sms] = max(longest.get(i % sms, 0.0),
                                   f["decode_program_overhead_s"] + steps * step)
    return max(t * (1 + f["decode_shared"] * (walkers[s] - 1)) for s, t in longest.items())


@pytest.mark.parametrize("w", [
    Workload(1, n_kv=3000, d=128, heads=16, kv_heads=4, batch=2),  # 8 walkers, N_kv ragged
    Workload(1, n_kv=5000, d=64, heads=8, kv_heads=8, batch=20),  # 160 walkers: some SMs two
    Workload(1, n_kv=700, d=128, heads=32, kv_heads=1, batch=1, dtype="bf16"),  # G 32: BLOCK_M 32
])
def test_the_decoding_time_is_an_independent_walk_of_the_template(w: Workload) -> None:
    est = compare(w, H200, impl=FLEX, profile="measured").algorithms[-1]
    (kernel,) = est.kernels
    assert kernel.timed_by == "flex-decoding"
    f = H200.measured.impls["flex"].forward  # type: ignore[union-attr]
    splits = max((H200.sm_count or 0) // (w.batch * w.kv_heads) * 2, 1)
    combine = f["decode_combine_s"] + (f["decode_combine_per_output_s"] * w.batch * w.heads
                                       * w.d if splits > 1 else 0.0)
    assert kernel.time_s == pytest.approx(_independent_kernel_s(w) + combine, rel=1e-9)


def test_a_causal_decode_step_and_the_main_template_stay_as_before() -> None:
    """A causal decode step's block mask has full blocks, which the template splits for real
    (no record measured it): the roofline; a GQA ratio that is not a power of two runs the main
    template: the forward schedule."""
    causal = Workload(1, n_kv=8192, d=128, heads=32, kv_heads=8, causal=True)
    main = Workload(1, n_kv=8192, d=128, heads=28, kv_heads=4)
    for w, by in ((causal, "roofline"), (main, "schedule")):
        (kernel,) = compare(w, H200, impl=FLEX, profile="measured").algorithms[-1].kernels
        assert kernel.timed_by == by


def test_the_seen_decode_steps_are_those_that_ran_the_template() -> None:
    """flex10_fit's seen set: the 7 decode steps whose kernels list the template's combine;
    the three of an older harness at a power-of-two ratio (dynamic shapes: the main template)
    list none and are left out."""
    from benchmarks.flex10_fit import seen_decode_points

    seen = {(path.rsplit("/", 1)[-1], p.get("index")) for path, p in seen_decode_points()}
    assert seen == {("h200-host-floor.json", None), ("h200-impl-fit2.json", 13),
                    ("h200-impl-flexrefit7.json", 6), ("h200-impl-flexfresh8.json", 11),
                    ("h200-impl-flexfresh9.json", 5), ("h200-impl-flexfresh9.json", 6),
                    ("h200-impl-flexfresh9.json", 7)}


def test_the_shipped_decode_figures_are_the_fit_of_the_seen_records() -> None:
    """measured.impls.flex.forward's decode_* figures are benchmarks/flex10_fit.py's fit."""
    from benchmarks.flex10_fit import fit_combine, fit_template, seen_decode_points
    from iosim.calibrate.flex_fit import template_time

    seen = seen_decode_points()
    ws = [Workload(**p["workload"]) for _, p in seen]
    fitted = fit_template(ws, [float(template_time(p) or 0) for _, p in seen])
    from benchmarks.flex10_fit import combine_time

    fitted.update(fit_combine(ws, [float(combine_time(p) or 0) for _, p in seen]))
    shipped = H200.measured.impls["flex"].forward  # type: ignore[union-attr]
    for name, value in fitted.items():
        assert shipped[name] == pytest.approx(value, rel=1e-3), name


def test_a_partial_decoding_entry_is_one_line() -> None:
    import yaml

    from iosim.inputs.impl_calibration import load_impl_calibrations

    raw = yaml.safe_load("flex: {efficiency: {fused: 0.5}, source: s, forward: {efficiency_d128: "
                         "0.8, program_overhead_s: 5.0e-06, decode_step_s: 1.0e-06, source: x}}")
    with pytest.raises(ConfigError, match="decode_program_bandwidth: missing"):
        load_impl_calibrations("h200.yaml", raw)


def test_the_round_10_judgement_is_the_record_s() -> None:
    """docs/implementations.md's round-10 judgement (benchmarks/flex10_judge.py on
    tests/data/h200-impl-flexfresh10.json, measured at tag flex10-frozen): the calls' median
    error 7.7 % with the decoding-template model, 57.0 % with main's profile, on the same 14
    points; every kernel-bound decode step within 11 %."""
    import json
    from statistics import median

    from benchmarks.flex10_judge import judge
    from tests.conftest import DATA

    rows = judge(json.loads((DATA / "h200-impl-flexfresh10.json").read_text())["points"])
    assert len(rows) == 14
    for key, call in (("new", 0.077), ("old", 0.570)):
        assert round(median(abs(r[f"{key}_s"] / r["call_s"] - 1) for r in rows), 3) == call
    decodes = [r for r in rows if r["timed_by"] == "flex-decoding" and r["kernel_s"] > 0.9
               * r["call_s"]]
    assert len(decodes) == 5 and all(abs(r["new_s"] / r["call_s"] - 1) < 0.11 for r in decodes)
