"""`--splits auto` on arrays (analysis/split_choice_grid.py): every point of a grid that varies
what `--splits auto` accepts picks choose_splits' count (compare's counts under the decoding
time model, one compare per count), and times every count as choose_splits' table does, to the
last bit; the per-point search (split_choice.best_split_walk, itself held to choose_splits by
tests/test_decode_counts_lean.py) agrees at many more points."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from iosim import Workload
from iosim.algorithms import ALGORITHMS
from iosim.analysis.decode_kernel_time import ceilings
from iosim.analysis.split_choice import (
    best_split_count,
    best_split_walk,
    choose_splits,
    eligible_counts,
)
from iosim.analysis.split_choice_grid import best_split_counts, split_times, vectorised
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.record import replace

H200 = resolve_hardware("h200").hardware


def _times(w: Workload, hw: Hardware, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """The vector path's time of every count 1..128 at one point, and which are eligible."""
    splitkv = ALGORITHMS["splitkv"]
    times, eligible, _ = split_times(ceilings(hw), (splitkv.forward(w, 1), splitkv.forward(w, 2)),
                                     [w], hw, options)
    return times[0], eligible[0]


# (workload, GPU, options): GQA and not, MQA, KV lengths that are not powers of two (one key
# block, a ragged last block, past 128 blocks), head dims 64/128/256, fp16/bf16/FP8 (its
# scales), a paged cache, MLA's latent cache, a chunked prefill (n > 1), a GPU without the
# measured chain (a100: the slot-share rule), one without an L2 size (no DRAM estimate),
# blocks and SRAM given
TABLE_POINTS = [
    (Workload(1, n_kv=1000, d=128, heads=32, kv_heads=8, batch=1), H200, {}),
    (Workload(1, n_kv=77, d=64, heads=8, kv_heads=1, batch=3), H200, {}),
    (Workload(1, n_kv=40_001, d=128, heads=32, kv_heads=32, batch=2, dtype="bf16"), H200, {}),
    (Workload(1, n_kv=9000, d=256, heads=16, kv_heads=2, batch=5, page_size=16), H200, {}),
    (Workload(1, n_kv=3000, d=128, heads=32, kv_heads=8, batch=9, dtype="fp8_e4m3"), H200, {}),
    (Workload(1, n_kv=20_000, d=576, d_v=512, heads=128, kv_heads=1, batch=4, latent_kv=True),
     H200, {}),
    (Workload(256, n_kv=8191, d=128, heads=8, kv_heads=8, batch=1), H200, {}),
    (Workload(1, n_kv=5000, d=128, heads=32, kv_heads=8, batch=6),
     resolve_hardware("a100").hardware, {}),
    (Workload(1, n_kv=131_072, d=64, heads=8, kv_heads=8, batch=1),
     replace(H200, l2_bytes=None), {}),
    (Workload(1, n_kv=6000, d=128, heads=32, kv_heads=8, batch=2), H200,
     {"block_q": 32, "block_kv": 64}),
    (Workload(1, n_kv=6000, d=64, heads=16, kv_heads=4, batch=2), H200, {"sram": "64KiB"}),
    # estimates/launch_order_dram.py's rules: MQA and MLA row blocks a wave boundary parts,
    # partial states the stream after their wave evicts (in part: P_miss inside its tails)
    (Workload(1, n_kv=1800, d=128, heads=64, kv_heads=1, batch=40), H200, {}),
    (Workload(1, n_kv=1500, d=576, d_v=512, heads=128, kv_heads=1, batch=48, latent_kv=True),
     H200, {}),
    (Workload(1, n_kv=30_000, d=128, heads=32, kv_heads=1, batch=64), H200, {}),
]
LAUNCH_ORDER_POINTS = TABLE_POINTS[-3:]


@pytest.mark.parametrize("w, hw, options", TABLE_POINTS)
def test_every_count_is_timed_as_choose_splits_table(w: Workload, hw: Hardware,
                                                     options: dict) -> None:
    """At each point: the same eligible counts as the table's rows, each timed to the last bit
    as the row (compare's counts), and the table's best pick."""
    assert vectorised(w)
    profile = "measured" if hw.measured and hw.l2_bytes is not None else "spec"
    choice = choose_splits(w, hw, profile=profile, **options)
    times, eligible = _times(w, hw, options)
    assert [s + 1 for s in np.flatnonzero(eligible)] == [r.splits for r in choice.rows]
    for row in choice.rows:
        assert times[row.splits - 1] == row.time_s, (w, row.splits)
    assert best_split_counts([w], hw, options) == [choice.best.splits]
    assert best_split_count(w, hw, **options) == choice.best.splits


