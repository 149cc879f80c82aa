"""What `compare` (and a one-point sweep) prints for a backward is what the calibration judged:
at every point of the committed backward records, from the record's shapes, the call time of
`compare --pass bwd --profile measured` is the judges' predicted time (calibrate/torch_bwd_fit.py
predict_time for eager PyTorch and SDPA's flash backward, calibrate/backward_fit.py
predict_launched_time for iosim's Triton backward), and a training step (`--pass fwdbwd`) is
its forward call plus its backward call. No GPU, no torch: the records are JSON."""

from __future__ import annotations

import pytest

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.calibrate import backward_fit as B
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate import torch_bwd_fit as F
from iosim.calibrate.backward_fit import workload_of
from iosim.estimates import eager_backward as EB
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware import Hardware
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.workload import Workload
from tests.conftest import run_cli as run

EAGER_RECORDS = (D.FRESH8, D.FRESH9)
"""bwd8's (the out-of-place kernels, judged with ncu) and bwd9's (the host floor) fresh sets."""


@pytest.fixture(scope="module")
def h200() -> Hardware:
    return load_hardware(config_dir() / "h200.yaml")


def _points(paths: tuple, key: str) -> list[dict]:
    points = [p for r in D.load(list(paths)) for p in r["points"] if key in p]
    assert points, f"no {key} point in {paths}"
    return points


def _call(w: Workload, hw: Hardware, **options: object):  # type: ignore[no-untyped-def]
    return compare(w, hw, profile="measured", **options).algorithms[-1]  # type: ignore[arg-type]


def test_the_yaml_holds_the_eager_fit_the_judges_use(h200: Hardware) -> None:
    fitted = dict(h200.measured.impls["torch-naive"].backward)
    t = F.EAGER_TIME
    assert fitted == pytest.approx({"efficiency": t.efficiency, "memory": t.memory_efficiency,
                                    "program_overhead_s": t.overhead_s, "call_overhead_s": t.call_s})


@pytest.mark.parametrize("record", EAGER_RECORDS, ids=lambda p: p.name)
def test_compare_s_eager_backward_is_the_judged_prediction_at_every_point(
        h200: Hardware, record) -> None:  # type: ignore[no-untyped-def]
    for p in _points((record,), "eager_s"):
        a = _call(workload_of(p), h200, impl="torch-naive")
        assert a.call_time_s == pytest.approx(F.predict_time(p, "eager", h200, F.EAGER_TIME),
                                              rel=1e-12), p["id"]
        assert a.time_s + a.call_overhead_s == pytest.approx(
            F.predict_time(p, "eager", h200, F.EAGER_TIME, host_floor=False), rel=1e-12), p["id"]
        assert {k.timed_by for k in a.kernels} == {"eager-bwd"}


def test_compare_s_sdpa_backward_is_the_judged_prediction_at_every_point(h200: Hardware) -> None:
    for p in _points((D.FRESH9,), "sdpa_s"):
        a = _call(workload_of(p), h200, impl="sdpa-flash")
        assert a.call_time_s == pytest.approx(F.predict_time(p, "sdpa", h200, F.SDPA_TIME),
                                              rel=1e-12), p["id"]


def test_compare_s_triton_backward_is_the_judged_prediction_at_every_point(
        h200: Hardware) -> None:
    s = h200.measured.backward_schedule
    model = B.TimeModel(s.efficiency, s.program_overhead_s)  # the YAML's = backward_fit's fit
    for p in _points((D.FRESH7,), "triton_s"):
        a = _call(workload_of(p), h200, algorithms=["triton"])
        assert a.call_time_s == pytest.approx(B.predict_launched_time(p, h200, model),
                                              rel=1e-12), p["id"]


def test_iosim_triton_s_backward_is_algo_triton_s_at_every_point(h200: Hardware) -> None:
    """--impl iosim-triton runs iosim's Triton backward (its profile's backward.algorithm):
    the same call, kernels and floor as --algo triton at every fresh7 point."""
    for p in _points((D.FRESH7,), "triton_s"):
        w = workload_of(p)
        mine = _call(w, h200, impl="iosim-triton")
        algo = _call(w, h200, algorithms=["triton"])
        assert mine.name == "iosim-triton" and mine.impl is not None
        assert mine.call_time_s == algo.call_time_s, p["id"]
        assert [(k.name, k.time_s) for k in mine.kernels] == \
            [(k.name, k.time_s) for k in algo.kernels], p["id"]
        assert mine.floor == algo.floor != ""


def _one_point(w: Workload, **options: object):  # type: ignore[no-untyped-def]
    return sweep(SweepSpec(n=(w.n,), n_kv=(w.n_kv,), d=(w.d,), heads=(w.heads,),
                           kv_heads=(w.kv_heads,), batch=(w.batch,), dtype=(w.dtype,),
                           causal=(w.causal,), pass_=(w.pass_,), gpu=("h200",),
                           profile="measured", **options)).algorithms[-1]  # type: ignore[arg-type]


