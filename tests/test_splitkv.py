"""Decoding: split-KV (flash-decoding), head packing, the split heuristic, occupancy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim import IosimError, Workload, compare
from iosim.algorithms.splitkv import MAX_SPLITS, num_splits_heuristic
from tests.conftest import examples

# The acceptance shape: N_kv = 32,768, d = 128, 32 query heads, 8 KV heads, batch 1, H100.
DECODE = Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8)


def test_heuristic_matches_its_own_comment() -> None:
    """flash_api.cpp: "if we have batch * n_heads = 48 and we have 108 SMs, having 2 splits
    (efficiency = 0.89) is better than having 3 splits (efficiency = 0.67)"."""
    assert num_splits_heuristic(48, 108, 64, 128) == 2


def test_heuristic_fills_the_gpu_or_stays_at_one() -> None:
    # 0.8 × 264 slots = 211.2: 212 programs are enough, 211 are not
    assert num_splits_heuristic(212, 264, 256, 128) == 1
    assert num_splits_heuristic(211, 264, 256, 128) > 1
    # 8 programs on 2 × 132 slots: 8s/264 ≥ 0.85 × 1.0 (s = 33 fills exactly) first at s = 29
    assert num_splits_heuristic(8, 264, 256, 128) == 29
    # never more splits than key blocks
    assert num_splits_heuristic(1, 264, 5, 128) <= 5