def test_the_launch_order_points_take_every_rule() -> None:
    """The last three table points are not vacuous: at some count compare's DRAM terms carry
    each launch-order rule — a straddle re-read, Q once, and a share of the states re-read
    strictly between none and all."""
    from iosim.analysis.compare import compare
    from iosim.estimates.launch_order_dram import QUERY_NOTE, STATES_NOTE, STRADDLE_NOTE

    notes: set[str] = set()
    partial = False
    for w, _, _ in LAUNCH_ORDER_POINTS:
        for splits in (2, 4, 8):
            est = compare(w, "h200", algorithms=["splitkv"], splits=splits).algorithms[0]
            assert est.dram is not None
            notes |= {t.note for t in est.dram.terms}
            partial |= any(t.note == STATES_NOTE and 0 < t.bytes < t.oblivious_bytes
                           for t in est.dram.terms)
    assert {QUERY_NOTE, STATES_NOTE, STRADDLE_NOTE} <= notes
    assert partial


def _grid() -> list[Workload]:
    out = []
    for batch, (heads, kv), n_kv, d, dtype, page in itertools.product(
            (1, 7, 64), ((32, 8), (8, 8), (16, 1)), (100, 4097, 33_333, 131_072), (64, 128),
            ("fp16", "bf16", "fp8_e5m2"), (None, 16)):
        out.append(Workload(1, n_kv=n_kv, d=d, heads=heads, kv_heads=kv, batch=batch,
                            dtype=dtype, page_size=page))
    return out


def test_a_grid_at_once_picks_the_per_point_search_at_every_point() -> None:
    """432 points of batch × heads/KV heads × KV length × d × dtype × page size in one call
    (grouped by kernel list, as a sweep calls it): each the per-point search's pick
    (best_split_walk: decode_counts_lean's counts, compare's own) — sampled, every 9th point
    — and each the pick of a call with that point alone."""
    grid = _grid()
    picks = best_split_counts(grid, H200, {})
    assert None not in picks
    for w, pick in list(zip(grid, picks, strict=True))[::9]:
        assert pick == best_split_walk(w, H200, profile="measured"), w
    for w, pick in list(zip(grid, picks, strict=True))[::7]:
        assert best_split_counts([w], H200, {}) == [pick], w


def test_the_picked_count_is_eligible_and_fastest_of_the_eligible() -> None:
    """On the grid: each pick is one of eligible_counts' counts, and no eligible count has a
    smaller time (the smallest count on a tie)."""
    for w in _grid()[::9]:
        times, eligible = _times(w, H200, {})
        pick = best_split_counts([w], H200, {})[0]
        assert pick is not None
        assert eligible[pick - 1]
        best = min((times[s - 1], s) for s in np.flatnonzero(eligible) + 1)
        assert best == (times[pick - 1], pick), w


def test_what_arrays_do_not_cover_takes_the_per_point_search() -> None:
    """A window, packed sequences and a shared-prefix batch: no pick on arrays (None), and
    best_split_count gives the per-point search's."""
    for w in (Workload(1, n_kv=5000, d=128, heads=8, kv_heads=8, batch=2, window=1024),
              Workload(1, n_kv=4096, d=128, heads=8, kv_heads=2, batch=4, prefix_len=3000,
                       suffix_lens=(1096, 500, 20, 1096))):
        assert not vectorised(w)
        assert best_split_counts([w], H200, {}) == [None]
        assert best_split_count(w, H200) == best_split_walk(w, H200)


def test_eligible_columns_are_eligible_counts() -> None:
    """The array's eligible columns at 1, 2, 71, 128, 129 and 1,025 key blocks (B_c = 128) are
    split_choice.eligible_counts'."""
    for blocks in (1, 2, 71, 128, 129, 1025):
        w = Workload(1, n_kv=blocks * 128, d=128, heads=32, kv_heads=8, batch=1)
        _, eligible = _times(w, H200, {})
        assert list(np.flatnonzero(eligible) + 1) == eligible_counts(blocks, min(128, blocks))
