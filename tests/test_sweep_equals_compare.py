"""Issue 12, item 5: a one-point sweep accepts exactly what compare accepts and gives the same
numbers. The one difference is by design (iosim sweep --help): blocks that do not fit the SRAM
are refused by compare and marked `fits_sram: false` by a sweep, so there compare's refusal is
a TilingError and the sweep's point does not fit."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.errors import IosimError, TilingError
from iosim.inputs.workload import Workload
from tests.conftest import examples

EDGES = [0, 1, 2**26, 2**26 + 1, 2**40, 2**62, 2**63]


@st.composite
def points(draw):
    """A plausible workload; in one case out of three one value pushed to an edge (0, the
    length limit and one past it, 2^40, 2^62, 2^63)."""
    p = {
        "n": draw(st.integers(1, 5000)), "n_kv": draw(st.none() | st.integers(1, 5000)),
        "d": draw(st.integers(1, 300)), "heads": draw(st.sampled_from([1, 2, 3, 4, 8, 16])),
        "kv_heads": draw(st.none() | st.sampled_from([1, 2, 4])),
        "batch": draw(st.integers(1, 64)),
        "dtype": draw(st.sampled_from(["fp16", "fp32", "fp8", "fp8_e4m3"])),
        "causal": draw(st.booleans()),
        "pass_": draw(st.sampled_from(["fwd", "bwd", "fwdbwd"])),
        "sparsity": draw(st.sampled_from([1.0, 1.0, 0.5, 0.125, 0.3])),
        "block_q": draw(st.none() | st.integers(1, 512)),
        "block_kv": draw(st.none() | st.integers(1, 512)),
        "sram": draw(st.none() | st.sampled_from(["elements", "bytes"])),
        "sram_value": draw(st.integers(1, 300_000)),
        "gpu": draw(st.sampled_from(["a100", "h100", "t4", "mi300x"])),
        "d_v": draw(st.none() | st.none() | st.integers(1, 300)),  # issue 14: V's own head dim
        "window": draw(st.none() | st.none() | st.integers(1, 6000)),
        "seqlens": None,
    }
    if draw(st.integers(0, 5)) == 0:  # packed sequences: a partition of N (issue 14 item 1)
        cuts = sorted(draw(st.sets(st.integers(1, p["n"] - 1), max_size=6))) if p["n"] > 1 else []
        p["seqlens"] = tuple(b - a for a, b in zip([0, *cuts], [*cuts, p["n"]], strict=True))
        p["batch"] = draw(st.sampled_from([1, 1, 2]))
    if draw(st.integers(0, 2)) == 0:
        key = draw(st.sampled_from(["n", "n_kv", "d", "heads", "kv_heads", "batch", "block_q",
                                    "block_kv", "sram_value"]))
        p[key] = draw(st.sampled_from(EDGES))
    return p


def _compare(p, **options):
    w = Workload(p["n"], n_kv=p["n_kv"], d=p["d"], heads=p["heads"], kv_heads=p["kv_heads"],
                 batch=p["batch"], dtype=p["dtype"], causal=p["causal"], pass_=p["pass_"],
                 sparsity=p["sparsity"], d_v=p["d_v"], window=p["window"],
                 seqlens=p["seqlens"])
    return compare(w, p["gpu"], block_q=p["block_q"], block_kv=p["block_kv"],
                   sram=p["sram_value"] if p["sram"] == "bytes" else None,
                   sram_elements=p["sram_value"] if p["sram"] == "elements" else None, **options)


def _sweep(p, **options):
    return sweep(SweepSpec(
        n=(p["n"],), gpu=(p["gpu"],), n_kv=(p["n_kv"],), d=(p["d"],), heads=(p["heads"],),
        kv_heads=(p["kv_heads"],), batch=(p["batch"],), dtype=(p["dtype"],),
        causal=(p["causal"],), pass_=(p["pass_"],), sparsity=(p["sparsity"],),
        block_q=(p["block_q"],), block_kv=(p["block_kv"],),
        window=(p["window"],), seqlens=p["seqlens"],
        sram_bytes=(p["sram_value"] if p["sram"] == "bytes" else None,),
        sram_elements=(p["sram_value"] if p["sram"] == "elements" else None,), d_v=(p["d_v"],),
        **options))


def _outcome(run, p):
    try:
        return run(p), None
    except IosimError as exc:
        return None, exc


# the README run samples the ci profile's share of 150 points (examples); `pytest -m slow` all 150
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=points())
def test_one_point_sweep_equals_compare(p):
    one_point_sweep_equals_compare(p)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=points())
def test_one_point_sweep_equals_compare_at_150_points(p):
    one_point_sweep_equals_compare(p)


def one_point_sweep_equals_compare(p):
    """A point's sweep and its compare: what one refuses the other refuses (but for a default
    rule's blocks that overflow the SRAM, shown by the sweep with its fits note), and otherwise
    the same bytes, FLOPs, time and blocks."""
    c, c_err = _outcome(_compare, p)
    s, s_err = _outcome(_sweep, p)
    event("refused by both" if s_err else "compare: blocks do not fit" if c_err else "accepted")
    if s_err is not None:  # whatever a sweep refuses, compare refuses
        assert c_err is not None, (p, s_err)
        return
    assert s is not None
    if c_err is not None:  # ... and the one thing compare refuses that a sweep shows
        assert isinstance(c_err, TilingError), (p, c_err)
        assert not all(bool(a.fits_sram[0]) for a in s.algorithms if a.tiled), p
        return
    assert c is not None
    for grid in s.algorithms:
        a = c.algorithm(grid.name)
        assert int(grid.hbm_read_bytes[0]) == a.hbm_read_bytes, (p, grid.name)
        assert int(grid.hbm_write_bytes[0]) == a.hbm_write_bytes, (p, grid.name)
        assert int(grid.matmul_flops[0]) == a.matmul_flops, (p, grid.name)
        assert int(grid.elementwise_flops[0]) == a.elementwise_flops, (p, grid.name)
        assert math.isclose(float(grid.time_s[0]), a.time_s, rel_tol=1e-12), (p, grid.name)
        if a.tiling is not None:
            assert (int(grid.block_q[0]), int(grid.block_kv[0])) == (a.tiling.block_q,
                                                                     a.tiling.block_kv)
            # a default rule's blocks that overflow the SRAM by ℓ, m are kept, with a fits note
            assert bool(grid.fits_sram[0]) == (not a.tiling.fits_note)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=points())
def test_one_point_measured_sweep_equals_compare(p):
    """The same with the measured profile (the H200, the shipped GPU with a measured section):
    the sweep charges each point's DRAM estimate (analysis/sweep_measured.py) as compare does."""
    p = {**p, "gpu": "h200"}
    c, c_err = _outcome(lambda q: _compare(q, profile="measured"), p)
    s, s_err = _outcome(lambda q: _sweep(q, profile="measured"), p)
    if s_err is not None:
        assert c_err is not None, (p, s_err)
        return
    assert s is not None
    if c_err is not None:
        assert isinstance(c_err, TilingError), (p, c_err)
        return
    assert c is not None
    for grid in s.algorithms:
        a = c.algorithm(grid.name)
        assert int(grid.hbm_read_bytes[0]) == a.hbm_read_bytes, (p, grid.name)
        for column in ("time_s", "memory_time_s", "compute_time_s"):
            assert math.isclose(float(getattr(grid, column)[0]), float(getattr(a.totals, column)),
                                rel_tol=1e-12), (p, grid.name, column)


