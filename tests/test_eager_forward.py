"""Eager PyTorch's forward (torch-naive) as the H200 records show it runs: its elementwise
kernels stream every byte they touch whether or not S is in the L2, torch's softmax picks one of
four kernels by row length, and its GEMMs fall back to CUTLASS at N_kv % 8 != 0 — each rule held
to the recorded launches (tests/data/h200-impl-*.json, benchmarks/impl_validation_h200.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from iosim.analysis.compare import compare
from iosim.calibrate.eager_kernel_fit import ELEMENTWISE, matched_times
from iosim.estimates.eager_softmax import softmax_kernel
from iosim.inputs.workload import Workload
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import PREFILL_AXES, impl_seen

DATA = Path(__file__).parent / "data"
SEEN = ("fit", "fit2", "calibrate", "validation", "validation2", "validation3", "validation4",
        "validation5", "validation6")
"""The records the shipped torch-naive fit was made on (configs/gpus/h200.yaml's source)."""
RECORDED_KERNEL = {"softmax_warp_forward": "warp", "cunn_SoftMaxForwardReg": "reg",
                   "cunn_SoftMaxForwardSmem": "smem", "cunn_SoftMaxForward": "block"}


def eager_forwards(*, distinct: bool = True) -> list[dict[str, Any]]:
    """Every timed torch-naive point of the SEEN records (each shape once, unless not
    `distinct`: the fit counts a shape as often as the records hold it)."""
    out, seen = [], set()
    for name in SEEN:
        for p in json.loads((DATA / f"h200-impl-{name}.json").read_text())["points"]:
            key = json.dumps(p["workload"], sort_keys=True)
            if p.get("impl") == "torch-naive" and "time_s" in p and (
                    not distinct or key not in seen):
                seen.add(key)
                out.append(p)
    return out


FORWARDS = eager_forwards()


def test_the_softmax_kernel_is_the_one_every_record_names() -> None:
    """softmax_kernel's boundaries (SoftMax.cu's dispatch) against each recorded softmax launch:
    all four kernels occur and every point agrees."""
    named = set()
    for p in FORWARDS:
        w = Workload(**p["workload"])
        launch = next(k["name"] for k in p["kernels"] if "oftMax" in k["name"]
                      or "softmax" in k["name"])
        recorded = RECORDED_KERNEL[re.search(r"(softmax_warp_forward|cunn_SoftMaxForward\w*)",
                                             launch).group(1)]
        named.add(recorded)
        assert softmax_kernel(w.n_kv, w.element_bytes) == recorded, (p["workload"], launch)
    assert named == set(RECORDED_KERNEL.values()) and len(FORWARDS) >= 250


def test_every_recorded_forward_maps_its_launches_onto_the_model_kernels() -> None:
    """matched_times finds the scale and softmax launches at every point, the mask's where
    causal and the GQA expansion's where heads != kv_heads, and no other model kernel."""
    for p in FORWARDS:
        w = Workload(**p["workload"])
        model = [k.name for k in compare(w, "h200", impl="torch-naive").algorithms[-1].kernels]
        matched = matched_times(model, p["kernels"])
        expected = {"scale", "softmax"} | ({"mask_not", "mask_copy", "mask"} if w.causal
                                           else set()) \
            | ({"gqa_expand"} if w.group_size > 1 else set())
        assert set(matched) == expected, p["workload"]
        assert set(matched) <= set(ELEMENTWISE)


def test_the_fallback_rule_fires_exactly_where_cublas_left_its_tma_kernels() -> None:
    """The GEMMs are nvjet (cuBLAS's TMA kernels) at every N_kv % 8 == 0 and CUTLASS fallbacks
    at every other N_kv; compare times the latter by the streaming rule."""
    unaligned = 0
    for p in FORWARDS:
        w = Workload(**p["workload"])
        gemms = [k["name"] for k in p["kernels"] if "nvjet" in k["name"] or "cutlass" in k["name"]]
        assert gemms
        if w.n_kv % 8:
            unaligned += 1
            assert all("cutlass" in g for g in gemms), p["workload"]
        else:
            assert all("nvjet" in g for g in gemms), p["workload"]
    assert unaligned >= 15
    w = Workload(4567, d=64, heads=12, causal=True)  # validation6: CUTLASS align1 kernels
    kernels = compare(w, "h200", impl="torch-naive", profile="measured").algorithms[-1].kernels
    assert {k.name for k in kernels if k.timed_by == "fallback-gemm"} == {"qk", "pv"}


def test_a_scale_pass_over_an_s_held_in_the_l2_takes_its_measured_time() -> None:
    """validation (N 4,096, one head, fp16): S is 33.6 MB, inside the 60 MiB L2; the scale kernel
    (read S, write S) took 15.5 µs measured. Charged the DRAM estimate it was 0.4 µs; charged
    the bytes it streams (impl_kernels.py:streams_past_the_l2) it is within 10 %. The DRAM
    estimate itself still says S stays in the L2."""
    p = next(p for p in FORWARDS if p["workload"] == {
        "n": 4096, "n_kv": 4096, "d": 128, "heads": 1, "kv_heads": 1, "batch": 1,
        "dtype": "fp16", "causal": False})
    measured = matched_times(["scale", "softmax"], p["kernels"])["scale"]
    assert measured == pytest.approx(15.5e-6, rel=0.01)
    est = compare(Workload(4096, d=128, heads=1), "h200", impl="torch-naive",
                  profile="measured").algorithms[-1]
    scale = next(k for k in est.kernels if k.name == "scale")
    assert scale.time_s == pytest.approx(measured, rel=0.10)
    assert est.dram is not None and est.dram.of_kernel("scale").bytes < 0.1 * scale.hbm_bytes


@pytest.mark.slow
def test_the_shipped_elementwise_efficiencies_are_the_fit_of_the_launch_times() -> None:
    """configs/gpus/h200.yaml's torch-naive memory_scale, memory_mask(_not, _copy), memory_gqa_expand and
    memory_softmax_<kernel> are calibrate/eager_kernel_fit.py's medians over the seen records'
    matched launches (benchmarks/impl_fit.py on SEEN)."""
    from iosim.calibrate.eager_kernel_fit import kernel_efficiencies
    from iosim.calibrate.impl_fit import _pieces
    from iosim.inputs.gpus import resolve_hardware
    from iosim.inputs.implementations_yaml import get_implementation

    h200 = resolve_hardware("h200").hardware
    impl = get_implementation("torch-naive")
    rows = [row for p in eager_forwards(distinct=False) for row in _pieces(
        Workload(**p["workload"]), impl, h200, p["time_s"], None, None, p["kernels"]).kernel_rows]
    assert h200.measured is not None
    shipped = h200.measured.impls["torch-naive"].efficiency
    fitted = kernel_efficiencies(rows)
    assert set(fitted) == {"memory_gqa_expand", "memory_scale", "memory_mask_not",
                           "memory_mask_copy", "memory_mask", "memory_mask_contiguous",
                           "memory_softmax_warp", "memory_softmax_reg", "memory_softmax_smem",
                           "memory_softmax_block"}
    assert fitted == {k: shipped[k] for k in fitted}


def test_the_fresh_eager8_set_is_new_and_varies_every_axis() -> None:
    """EAGERFRESH8 (the lead's round 8, measured after tag eager8-frozen) has no point of any
    earlier set of the script, runs each of torch's four softmax kernels, unaligned N_kv of both
    parities, S inside and far beyond the L2, GQA, MQA, decode and chunked prefill."""
    from benchmarks import impl_validation_h200 as V

    fresh = V.EAGERFRESH8
    assert_fresh(fresh, as_is, impl_seen("eagerfresh8"), size=(15, None), axes=PREFILL_AXES)
    assert {softmax_kernel(w.n_kv, w.element_bytes) for w in fresh} == set(RECORDED_KERNEL.values())
    assert {w.n_kv % 2 for w in fresh if w.n_kv % 8} == {0, 1}
    s_bytes = [w.batch * w.heads * w.n * w.n_kv * w.element_bytes for w in fresh]
    assert min(s_bytes) < 60 * 2**20 < max(s_bytes) and max(s_bytes) > 1e9
    assert {w.group_size for w in fresh} >= {1, 3, 4, 8} and any(w.kv_heads == 1 for w in fresh)
    assert sum(w.n == 1 for w in fresh) >= 2 and sum(1 < w.n != w.n_kv for w in fresh) >= 2
    assert {w.d for w in fresh} == {64, 128, 256} and sum(w.causal for w in fresh) >= 4


def test_the_kernel_legend_says_where_a_gemm_ran_on_the_fallback(iosim_cli: Any) -> None:
    """The kernel table's legend explains the fallback GEMMs' time at N_kv % 8 != 0 and says
    nothing of them where cuBLAS ran its own kernels (N 3,000)."""
    flags = ("--heads", "2", "--gpu", "h200", "--impl", "torch-naive", "--profile", "measured")
    unaligned = iosim_cli("compare", "--n", "3001", *flags)
    aligned = iosim_cli("compare", "--n", "3000", *flags)
    assert unaligned.exit_code == aligned.exit_code == 0
    assert "CUTLASS fallback" in " ".join(unaligned.stdout.split())
    assert "CUTLASS fallback" not in aligned.stdout


def test_the_forward_fallback_rates_are_the_fit_of_the_seen_gemm_times() -> None:
    """estimates/eager_fallback.py's eight rates are calibrate/eager_fallback_fit.py's medians over
    the seen records' CUTLASS launches (25 shapes at N_kv % 8 != 0, d 64 and 128, both
    parities), and with them each GEMM of those points but the two smallest grids (N 900, one
    head; N 3,001, two heads) is within 27 % of its measured time, qk within 13 %."""
    from iosim.calibrate.eager_fallback_fit import fit, seen_points
    from iosim.estimates.eager_fallback import FORWARD_FALLBACK, fallback_gemm_s

    points = seen_points()
    assert len(points) == 25
    assert fit(points) == dict(FORWARD_FALLBACK)
    for p in points:
        w = p["workload"]
        if w.batch * w.heads <= 2 and w.n <= 3001:
            continue
        for gemm, bound in (("qk", 0.13), ("pv", 0.27)):
            predicted = fallback_gemm_s(gemm, p["parity"], w)
            assert abs(predicted / p["times"][gemm] - 1) <= bound, (w, gemm)