def _flash_api_heuristic(batch_nheads_mblocks: int, num_sms: int, num_n_blocks: int,
                         max_splits: int) -> int:
    """flash_api.cpp `num_splits_heuristic` transcribed line for line (loops, not arrays)."""
    if batch_nheads_mblocks >= 0.8 * num_sms:
        return 1
    max_splits = min(max_splits, num_sms, num_n_blocks)

    def eligible(s: int) -> bool:
        return s == 1 or -(-num_n_blocks // s) != -(-num_n_blocks // (s - 1))

    efficiency = []
    for s in range(1, max_splits + 1):
        n_waves = batch_nheads_mblocks * s / num_sms
        efficiency.append(n_waves / -(-n_waves // 1) if eligible(s) else 0.0)
    best = max(efficiency, default=0.0)
    for s in range(1, max_splits + 1):
        if eligible(s) and efficiency[s - 1] >= 0.85 * best:
            return s
    return 1


@settings(max_examples=examples(200))
@given(grid=st.lists(st.integers(1, 600), min_size=1, max_size=8), sms=st.integers(1, 300),
       blocks=st.integers(1, 400))
def test_vectorised_heuristic_equals_flash_api(grid: list[int], sms: int, blocks: int) -> None:
    """The one heuristic, on ints (compare) and on arrays (sweep), equals the C++ loop."""
    expected = [_flash_api_heuristic(g, sms, blocks, MAX_SPLITS) for g in grid]
    assert num_splits_heuristic(np.array(grid), sms, blocks, MAX_SPLITS).tolist() == expected
    assert [num_splits_heuristic(g, sms, blocks, MAX_SPLITS) for g in grid] == expected


@settings(max_examples=examples(60))
@given(grid=st.lists(st.integers(1, 60), min_size=6, max_size=6),
       sms=st.lists(st.sampled_from([108, 132, 264]), min_size=2, max_size=2),
       blocks=st.lists(st.integers(1, 40), min_size=3, max_size=3))
def test_a_grid_of_repeated_points_is_decided_point_by_point(grid: list[int], sms: list[int],
                                                             blocks: list[int]) -> None:
    """A sweep's broadcast arrays (points repeating their inputs, each decided once): every
    point as the C++ loop decides it alone, in its place."""
    g = np.array(grid).reshape(3, 2, 1, 1)
    s = np.array(sms).reshape(1, 1, 2, 1)
    b = np.array(blocks).reshape(1, 1, 1, 3)
    got = num_splits_heuristic(g, s, b, MAX_SPLITS)
    assert got.shape == (3, 2, 2, 3)
    for at in np.ndindex(got.shape):
        assert got[at] == _flash_api_heuristic(int(g[at[0], at[1], 0, 0]), int(s[0, 0, at[2], 0]),
                                               int(b[0, 0, 0, at[3]]), MAX_SPLITS), at


def test_decode_acceptance_h100() -> None:
    c = compare(DECODE, "h100")
    assert [a.name for a in c.algorithms] == ["standard", "flash1", "flash2", "splitkv"]
    split = c.algorithm("splitkv")
    assert split.tiling is not None and split.tiling.splits == 29
    kv_bytes = sum(t.bytes for t in split.traffic if t.tensor in ("K", "V"))
    assert kv_bytes == 2 * 1 * 8 * 32768 * 128 * 2  # K and V read once per KV head, in total
    flash2_kv = sum(t.bytes for t in c.algorithm("flash2").traffic if t.tensor in ("K", "V"))
    assert flash2_kv == 4 * kv_bytes  # once per query head: 4 query heads per KV head
    # partial outputs and LSEs (fp32, d + 1 per row per split) written once and read once
    partial = sum(t.bytes for t in split.traffic if t.tensor in ("O_partial", "lse_partial"))
    assert partial == 2 * 29 * 32 * (128 + 1) * 4
    # occupancy: flash2's grid is batch × heads × ⌈1/B_r⌉ = 32 programs; split-KV × 29 splits
    (f2,) = c.algorithm("flash2").occupancy
    assert (f2.programs, f2.sm_count) == (32, 132)
    assert f2.fraction == pytest.approx(32 / 132)
    (sk,) = split.occupancy
    # 232 programs on 132 SMs: the busiest SMs run 2, so u = 232 / (132 · 2)
    assert sk.programs == 8 * 29 and sk.fraction == pytest.approx(232 / 264)


def test_single_split_has_no_combine_kernel_and_writes_o_directly() -> None:
    c = compare(DECODE, "h100", algorithms=["splitkv"], splits=1)
    a = c.algorithm("splitkv")
    assert [k.name for k in a.kernels] == ["splitkv_attn"]
    assert {t.tensor for t in a.traffic if t.op == "write"} == {"O", "L"}


@pytest.mark.parametrize("splits", [1, 2, 7, 64, 256])
def test_kv_read_once_for_any_split_count(splits: int) -> None:
    a = compare(DECODE, "h100", algorithms=["splitkv"], splits=splits).algorithm("splitkv")
    assert sum(t.elements for t in a.traffic if t.tensor == "K") == 8 * 32768 * 128
    # Q is read once per split (per query head: d elements)
    assert sum(t.elements for t in a.traffic if t.tensor == "Q") == splits * 32 * 128


def test_empty_splits_load_nothing() -> None:
    """T_c = 10 key blocks in 6 splits: ⌈10/6⌉ = 2 blocks per split, split 5 is empty. FA2 exits
    early there (writes zeros and −∞, loads nothing): Q is read by 5 programs, not 6."""
    w = Workload(1, n_kv=10 * 128, d=128)
    c = compare(w, "h100", algorithms=["splitkv"], splits=6, block_kv=128)
    a = c.algorithm("splitkv")
    assert sum(t.elements for t in a.traffic if t.tensor == "Q") == 5 * 128
    assert sum(t.elements for t in a.traffic
               if t.tensor == "O_partial" and t.op == "write") == 6 * 128


def test_packing_needs_one_query_and_gqa() -> None:
    """FA2 packs only when seqlen_q = 1 and heads > kv_heads: with N = 2 K/V is read per head."""
    one = compare(DECODE, "h100", algorithms=["splitkv"], splits=4).algorithm("splitkv")
    two = compare(Workload(2, n_kv=32768, d=128, heads=32, kv_heads=8), "h100",
                  algorithms=["splitkv"], splits=4).algorithm("splitkv")
    k = [sum(t.elements for t in a.traffic if t.tensor == "K") for a in (one, two)]
    assert k == [8 * 32768 * 128, 32 * 32768 * 128]


def test_decode_is_forward_only_and_splits_need_splitkv() -> None:
    with pytest.raises(IosimError, match="forward-only"):
        compare(Workload(1, n_kv=4096, pass_="fwdbwd"), "h100", algorithms=["splitkv"])
    with pytest.raises(IosimError, match="splits applies to splitkv"):
        compare(DECODE, "h100", algorithms=["flash2"], splits=4)
    with pytest.raises(IosimError, match="more than the 256 key blocks"):
        compare(DECODE, "h100", algorithms=["splitkv"], splits=257)
    with pytest.raises(IosimError, match="at least 1"):
        compare(DECODE, "h100", algorithms=["splitkv"], splits=0)


def test_time_divides_by_the_occupied_share() -> None:
    c = compare(DECODE, "h100")
    f2 = c.algorithm("flash2")
    (kernel,) = f2.kernels
    roofline = max(kernel.memory_time_s, kernel.compute_time_s)  # spec profile, efficiency 1
    assert kernel.utilisation == pytest.approx(32 / 132)
    assert f2.time_s == pytest.approx(roofline * 132 / 32)
    assert c.algorithm("standard").occupancy == ()  # library kernels: grid not modelled
