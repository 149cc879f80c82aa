"""`sweep --splits auto`'s fast path (issue 14 item 3): the decoding time model's inputs taken
without the rest of compare (analysis/decode_counts_lean.py) are compare's own, field for
field, so the bounded search (split_choice.best_split_walk, what best_split_count runs where
the arrays of split_choice_grid do not reach) picks choose_splits' count at choose_splits'
predicted time."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosim import Workload
from iosim.analysis.compare import compare
from iosim.analysis.decode_counts_lean import forward_tiling, lean_estimate
from iosim.analysis.decode_time import DecodeCounts, Tiles
from iosim.analysis.split_choice import (
    _counts,
    best_split_count,
    best_split_walk,
    choose_splits,
    eligible_counts,
    lean_time_s,
    time_bounds,
)
from iosim.analysis.sweep import sweep
from iosim.inputs.gpus import resolve_hardware
from iosim.record import replace
from tests.conftest import examples
from tests.test_sweep_equals_compare import decode_points


def _workload(p: dict) -> Workload:
    return Workload(1, n_kv=p["n_kv"], d=p["d"], d_v=p["d_v"], heads=p["heads"],
                    kv_heads=p["kv_heads"], batch=p["batch"], latent_kv=p["latent_kv"],
                    page_size=p["page_size"])


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(p=decode_points(), pick=st.integers(0, 10_000), given_blocks=st.booleans(),
       no_l2=st.integers(0, 4))
def test_lean_counts_are_compares(p: dict, pick: int, given_blocks: bool, no_l2: int) -> None:
    """At one split, at an eligible count drawn at random, and with blocks given or not: the
    tiling, each kernel's bytes and FLOPs, the DRAM estimate and the grids equal compare's (now
    and then on a GPU whose YAML has no L2 size: no DRAM estimate, the closed form's bytes)."""
    gpu, profile = p["gpu"]
    w = _workload(p)
    hw = resolve_hardware(gpu).hardware
    if no_l2 == 0:
        hw, profile = replace(hw, l2_bytes=None), "spec"
    first = compare(w, hw, algorithms=["splitkv"], profile=profile).algorithm("splitkv")
    assert first.tiling is not None
    blocks = ({"block_q": first.tiling.block_q, "block_kv": first.tiling.block_kv}
              if given_blocks else {})
    key_blocks = -(-w.n_kv // first.tiling.block_kv)
    counts = eligible_counts(key_blocks, min(128, key_blocks))
    for s in sorted({1, counts[pick % len(counts)]}):
        c = compare(w, hw, algorithms=["splitkv"], splits=s, profile=profile,
                    **blocks).algorithm("splitkv")
        lean = lean_estimate("splitkv", w, hw, forward_tiling("splitkv", w, hw, **blocks),
                             splits=s, blocks_given=given_blocks)
        assert lean.tiling == c.tiling
        assert [(k.name, k.hbm_bytes, k.matmul_flops, k.elementwise_flops)
                for k in lean.kernels] == [(k.name, int(k.hbm_bytes), float(k.matmul_flops),
                                            float(k.elementwise_flops)) for k in c.kernels]
        assert lean.dram == c.dram
        assert lean.occupancy == c.occupancy


@settings(max_examples=examples(12), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(p=decode_points())
def test_every_lean_row_time_is_choose_splits(p: dict) -> None:
    """Every row of choose_splits' table (compare's counts under the model) has the time the
    lean counts give, to the last bit, so the search's pick is the table's best at its time."""
    gpu, profile = p["gpu"]
    w = _workload(p)
    choice = choose_splits(w, gpu, profile=profile)
    first = compare(w, gpu, algorithms=["splitkv"], profile=profile).algorithm("splitkv")
    assert first.tiling is not None
    counts = DecodeCounts(w, gpu, Tiles(first.tiling.block_q, first.tiling.block_q,
                                        first.tiling.block_kv), profile=profile)
    for row in choice.rows:
        kernels = {k.kernel: k for k in counts.splitkv(row.splits, lean=True).kernels}
        combine = kernels.get("splitkv_combine")
        lean_s = kernels["splitkv_attn"].time_s + (combine.time_s if combine else 0.0)
        assert lean_s == row.time_s, (p, row.splits)
    assert best_split_count(w, gpu, profile=profile) == choice.best.splits, p
    assert best_split_walk(w, gpu, profile=profile) == choice.best.splits, p


@pytest.mark.slow
def test_every_point_of_the_speed_benchmarks_grid_picks_choose_splits() -> None:
    """benchmarks/sweep_splits_auto_speed.py's grid (4 batches × 100 KV lengths, GQA 32/8,
    d 128, the H200's measured profile), every point: the sweep's count is choose_splits'."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from sweep_splits_auto_speed import spec

    s = spec(4, 100, ("auto",))
    # batch is the slower of the two axes (sweep_spec.AXES): points in (batch, n_kv) order
    picked = sweep(s).algorithms[0].splits.reshape(len(s.batch), len(s.n_kv))
    for (b, batch), (k, n_kv) in itertools.product(enumerate(s.batch), enumerate(s.n_kv)):
        w = Workload(1, n_kv=n_kv, d=128, heads=32, kv_heads=8, batch=batch)
        assert int(picked[b, k]) == choose_splits(w, "h200", profile="measured").best.splits


@settings(max_examples=examples(12), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(p=decode_points())
def test_the_search_bound_is_below_every_counts_time(p: dict) -> None:
    """split_choice.time_bounds never exceeds the count's time (so the search that stops at the
    first bound above the best time found never passes over a faster count); the split
    kernel's stores it adds are those of the DRAM estimate's write terms at each count
    (compare's), where the L2 model charges them at their L2-oblivious count, and the combine
    kernel's bytes are compare's."""
    gpu, profile = p["gpu"]
    w = _workload(p)
    c = _counts(w, gpu, (), {"profile": profile})
    counts = eligible_counts(c.key_blocks, c.top)
    bounds = time_bounds(c, counts)
    many = [s for s in counts if s > 1]
    split_bytes, combine_bytes = c.counts.split_stores(many) if many else ([], [])
    stores = dict(zip(many, list(split_bytes), strict=True))
    combine = dict(zip(many, list(combine_bytes), strict=True))
    for s in counts:
        if bounds is not None:
            assert bounds[s] <= lean_time_s(c, s), (p, s)
        est = c.counts.estimate("splitkv", s, c.block_q)
        if s > 1 and stores[s] and est.dram is not None:
            assert stores[s] == sum(t.bytes for t in est.dram.of_kernel("splitkv_attn").terms
                                    if t.op == "write"), (p, s)
        if s > 1:
            assert combine[s] == next(k.hbm_bytes for k in est.kernels
                                      if k.name == "splitkv_combine"), (p, s)
