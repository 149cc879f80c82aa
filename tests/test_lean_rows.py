"""cuDNN's lean decode kernel past 16 query heads per KV head (issue 11, round cudnn10): the row
blocks after a KV head's first re-read its K/V tiles from the L2 (analysis/lean_time.py), and
the fresh set that judges it (CUDNNFRESH10)."""

from __future__ import annotations

import pytest

from iosim.analysis.lean_time import lean_time_s
from iosim.calibrate import cudnn_lean_fit as L
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.workload import Workload
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import IMPL_AXES, impl_seen

TERMS = {"lean_program_s_per_dim": 4e-8, "lean_stream_d64": 3.5e12, "lean_stream_d128": 4e12,
         "lean_stream_d256": 3.3e12}
"""Round numbers near the fitted figures: the rule's shape, not the shipped values."""


def test_without_an_l2_rate_every_row_block_streams_and_with_one_only_the_first() -> None:
    """R row blocks of one KV head against R KV heads of one row block each, at the same
    iterations: the same time without an L2 rate (round cudnn9's rule); with one, the row blocks
    take less, more so the faster the L2, and never less than the first row block alone."""
    mqa = Workload(1, n_kv=40000, d=128, heads=64, kv_heads=1)  # R = 4
    iterations, sms = 4 * 313, 132
    heads4 = Workload(1, n_kv=40000, d=128, heads=64, kv_heads=4)  # 4 KV heads, R = 1
    streamed = lean_time_s(heads4, iterations, sms, TERMS, 128)
    assert lean_time_s(mqa, iterations, sms, TERMS, 128, 4, None) == pytest.approx(streamed)
    slow_l2 = lean_time_s(mqa, iterations, sms, TERMS, 128, 4, 6e12)
    fast_l2 = lean_time_s(mqa, iterations, sms, TERMS, 128, 4, 12e12)
    first_only = lean_time_s(mqa, iterations, sms, TERMS, 128, 4, float("inf"))
    assert first_only < fast_l2 < slow_l2 < streamed
    assert lean_time_s(mqa, iterations, sms, TERMS, 128, 1, 6e12) == pytest.approx(streamed)


def test_the_seen_mqa_steps_past_two_row_blocks_fit_in_sample() -> None:
    """cudnnfresh9's MQA steps with three and four row blocks (#2 g 48, #14 g 64), +50 % and
    +88 % under round cudnn9's rule (reports/impl-validation/cudnn9-fresh.md), are within
    ±25 % of their lean kernel's measured time (tests/data/h200-impl-cudnnfresh9.json) under the
    shipped figures (python benchmarks/cudnn9_fit.py)."""
    from benchmarks.cudnn9_fit import seen_paths

    h200 = resolve_hardware("h200").hardware
    assert h200.measured is not None
    terms = h200.measured.impls["sdpa-cudnn"].terms
    points = [p for p in L.lean_points(seen_paths()) if p.session == "cudnnfresh9"
              and p.index in (2, 14)]
    assert [p.workload.group_size for p in points] == [48, 64]
    assert all(abs(e) <= 0.25 for e in L.lean_errors(points, h200, terms))


def test_the_fresh_cudnn10_set_is_new_and_reaches_many_query_heads_per_kv_head() -> None:
    """benchmarks/impl_validation_h200.py's CUDNNFRESH10 (cudnn10, measured after tag
    cudnn10-frozen): no point equals one of any other set of the script or of any committed H200
    implementation record; at least 10 decode steps, all lean by the split rule (programs ≤ 66,
    batch × KV heads ≤ 66), g from 1 to 128 with several at g ≥ 24 including MQA, d 64/128/256,
    N_kv 3k-120k, fp16 and bf16."""
    from benchmarks import impl_validation_h200 as V

    fresh = V.CUDNNFRESH10
    assert_fresh(fresh, as_is, impl_seen("cudnnfresh10"), size=(10, None), axes=IMPL_AXES)
    assert all(w.n == 1 and w.batch * w.kv_heads <= 66 for w in fresh)
    assert all(w.batch * w.kv_heads * -(-w.group_size // 16) <= 66 for w in fresh)
    groups = [w.group_size for w in fresh]
    assert min(groups) == 1 and max(groups) == 128
    assert sum(g >= 24 for g in groups) >= 8
    assert sum(w.kv_heads == 1 and w.group_size >= 24 for w in fresh) >= 5
    assert {w.d for w in fresh} == {64, 128, 256}
    assert 3000 <= min(w.n_kv for w in fresh) < 5000 and max(w.n_kv for w in fresh) == 120000
    assert {w.dtype for w in fresh} == {"fp16", "bf16"}
