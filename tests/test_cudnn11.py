"""Issue 11, round cudnn11: the lean kernel's L2 re-read paying its head dim's SM share
(analysis/lean_time.py), the trial of cuDNN's lean reduction without FA2's rows-per-program
rule (estimates/combine.py; not shipped), sdpa-efficient's resident grid timed by its longest
program's chain of key blocks (analysis/program_chain.py), and the fresh sets that judge them
(CUDNNFRESH11, EAGERFRESH11)."""

from __future__ import annotations

import json

import pytest

from iosim.analysis.compare import compare
from iosim.analysis.lean_time import lean_sm_s_per_byte, lean_time_s
from iosim.estimates.combine import combine_time_s
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.workload import Workload
from tests.conftest import DATA
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import IMPL_AXES, impl_seen

TERMS = {"lean_program_s_per_dim": 3e-8, "lean_stream_d64": 3.5e12, "lean_stream_d128": 4e12,
         "lean_stream_d256": 3e12}
"""Round numbers near the fitted figures: the rule's shape, not the shipped values."""
H200 = resolve_hardware("h200").hardware
OWN = ("h200-impl-cudnnfresh11", "h200-impl-eagerfresh11")
"""This round's records: measured after the freeze, so left out of the newness check."""


def test_the_fastest_bucket_pays_no_sm_share_and_a_slower_one_pays_its_difference() -> None:
    """d 128 streams fastest: its SM share is 0 and a two-row-block step's time is round
    cudnn10's; d 256 and d 64 pay 1 / their rate − 1 / d 128's per re-read byte, so their
    second row block costs more than the L2's rate alone gives, and less than streaming it."""
    assert lean_sm_s_per_byte(TERMS, 128) == 0.0
    assert lean_sm_s_per_byte(TERMS, 256) == pytest.approx(1 / 3e12 - 1 / 4e12)
    for d in (64, 256):
        w = Workload(1, n_kv=40000, d=d, heads=32, kv_heads=1)  # R = 2
        iterations = 2 * 313
        free = {**TERMS, f"lean_stream_d{d}": TERMS["lean_stream_d128"]}
        with_share = lean_time_s(w, iterations, 132, TERMS, 128, 2, 9.58e12)
        streamed = lean_time_s(w, iterations, 132, TERMS, 128, 2, None)
        assert with_share < streamed
        no_share_at_d_rate = (lean_time_s(w, iterations, 132, free, 128, 2, 9.58e12)
                              - lean_time_s(w, iterations, 132, free, 128, 1, 9.58e12))
        assert with_share - lean_time_s(w, iterations, 132, TERMS, 128, 1, 9.58e12) \
            > no_share_at_d_rate


def test_the_seen_two_row_block_d256_steps_are_within_fifteen_percent() -> None:
    """cudnnfresh10 #3 and #9 (g 32, d 256: two row blocks), −22 % and −19 % under round
    cudnn10's rule (reports/impl-validation/cudnn10-fresh.md), are within ±15 % of their lean
    kernel's measured time (tests/data/h200-impl-cudnnfresh10.json) under the shipped figures
    (python benchmarks/cudnn9_fit.py: −15 %, −3 %)."""
    from benchmarks.cudnn9_fit import seen_paths
    from iosim.calibrate import cudnn_lean_fit as L

    assert H200.measured is not None
    terms = H200.measured.impls["sdpa-cudnn"].terms
    points = [p for p in L.lean_points(seen_paths()) if p.session == "cudnnfresh10"
              and p.index in (3, 9)]
    assert [p.workload.d for p in points] == [256, 256]
    assert all(abs(e) <= 0.155 for e in L.lean_errors(points, H200, terms))


def test_the_combine_rule_doubles_the_d256_rate_and_the_trial_option_keeps_it() -> None:
    """The same kernel bytes and grid at d 128 and d 256 (kBlockM 4 at both): FA2's rule (every
    implementation's, shipped) streams d 256's twice as fast per program; round cudnn11's trial
    for cuDNN's reduction (in_flight False, not shipped: estimates/combine.py) the same."""
    terms = {"combine_latency_s": 1e-6, "combine_program_bandwidth": 3e10, "combine_memory": 0.1}
    w128, w256 = (Workload(1, n_kv=30000, d=d, heads=32, kv_heads=2) for d in (128, 256))
    kernel_bytes = 2e6
    fa2 = [combine_time_s(w, kernel_bytes, 132, 4.8e12, terms) for w in (w128, w256)]
    cudnn = [combine_time_s(w, kernel_bytes, 132, 4.8e12, terms, in_flight=False)
             for w in (w128, w256)]
    assert fa2[1] < fa2[0] == pytest.approx(cudnn[0]) == pytest.approx(cudnn[1])


