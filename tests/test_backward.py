"""Backward passes: exact element counts, fwd+bwd = fwd + bwd, FLOP conventions, GQA, training."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim import Workload, closed_form, compare, get_algorithm, make_tiling
from iosim.algorithms.blocks import cdiv
from iosim.algorithms.closedform import Dims, kernel_flops, kernel_sums
from iosim.estimates.training import saved_for_backward
from iosim.record import replace
from tests.conftest import examples

SRAM = 10**9  # explicit block sizes below; the SRAM only has to hold them


def _traffic(name: str, workload: Workload, block_q: int | None = None,
             block_kv: int | None = None, sram_elements: int | None = None):
    algorithm = get_algorithm(name)
    tiling = None
    if algorithm.tiled:
        sram = SRAM if sram_elements is None else sram_elements * workload.element_bytes
        tiling = make_tiling(workload, sram, "test", block_q=block_q, block_kv=block_kv,
                             outer=algorithm.outer)
        tiling = algorithm.finish_tiling(tiling, workload, sm_count=108, splits=None,
                                         blocks_given=block_q is not None)
    return closed_form(algorithm.kernels(workload, tiling), workload, tiling), tiling


dims = st.sampled_from([16, 32, 64, 128])


# Paper, Algorithm 3: reads 5Nd + 5N², writes 3Nd + 2N², per head.
@settings(max_examples=examples(60))
@given(n=st.integers(1, 5000), d=dims, heads=st.integers(1, 3), batch=st.integers(1, 2))
def test_standard_backward_is_8nd_plus_7n2(n: int, d: int, heads: int, batch: int) -> None:
    w = Workload(n, d=d, heads=heads, batch=batch, pass_="bwd")
    traffic, _ = _traffic("standard", w)
    per_head = traffic.elements // (heads * batch)
    assert per_head == 8 * n * d + 7 * n * n
    reads = sum(t.elements for t in traffic if t.op == "read") // (heads * batch)
    assert reads == 5 * n * d + 5 * n * n


# Paper, Algorithm 4: 4Nd + T_c(5Nd + 2N), plus the line-5 initialisation 3Nd — across N, d, M
# (the block sizes of Algorithm 1 line 1 follow from M) and explicit block sizes.
@settings(max_examples=examples(80))
@given(n=st.integers(1, 4000), d=dims, m=st.integers(2_048, 200_000))
def test_flash1_backward_alg4_counts_across_sram(n: int, d: int, m: int) -> None:
    w = Workload(n, d=d, pass_="bwd")
    traffic, tiling = _traffic("flash1", w, sram_elements=m)
    assert tiling is not None
    t_c = cdiv(n, tiling.block_kv)
    assert traffic.where(init=False).elements == 4 * n * d + t_c * (5 * n * d + 2 * n)
    assert traffic.where(init=True).elements == 3 * n * d


@settings(max_examples=examples(80))
@given(n=st.integers(1, 3000), d=dims, block_q=st.integers(1, 300), block_kv=st.integers(1, 300))
def test_flash1_backward_alg4_counts_across_blocks(n: int, d: int, block_q: int,
                                                  block_kv: int) -> None:
    w = Workload(n, d=d, pass_="bwd")
    traffic, _ = _traffic("flash1", w, block_q, block_kv)
    t_c = cdiv(n, block_kv)
    assert traffic.where(init=False).elements == 4 * n * d + t_c * (5 * n * d + 2 * n)
    # reads 2Nd + T_c(4Nd + 2N), writes 2Nd + T_c·Nd (Theorem 5's proof: K, V once; dK, dV once)
    reads = sum(t.elements for t in traffic if t.op == "read")
    assert reads == 2 * n * d + t_c * (4 * n * d + 2 * n)


# flash2's backward as FA2's CUDA code runs it (derivation in iosim/algorithms/flash2.py).
@settings(max_examples=examples(80))
@given(n=st.integers(1, 3000), d=dims, block_q=st.integers(1, 300), block_kv=st.integers(1, 300))
def test_flash2_backward_formula(n: int, d: int, block_q: int, block_kv: int) -> None:
    w = Workload(n, d=d, pass_="bwd")
    traffic, _ = _traffic("flash2", w, block_q, block_kv)
    t_c = cdiv(n, block_kv)
    body = traffic.where(init=False)
    assert body.elements == 8 * n * d + n + t_c * (4 * n * d + 2 * n)
    assert body.bytes == 18 * n * d + 4 * n + t_c * (12 * n * d + 8 * n)  # fp16, fp32 L/D/dQaccum
    assert traffic.where(init=True).bytes == 4 * n * d  # fp32 dQaccum zeroed (FA2 Alg. 2 line 3)


def test_flash2_backward_differs_from_literal_alg2_by_o_per_pass() -> None:
    """Literal FA2 Alg. 2 (reference §3): 7Nd + N + T_c(5Nd + 2N) elements, loading O_i per pass.
    The implementation drops O_i per pass (D holds it), and reads dO, O once for D, and converts
    dQ at the end: 8Nd + N + T_c(4Nd + 2N). The two differ by T_c·Nd − Nd."""
    n, d, block = 4096, 64, 128
    w = Workload(n, d=d, pass_="bwd")
    traffic, _ = _traffic("flash2", w, block, block)
    t_c = n // block
    literal = 7 * n * d + n + t_c * (5 * n * d + 2 * n)
    assert literal - traffic.where(init=False).elements == t_c * n * d - n * d


@pytest.mark.parametrize("name", ["standard", "flash1", "flash2"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (4, 2), (6, 1)])
def test_fwdbwd_is_fwd_plus_bwd(name: str, causal: bool, heads: int, kv_heads: int) -> None:
    kw = dict(n_kv=900, d=32, heads=heads, kv_heads=kv_heads, batch=2, causal=causal,
              unfused=("scale", "mask", "dropout"), sparsity=0.6)
    parts = [compare(Workload(700, pass_=p, **kw), "a100", algorithms=[name]).algorithm(name)
             for p in ("fwd", "bwd", "fwdbwd")]
    fwd, bwd, both = parts
    assert both.traffic.terms == fwd.traffic.terms + bwd.traffic.terms
    assert both.flops == fwd.flops + bwd.flops
    assert both.time_s == pytest.approx(fwd.time_s + bwd.time_s, rel=1e-12)


def test_flash2_backward_uses_alg1_rule_for_its_kv_outer_loop() -> None:
    """--tiles alg1: forward Q-outer: B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d); backward K/V-outer:
    swapped."""
    w = Workload(1024, d=64, pass_="fwdbwd")
    c = compare(w, "a100-40gb-sxm", algorithms=["flash1", "flash2"], tiles="alg1")
    f1, f2 = c.algorithm("flash1").tiling, c.algorithm("flash2").tiling
    assert f1 is not None and f2 is not None
    assert (f2.block_q, f2.block_kv) == (326, 64)  # M = 83,456 elements: ⌈M/256⌉ = 326
    assert f2.backward_blocks == (64, 326) == (f1.block_q, f1.block_kv)
    given = compare(w, "a100-40gb-sxm", algorithms=["flash2"], block_q=128, block_kv=128)
    tiling = given.algorithm("flash2").tiling
    assert tiling is not None and tiling.backward_blocks == (128, 128)


def test_flash2_default_tiles_are_the_fa2_codes() -> None:
    """By default flash2 tiles as FlashAttention-2's code does, each pass its own: d = 64 on
    an A100 (163 KiB opt-in shared memory) runs 128 × 128 forward (flash_fwd_launch_template.h
    :210) and 128 × 128 backward (flash_bwd_launch_template.h:178-179, >= 144 KiB); d = 128,
    128 × 64 forward (:262) and 64 × 128 backward (:247-248)."""
    for d, fwd, bwd in ((64, (128, 128), (128, 128)), (128, (128, 64), (64, 128))):
        c = compare(Workload(1024, d=d, pass_="fwdbwd"), "a100-40gb-sxm", algorithms=["flash2"])
        tiling = c.algorithm("flash2").tiling
        assert tiling is not None
        assert (tiling.block_q, tiling.block_kv) == fwd and tiling.backward_blocks == bwd
        assert "flash_fwd_launch_template.h" in tiling.rule
        assert "flash_bwd_launch_template.h" in tiling.bwd_rule


def test_gqa_backward_sums_expanded_dk_dv() -> None:
    """flash_api.cpp mha_bwd: dk/dv_expanded (b, N_k, h_q, d) summed over each group:
    +2·b·h_q·N_k·d written, read again, +2·b·h_kv·N_k·d written (reference §3.3)."""
    b, hq, hkv, n, d = 2, 8, 2, 512, 64
    w = Workload(n, d=d, heads=hq, kv_heads=hkv, batch=b, pass_="bwd")
    for name in ("standard", "flash1", "flash2"):
        traffic, _ = _traffic(name, w, 64, 128)
        total = traffic.of_kernel("bwd_sum_dkdv")
        reads = {t.tensor: t.elements for t in total if t.op == "read"}
        writes = {t.tensor: t.elements for t in total if t.op == "write"}
        assert reads == {"dK_expanded": b * hq * n * d, "dV_expanded": b * hq * n * d}
        assert writes == {"dK": b * hkv * n * d, "dV": b * hkv * n * d}
    mha, _ = _traffic("flash2", Workload(n, d=d, heads=hq, batch=b, pass_="bwd"), 64, 128)
    assert "bwd_sum_dkdv" not in mha.kernels()


def test_standard_backward_unfused_kernels_and_dropout_mask() -> None:
    """Each unfused forward op has its backward kernel: +N² read +N² write each; dropout's reads
    the kept mask Z (1 byte) and the dropped P feeds dV = PᵀdO (reference §3 notes)."""
    n, d = 256, 64
    plain, _ = _traffic("standard", Workload(n, d=d, pass_="bwd"))
    full, _ = _traffic("standard", Workload(n, d=d, pass_="bwd",
                                            unfused=("scale", "mask", "dropout")))
    assert full.elements - plain.elements == 3 * 2 * n * n + n * n  # 3 kernels + the Z read
    z = [t for t in full if t.tensor == "Z"]
    assert [(t.op, t.element_bytes, t.elements) for t in z] == [("read", 1, n * n)]
    dv_reads = {t.tensor for t in full.of_kernel("bwd_dv") if t.op == "read"}
    assert dv_reads == {"P_drop", "dO"}


def test_executed_flops_match_fa_convention_when_not_causal() -> None:
    """FA2 §4.1: fwd 4·N²·d per head; bwd 2.5× (flash) or 2× (standard) — executed matmul FLOPs
    equal it exactly without a causal mask."""
    w = Workload(1000, n_kv=1000, d=64, heads=3, batch=2, pass_="fwdbwd")
    c = compare(w, "a100")
    for a in c.algorithms:
        assert a.matmul_flops == a.convention_flops
    assert c.algorithm("standard").convention_flops == 4 * 1000**2 * 64 * 6 * 3
    assert c.algorithm("flash1").convention_flops == 4 * 1000**2 * 64 * 6 * 3.5


@settings(max_examples=examples(40))
@given(n=st.integers(1, 3000), block_q=st.integers(1, 256), block_kv=st.integers(1, 256))
def test_causal_executed_flops_cover_at_least_half(n: int, block_q: int, block_kv: int) -> None:
    """Executed FLOPs count whole diagonal tiles: at least the convention's N²/2, at most N²."""
    w = Workload(n, d=16, causal=True, pass_="bwd")
    algorithm = get_algorithm("flash2")
    tiling = make_tiling(w, SRAM, "test", block_q=block_q, block_kv=block_kv)
    dims = Dims.of(w, tiling)
    matmul = sum(kernel_flops(k, dims, kernel_sums(k, dims))[0]
                 for k in algorithm.kernels(w, tiling))
    assert 10 * n * (n + 1) // 2 * 16 <= matmul <= 10 * n * n * 16


