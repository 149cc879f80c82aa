"""Exact element counts: the closed forms against the paper's formulas, the tile walk and brute force."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import iosim
from iosim.algorithms import ALGORITHMS, DEFAULT_ALGORITHMS
from iosim.algorithms.blocks import block_sums, floor_sum, visited_kv_blocks
from iosim.algorithms.closedform import closed_form
from iosim.algorithms.tilewalk import walk
from iosim.algorithms.triton_bwd import triton_unsupported
from iosim.inputs.tiling import Tiling, make_tiling
from iosim.inputs.workload import Workload
from tests.conftest import examples


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _elements(name: str, workload: Workload, tiling: Tiling | None, *, init: bool | None = None) -> int:
    algorithm = ALGORITHMS[name]
    return closed_form(algorithm.kernels(workload), workload, tiling).where(init=init).elements


def _tiling(block_q: int, block_kv: int) -> Tiling:
    return Tiling(block_q, block_kv, 1 << 40, "test", "given")


sizes = st.integers(1, 600)
blocks = st.integers(1, 300)
dims = st.integers(1, 256)


@settings(max_examples=examples(150))
@given(n=sizes, d=dims)
def test_standard_is_4nd_plus_4n2(n, d):
    # Alg. 0: reads 3Nd + 2N² (Q, K, V; S; P), writes Nd + 2N² (S, P, O)
    assert _elements("standard", Workload(n, d=d), None) == 4 * n * d + 4 * n * n


@settings(max_examples=examples(150))
@given(n=sizes, d=dims, block_q=blocks, block_kv=blocks)
def test_flash1_is_2nd_plus_tc_3nd_4n(n, d, block_q, block_kv):
    # Alg. 1: K, V once (line 6); per pass Q_i, O_i, l_i, m_i read (line 8), O_i, l_i, m_i written (12-13)
    t_c = _cdiv(n, block_kv)
    tiling = _tiling(block_q, block_kv)
    assert _elements("flash1", Workload(n, d=d), tiling, init=False) == 2 * n * d + t_c * (3 * n * d + 4 * n)
    # Alg. 1 line 2: O = 0, l = 0, m = −∞ written once, a term of its own
    assert _elements("flash1", Workload(n, d=d), tiling, init=True) == n * d + 2 * n


@settings(max_examples=examples(150))
@given(n=sizes, d=dims, block_q=blocks, block_kv=blocks)
def test_flash2_is_2nd_plus_2nd_tr_plus_n(n, d, block_q, block_kv):
    # FA2 Alg. 1: Q once, K and V once per query block, O once, logsumexp L once (fp32)
    t_r = _cdiv(n, block_q)
    tiling = _tiling(block_q, block_kv)
    assert _elements("flash2", Workload(n, d=d), tiling) == 2 * n * d + 2 * n * d * t_r + n


@settings(max_examples=examples(150))
@given(n=sizes, batch=st.integers(1, 4), heads=st.integers(1, 8), d=st.integers(1, 64))
def test_counts_scale_with_batch_and_heads(n, batch, heads, d):
    one = Workload(n, d=d)
    many = Workload(n, d=d, batch=batch, heads=heads)
    for name, algorithm in ALGORITHMS.items():
        if name == "cascade":
            continue  # shared-prefix batches only (tests/test_cascade.py)
        tiling = _tiling(32, 64) if algorithm.tiled else None
        assert _elements(name, many, tiling) == batch * heads * _elements(name, one, tiling)


@settings(max_examples=examples(150))
@given(n=st.integers(1, 2000), grow=st.integers(1, 500), d=st.sampled_from([16, 32, 64, 128]),
       causal=st.booleans())
def test_traffic_monotone_in_n(n, grow, d, causal):
    # the issue-2 algorithms; splitkv's heuristic picks a different split count as N changes
    for name in DEFAULT_ALGORITHMS:
        small = iosim.compare(Workload(n, d=d, causal=causal), "a100", algorithms=[name])
        large = iosim.compare(Workload(n + grow, d=d, causal=causal), "a100", algorithms=[name])
        assert large.algorithm(name).hbm_bytes >= small.algorithm(name).hbm_bytes


@settings(max_examples=examples(150))
@given(n=st.integers(64, 4096), d=st.sampled_from([16, 32, 64, 128, 256]),
       sram=st.integers(8, 256), more=st.integers(1, 256))
def test_flash_traffic_non_increasing_as_sram_grows(n, d, sram, more):
    # Theorem 2: Θ(N²d²/M) — with Alg. 1's default blocks more SRAM never means more traffic.
    # Not so with a causal mask: a larger diagonal block can over-fetch keys above the diagonal
    # (n = 64, d = 64: flash2 moves more at 9 KiB (18×17 blocks) than at 8 KiB (16×15)).
    workload = Workload(n, d=d)
    for name in ("flash1", "flash2"):
        small = iosim.compare(workload, "a100", algorithms=[name], sram=f"{sram}KiB")
        large = iosim.compare(workload, "a100", algorithms=[name], sram=f"{sram + more}KiB")
        assert large.algorithm(name).hbm_bytes <= small.algorithm(name).hbm_bytes


# --- the tile walk and the closed form agree to the byte, term by term ---------------------------

workloads = st.builds(
    lambda n, n_kv, d, group, kv_heads, batch, causal: Workload(
        n, n_kv=n_kv, d=d, heads=group * kv_heads, kv_heads=kv_heads, batch=batch, causal=causal),
    n=st.integers(1, 200), n_kv=st.integers(1, 200), d=st.integers(1, 24), group=st.integers(1, 3),
    kv_heads=st.integers(1, 2), batch=st.integers(1, 2), causal=st.booleans())


def _by_term(accesses) -> Counter:
    out: Counter = Counter()
    for a in accesses:
        out[(a.kernel, a.tensor, a.op, a.init)] += a.bytes
    return out


@settings(max_examples=examples(120))
@given(workload=workloads, block_q=st.integers(1, 80), block_kv=st.integers(1, 80))
def test_closed_form_equals_tile_walk(workload, block_q, block_kv):
    tiling = _tiling(block_q, block_kv)
    for algorithm in ALGORITHMS.values():
        if algorithm.name == "triton" and triton_unsupported(workload):
            continue  # self-attention without masks only (test_triton_bwd_model.py)
        if algorithm.name == "cascade":
            continue  # shared-prefix batches only (tests/test_cascade.py)
        t = tiling if algorithm.tiled else None
        kernels = algorithm.kernels(workload)
        expected = _by_term(closed_form(kernels, workload, t))
        expected = Counter({k: v for k, v in expected.items() if v})
        assert _by_term(walk(kernels, workload, t)) == expected


# --- block sums against brute force --------------------------------------------------------------


def _brute_pairs(n_q, n_kv, block_q, block_kv, causal):
    t_r, t_c = _cdiv(n_q, block_q), _cdiv(n_kv, block_kv)
    offset = n_kv - n_q
    pairs = []
    for i in range(t_r):
        rows = range(i * block_q, min(n_q, (i + 1) * block_q))
        for j in range(t_c):
            cols = range(j * block_kv, min(n_kv, (j + 1) * block_kv))
            # visited iff some query row in the block sees some key in the block (bottom-right mask)
            if not causal or any(cols[0] <= q + offset for q in rows):
                pairs.append((len(rows), len(cols)))
    return pairs


@settings(max_examples=examples(300))
@given(n_q=st.integers(1, 150), n_kv=st.integers(1, 150), block_q=st.integers(1, 40),
       block_kv=st.integers(1, 40), causal=st.booleans())
def test_block_sums_match_brute_force(n_q, n_kv, block_q, block_kv, causal):
    pairs = _brute_pairs(n_q, n_kv, block_q, block_kv, causal)
    # the last query row sees every key, so it can only be the early rows of a short KV that see none
    sums = block_sums(n_q, n_kv, block_q, block_kv, causal)
    assert sums.pairs == len(pairs)
    assert sums.pair_q_rows == sum(r for r, _ in pairs)
    assert sums.pair_kv_rows == sum(c for _, c in pairs)
    assert sums.scores == sum(r * c for r, c in pairs)
    assert sum(visited_kv_blocks(n_q, n_kv, block_q, block_kv, causal)) == len(pairs)


def test_block_sums_vectorised_equal_scalar():
    rng = np.random.default_rng(0)
    n_q, n_kv = rng.integers(1, 5000, 400), rng.integers(1, 5000, 400)
    block_q, block_kv = rng.integers(1, 300, 400), rng.integers(1, 300, 400)
    causal = rng.random(400) < 0.5
    vector = block_sums(n_q, n_kv, block_q, block_kv, causal)
    for k in range(400):
        scalar = block_sums(int(n_q[k]), int(n_kv[k]), int(block_q[k]), int(block_kv[k]), bool(causal[k]))
        assert tuple(int(v[k]) for v in vector) == tuple(scalar)


@settings(max_examples=examples(300))
@given(n=st.integers(0, 60), m=st.integers(1, 60), a=st.integers(0, 60), b=st.integers(0, 60))
def test_floor_sum(n, m, a, b):
    expected = sum((a * i + b) // m for i in range(n))
    assert floor_sum(n, m, a, b) == expected
    assert int(floor_sum(np.array([n]), np.array([m]), np.array([a]), np.array([b]))[0]) == expected


def test_causal_traffic_can_grow_with_sram():
    # the counterexample above, kept so the exception stays documented and true
    workload = Workload(64, d=64, causal=True)
    at8 = iosim.compare(workload, "a100", algorithms=["flash2"], sram="8KiB").algorithm("flash2")
    at9 = iosim.compare(workload, "a100", algorithms=["flash2"], sram="9KiB").algorithm("flash2")
    assert at9.hbm_bytes > at8.hbm_bytes


def test_causal_square_blocks_visit_the_triangle():
    # reference §3: P_c = T(T+1)/2 for B_r = B_c, N = T·B
    sums = block_sums(1024, 1024, 128, 128, True)
    assert sums.pairs == 8 * 9 // 2


# --- tiling ----------------------------------------------------------------------------------------


def test_default_tiling_is_algorithm_1_line_1():
    # B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d): A100 sram_per_block 163 KiB = 83,456 fp16 elements, d = 64
    tiling = make_tiling(Workload(4096, d=64), 163 * 1024, "a100")
    assert (tiling.block_q, tiling.block_kv) == (64, 326)
    q_outer = make_tiling(Workload(4096, d=64), 163 * 1024, "a100", outer="q")
    assert (q_outer.block_q, q_outer.block_kv) == (326, 64)


def test_default_tiling_keeps_the_paper_rule_and_reports_the_fits_check():
    # d = 256 on 163 KiB: ⌈83456/1024⌉ = 82 for both blocks (Alg. 1 line 1 as printed), but
    # 4·82·256·2 bytes + ℓ, m (8·82) = 168,592 > 166,912: the fits check says so and what fits
    tiling = make_tiling(Workload(1024, d=256), 163 * 1024, "a100")
    assert (tiling.block_q, tiling.block_kv) == (82, 82) and "stepped down" not in tiling.rule
    assert "168,592 B, 1,680 B more than the SRAM" in tiling.fits_note
    assert "81 × 81 would fit" in tiling.fits_note
    assert (2 * 81 + 2 * 81) * 256 * 2 + 8 * 81 <= 163 * 1024