def test_measured_sweep_equals_compare_with_the_triton_backward_schedule():
    """iosim's Triton backward kernels are timed by the fitted list schedule (schedule.py) in
    compare; a sweep point does the same, causal or not, forward, backward or both."""
    for causal, pass_, n in itertools.product((False, True), ("fwd", "bwd", "fwdbwd"),
                                              (1000, 2048)):
        p = {"n": n, "n_kv": None, "d": 64, "heads": 4, "kv_heads": None, "batch": 2,
             "dtype": "fp16", "causal": causal, "pass_": pass_, "sparsity": 1.0,
             "block_q": None, "block_kv": None, "sram": None, "sram_value": 0, "gpu": "h200",
             "d_v": None, "window": None, "seqlens": None}
        algorithms = ("standard", "flash2", "triton")
        c = _compare(p, profile="measured", algorithms=algorithms)
        s = _sweep(p, profile="measured", algorithms=algorithms)
        for grid in s.algorithms:
            assert math.isclose(float(grid.time_s[0]), c.algorithm(grid.name).time_s,
                                rel_tol=1e-12), (p, grid.name)


def test_measured_sweep_points_sharing_a_dram_estimate_each_equal_compare():
    """A measured-profile sweep computes the DRAM estimate once per count of (batch, head)
    units (sweep_measured.units_key): every factoring of batch · heads in this grid (1 × 8,
    2 × 4, 4 × 2, 8 × 1, ...) is still compare's estimate at that point, causal or not,
    forward and training step, with iosim's Triton kernels (their list schedule) too."""
    algorithms = ("standard", "flash1", "flash2", "triton")
    spec = SweepSpec(n=(1000,), gpu=("h200",), d=(64,), heads=(1, 2, 4, 8), batch=(1, 2, 4, 8),
                     causal=(False, True), pass_=("fwd", "fwdbwd"), algorithms=algorithms,
                     profile="measured")
    s = sweep(spec)
    index = s.index
    for at in range(s.points):
        batch, heads = spec.batch[index["batch"][at]], spec.heads[index["heads"][at]]
        causal, pass_ = spec.causal[index["causal"][at]], spec.pass_[index["pass_"][at]]
        c = compare(Workload(1000, d=64, heads=heads, batch=batch, causal=causal, pass_=pass_),
                    "h200", profile="measured", algorithms=algorithms)
        for grid in s.algorithms:
            a = c.algorithm(grid.name)
            for column in ("time_s", "memory_time_s", "compute_time_s"):
                assert math.isclose(float(getattr(grid, column)[at]),
                                    float(getattr(a.totals, column)), rel_tol=1e-12), (
                    batch, heads, causal, pass_, grid.name, column)