def test_saved_for_backward_standard_vs_flash() -> None:
    """Standard keeps P (and with dropout the dropped P and the mask Z); flash keeps O(N)."""
    for unfused, expected in (((), ["P"]), (("dropout",), ["P", "P_drop", "Z"])):
        w = Workload(128, unfused=unfused, pass_="fwdbwd")
        std = get_algorithm("standard")
        assert [a.tensor for a in saved_for_backward(std.forward(w), std.backward(w))] == expected
    w = Workload(128, pass_="fwdbwd")
    for name, expected in (("flash1", ["l", "m"]), ("flash2", ["L"])):
        algorithm = get_algorithm(name)
        saved = saved_for_backward(algorithm.forward(w), algorithm.backward(w))
        assert [a.tensor for a in saved] == expected


def test_training_footprint_in_compare() -> None:
    w = Workload(2048, d=64, heads=2, unfused=("dropout",), pass_="fwdbwd")
    c = compare(w, "a100")
    p = 2048 * 2048 * 2 * 2  # one fp16 N×N matrix for 2 heads
    std = dict(c.algorithm("standard").footprint.saved)
    assert std == {"P": p, "P_drop": p, "Z": p // 2}
    assert dict(c.algorithm("flash2").footprint.saved) == {"L": 2048 * 2 * 4, "R": 16}
    assert dict(c.algorithm("flash1").footprint.saved) == {"l": 2048 * 2 * 4, "m": 2048 * 2 * 4,
                                                          "R": 16}
    # the peak holds the kept P, P_drop, Z with the backward's dP and dS
    assert c.algorithm("standard").footprint.extra_bytes == 4 * p + p // 2
    fwd = compare(replace(w, pass_="fwd"), "a100")
    assert fwd.algorithm("standard").footprint.saved == ()


@settings(max_examples=examples(40))
@given(t=st.integers(1, 40), block=st.integers(1, 128), d=dims)
def test_flash1_causal_backward_counts_visited_pairs(t: int, block: int, d: int) -> None:
    """Reference §3 (causal): FA1 bwd = 4Nd + P_c(5·B_r·d + 2·B_r), P_c = T(T+1)/2 for square
    blocks and N = T·B."""
    n = t * block
    w = Workload(n, d=d, causal=True, pass_="bwd")
    traffic, _ = _traffic("flash1", w, block, block)
    pairs = t * (t + 1) // 2
    assert traffic.where(init=False).elements == 4 * n * d + pairs * (5 * block * d + 2 * block)


@pytest.mark.parametrize("name", ["standard", "flash1", "flash2"])
def test_kernel_names_are_unique_across_both_passes(name: str) -> None:
    w = Workload(64, heads=4, kv_heads=2, unfused=("scale", "mask", "dropout"), pass_="fwdbwd")
    names = [k.name for k in get_algorithm(name).kernels(w)]
    assert len(names) == len(set(names))
    assert all(n.startswith("bwd_") for n in names[len(get_algorithm(name).forward(w)):])