def test_a_resident_efficient_decode_step_is_its_chain_and_matches_the_seen_record() -> None:
    """validation6 #35 (b5 h16 N_kv 36,000 d 64 bf16: 80 programs, one wave), the
    implementation's worst point in reports/impl-validation/validation.md (−67 %): its fmha
    kernel took 1,366.3 µs (tests/data/h200-impl-validation6.json, torch.profiler), which the
    chain (python -m iosim.calibrate.chain_fit: +4.5 %) is within 6 % of."""
    record = json.loads((DATA / "h200-impl-validation6.json").read_text())
    point = next(p for p in record["points"] if p["impl"] == "sdpa-efficient"
                 and p["index"] == 35)
    w = Workload(**point["workload"])
    measured = sum(k["time_s"] for k in point["kernels"] if "fmha_cutlassF" in k["name"])
    attn = compare(w, H200, impl="sdpa-efficient", profile="measured").algorithms[-1].kernels[0]
    assert attn.timed_by == "chain"
    assert abs(attn.time_s / measured - 1) < 0.06


def test_a_grid_of_many_waves_stays_on_the_roofline() -> None:
    """A prefill of 1,104 programs of 64 × 128 (two per SM: more than one wave) is not timed by
    the chain; neither is another implementation's resident grid (no chain figures)."""
    big = Workload(4400, heads=16, dtype="bf16")
    assert compare(big, H200, impl="sdpa-efficient",
                   profile="measured").algorithms[-1].kernels[0].timed_by != "chain"
    small = Workload(1, n_kv=36000, d=64, heads=16, batch=5, dtype="bf16")
    assert all(k.timed_by != "chain" for k in compare(
        small, H200, impl="sdpa-flash", profile="measured").algorithms[-1].kernels)


def test_the_fresh_cudnn11_sets_are_new_and_vary_every_axis() -> None:
    """benchmarks/impl_validation_h200.py's CUDNNFRESH11 and EAGERFRESH11 (cudnn11, measured
    after tag cudnn11-frozen): no point equals one of any other set of the script or of any
    committed H200 implementation record (this round's own records aside) or of each other;
    each at least 10 points varying d 64/128/256, heads below one wave, GQA and MQA, N not a
    power of two, decode and prefill, fp16 and bf16; CUDNNFRESH11 has four d 256 lean steps of
    two or more row blocks and at least five MHA shapes sdpa-efficient's grid holds in one wave."""
    from benchmarks import impl_validation_h200 as V
    from iosim.inputs.implementations_yaml import get_implementation

    cudnn, eager = V.CUDNNFRESH11, V.EAGERFRESH11
    for name, fresh in (("cudnnfresh11", cudnn), ("eagerfresh11", eager)):
        assert_fresh(fresh, as_is, impl_seen(name), size=(10, None), axes=IMPL_AXES)
        assert {w.d for w in fresh} == {64, 128, 256}
        assert {w.dtype for w in fresh} == {"fp16", "bf16"}
        assert any(w.n == 1 for w in fresh) and any(w.n > 1 for w in fresh)
        assert any(w.kv_heads == 1 and w.heads > 1 for w in fresh)  # MQA
        assert any(1 < w.group_size < w.heads for w in fresh)  # GQA
        assert all(w.n_kv & (w.n_kv - 1) for w in fresh)  # no power of two
        assert any(w.batch * w.heads < 132 for w in fresh)
    assert sum(w.n == 1 and w.d == 256 and w.group_size > 16 for w in cudnn) >= 4
    assert get_implementation("sdpa-efficient").split_kv.rule == "none"  # no split: one wave
    held = sum(compare(w, H200, impl="sdpa-efficient", profile="measured").algorithms[-1]
               .kernels[0].timed_by == "chain" for w in cudnn if w.group_size == 1)
    assert held >= 5