def test_a_one_point_sweep_prints_the_judged_backward_call(h200: Hardware) -> None:
    """Two points of each record: a host-bound one and the longest (the sweep with --impl runs
    compare per point; the vectorised one has the Triton launcher floor of its own)."""
    for record, key, options, judged in (
            (D.FRESH9, "eager_s", {"impl": "torch-naive"},
             lambda p: F.predict_time(p, "eager", h200, F.EAGER_TIME)),
            (D.FRESH9, "sdpa_s", {"impl": "sdpa-flash"},
             lambda p: F.predict_time(p, "sdpa", h200, F.SDPA_TIME)),
            (D.FRESH7, "triton_s", {"algorithms": ("triton",)},
             lambda p: B.predict_launched_time(p, h200, B.TimeModel(
                 h200.measured.backward_schedule.efficiency,
                 h200.measured.backward_schedule.program_overhead_s)))):
        points = sorted(_points((record,), key), key=lambda p: p[key])
        for p in (points[0], points[-1]):
            g = _one_point(workload_of(p), **options)
            assert g.call_time_s is not None
            assert float(g.call_time_s[0]) == pytest.approx(judged(p), rel=1e-12), p["id"]


@pytest.mark.parametrize("options", [{"impl": "torch-naive"}, {"impl": "sdpa-flash"},
                                     {"impl": "iosim-triton"}, {"algorithms": ["triton"]}],
                         ids=str)
@pytest.mark.parametrize("shape", [dict(n=900, heads=4), dict(n=4096, heads=16, kv_heads=4,
                                                               causal=True)], ids=str)
def test_a_training_step_is_its_forward_call_plus_its_backward_call(
        h200: Hardware, options: dict, shape: dict) -> None:
    w = Workload(d=64, **shape)
    step = _call(w.with_(pass_="fwdbwd"), h200, **options)
    calls = [_call(w.with_(pass_=p), h200, **options) for p in ("fwd", "bwd")]
    assert [c.pass_ for c in step.calls] == ["fwd", "bwd"]
    assert step.call_time_s == pytest.approx(sum(c.call_time_s for c in calls), rel=1e-12)
    assert [k.name for k in step.kernels] == [k.name for c in calls for k in c.kernels]
    assert step.time_s == pytest.approx(sum(c.time_s for c in calls), rel=1e-12)
    g = _one_point(w.with_(pass_="fwdbwd"), **options)
    assert g.call_time_s is not None
    assert float(g.call_time_s[0]) == pytest.approx(step.call_time_s, rel=1e-12)


def test_the_text_names_the_floor_that_applies() -> None:
    # fresh8's fp16/n900/d64/b1h4kv4/full: 0.501 ms measured, its kernels 0.1 ms: host-bound
    flags = ("--gpu", "h200", "--n", "900", "--heads", "4", "--profile", "measured")
    host = f"{(EB.HOST_CALL_S + 7 * EB.HOST_PER_LAUNCH_S) * 1e6:.1f} µs"  # 7 launches
    bwd = " ".join(run("compare", *flags, "--impl", "torch-naive", "--pass", "bwd").output.split())
    assert f"One torch-naive call as do_bench times it: {host}, its host-bound floor " \
           "(autograd's dispatch of 7 launches," in bwd
    assert "timed kernel by kernel by eager's backward model" in bwd
    step = " ".join(run("compare", *flags, "--impl", "torch-naive", "--pass", "fwdbwd")
                    .output.split())
    assert "One torch-naive training step as do_bench times it:" in step
    assert "the forward call" in step and "(torch-naive's fitted floor;" in step
    assert f"+ the backward call {host}, its host-bound floor (autograd's dispatch" in step
    triton = " ".join(run("compare", *flags, "--algo", "triton", "--pass", "fwdbwd")
                      .output.split())
    assert "its host-bound floor (the Python launcher's, estimates/launch_floor.py;" in triton


def test_a_backward_without_a_fitted_model_says_so_in_one_line(h200: Hardware) -> None:
    from iosim.inputs.impl_calibration import with_impl_calibration
    from iosim.record import replace

    for impl in ("torch-naive", "sdpa-flash"):
        bare = with_impl_calibration(h200, impl, replace(h200.measured.impls[impl], backward={}))
        c = compare(Workload(2048, heads=8, pass_="bwd"), bare, impl=impl, profile="measured")
        said = [n for n in c.roofs.notes if "backward" in n]
        assert len(said) == 1 and said[0].startswith(f"{impl}'s backward has no fitted model")
        assert "not validated" in said[0]
        assert {k.timed_by for k in c.algorithms[1].kernels} == {"roofline"}


def test_compare_s_triton_forward_is_the_calibration_s_prediction_at_its_tiles(
        h200: Hardware) -> None:
    """The forward half of a Triton training step: `compare --algo triton` at every point of
    the calibration record that ran the kernel's shipped tiles (fit and hold-out: 128 × 64) is
    calibrate/fit.py's prediction, the one reports/calibration-h200 judges."""
    from iosim.calibrate.fit import fit
    from iosim.calibrate.fit import workload_of as calibration_workload
    from iosim.calibrate.records import load_calibration

    result = fit(load_calibration(D.DATA / "h200-calibration.json"), h200)
    judged = [p for p in result.points if p.m.kernel == "attn_fwd" and p.split in ("fit", "holdout")]
    assert len(judged) >= 20
    for p in judged:
        m = p.m
        w = calibration_workload(m.n, m.d, m.batch, m.heads, m.dtype, m.causal)
        a = _call(w, h200, algorithms=["triton"])
        assert (a.tiling.block_q, a.tiling.block_kv) == (m.block_m, m.block_n), m.id
        # the YAML keeps the fit's efficiencies and vector rate to four digits (0.7342, 47.34)
        assert a.call_time_s == pytest.approx(p.predicted_time_s, rel=1e-4), m.id