@st.composite
def decode_points(draw):
    """A decoding step as `--splits auto` sees it: GQA or not, contiguous or paged, MLA's
    latent cache now and then, on a GPU with a measured section or on its spec roofs."""
    kv = draw(st.sampled_from([1, 2, 8]))
    if draw(st.integers(0, 6)) == 0:
        return {"n_kv": draw(st.integers(64, 70_000)), "d": 576, "d_v": 512, "kv_heads": 1,
                "heads": draw(st.sampled_from([16, 128])), "batch": draw(st.integers(1, 40)),
                "latent_kv": True, "page_size": None,
                "gpu": draw(st.sampled_from([("h200", "measured"), ("h100", "spec")]))}
    return {"n_kv": draw(st.integers(1, 140_000)), "d": draw(st.sampled_from([64, 128])),
            "d_v": None, "kv_heads": kv, "heads": kv * draw(st.sampled_from([1, 4, 8])),
            "batch": draw(st.integers(1, 64)), "latent_kv": False,
            "page_size": draw(st.sampled_from([None, None, 16])),
            "gpu": draw(st.sampled_from([("h200", "measured"), ("h200", "spec"),
                                         ("a100", "spec")]))}


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=decode_points())
def test_one_point_sweep_splits_auto_equals_compare(p):
    """`sweep --splits auto` runs compare's rule: a one-point sweep's splitkv is compare's at
    the count choose_splits finds fastest (split_choice.with_best_pick), bytes and time; the
    bounded search the sweep calls (best_split_count) picks that same count."""
    from iosim.analysis.split_choice import best_split_count, choose_splits

    gpu, profile = p["gpu"]
    w = Workload(1, n_kv=p["n_kv"], d=p["d"], d_v=p["d_v"], heads=p["heads"],
                 kv_heads=p["kv_heads"], batch=p["batch"], latent_kv=p["latent_kv"],
                 page_size=p["page_size"])
    best = choose_splits(w, gpu, profile=profile).best.splits
    assert best_split_count(w, gpu, profile=profile) == best, p
    c = compare(w, gpu, algorithms=["splitkv"], splits=best, profile=profile).algorithm("splitkv")
    s = sweep(SweepSpec(n=(1,), gpu=(gpu,), n_kv=(p["n_kv"],), d=(p["d"],), d_v=(p["d_v"],),
                        heads=(p["heads"],), kv_heads=(p["kv_heads"],), batch=(p["batch"],),
                        latent_kv=p["latent_kv"], page_size=p["page_size"], splits=("auto",),
                        algorithms=("splitkv",), profile=profile)).algorithms[0]
    assert int(s.splits[0]) == best
    assert int(s.hbm_bytes[0]) == c.hbm_bytes
    assert math.isclose(float(s.time_s[0]), c.time_s, rel_tol=1e-12)


def test_sweep_splits_auto_is_refused_where_compare_refuses_it():
    """One line each, naming the parameter: without splitkv, with cascade, in a backward."""
    base = {"n": (1,), "gpu": ("h200",), "n_kv": (4096,), "splits": ("auto",)}
    for extra, words in (({"algorithms": ("flash2",)}, "applies to splitkv"),
                         ({"algorithms": ("splitkv", "cascade")}, "cascade splits by its own"),
                         ({"algorithms": ("splitkv",), "pass_": ("bwd",)}, "forward"),
                         ({"algorithms": ("splitkv",), "splits": ("fast",)}, "neither")):
        try:
            sweep(SweepSpec(**{**base, **extra}))
        except IosimError as exc:
            assert words in str(exc) and "splits" in str(exc), exc
        else:
            raise AssertionError(extra)


def test_measured_sweep_equals_compare_with_the_mla_prefill_time():
    """flash2 at d ≠ d_v and our MLA prefill kernel's tiles is timed by
    measured.mla_prefill_time (estimates/mla_prefill_time.py) in compare; a sweep point does the
    same; at FA2's code tiles (two programs per SM) neither applies it."""
    for causal, dtype, n, tiles_given in itertools.product((False, True), ("fp16", "bf16"),
                                                     (700, 2222), (True, False)):
        p = {"n": n, "n_kv": None, "d": 192, "heads": 6, "kv_heads": None, "batch": 2,
             "dtype": dtype, "causal": causal, "pass_": "fwd", "sparsity": 1.0,
             "block_q": 128 if tiles_given else None, "block_kv": 64 if tiles_given else None,
             "sram": None, "sram_value": 0, "gpu": "h200", "d_v": 128, "window": None,
             "seqlens": None}
        c = _compare(p, profile="measured", algorithms=("standard", "flash2"))
        s = _sweep(p, profile="measured", algorithms=("standard", "flash2"))
        assert (c.algorithm("flash2").kernels[0].timed_by == "mla-prefill") == tiles_given
        for grid in s.algorithms:
            assert math.isclose(float(grid.time_s[0]), c.algorithm(grid.name).time_s,
                                rel_tol=1e-12), (p, grid.name)
