"""Block-sparse FlashAttention (paper Prop. 4) with iosim's deterministic block mask."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim import Workload, closed_form, compare, get_algorithm, make_tiling, walk
from iosim.algorithms.blockmask import kept, kept_between
from iosim.algorithms.blocks import block_sums, cdiv
from iosim.algorithms.closedform import Dims, kernel_sums
from iosim.record import replace
from tests.conftest import examples


def test_mask_is_an_even_bresenham_pattern() -> None:
    """s = 1/2 on 2 × 4 blocks: the row-major pairs 0, 2, 4, 6 are non-zero."""
    assert [k for k in range(8) if kept(k, 1, 2)] == [0, 2, 4, 6]
    assert [k for k in range(10) if kept(k, 3, 10)] == [0, 3, 6]  # ⌈0.3⌉, ⌈1.2⌉, ⌈2.1⌉ step up
    assert all(kept(0, num, 1000) for num in (1, 7, 999))  # pair 0 always kept


@settings(max_examples=examples(200))
@given(start=st.integers(0, 500), length=st.integers(0, 500), num=st.integers(1, 50),
       extra=st.integers(0, 50))
def test_kept_between_counts_the_mask(start: int, length: int, num: int, extra: int) -> None:
    den = num + extra
    stop = start + length
    assert kept_between(start, stop, num, den) == sum(kept(k, num, den) for k in range(start, stop))


@settings(max_examples=examples(150))
@given(n_q=st.integers(1, 60), n_kv=st.integers(1, 60), block_q=st.integers(1, 12),
       block_kv=st.integers(1, 12), causal=st.booleans(),
       s=st.sampled_from([0.01, 0.1, 0.25, 1 / 3, 0.5, 0.9, 1.0]))
def test_nonzero_pairs_are_ceil_s_times_visited(n_q: int, n_kv: int, block_q: int, block_kv: int,
                                                causal: bool, s: float) -> None:
    w = Workload(n_q, n_kv=n_kv, causal=causal, sparsity=s)
    num, den = w.sparsity_fraction
    dense = block_sums(n_q, n_kv, block_q, block_kv, causal)
    tiling = make_tiling(w, 10**9, "t", block_q=block_q, block_kv=block_kv)
    (kernel,) = get_algorithm("flash2").kernels(w, tiling)
    sparse = kernel_sums(kernel, Dims.of(w, tiling))
    assert sparse.pairs == cdiv(dense.pairs * num, den)
    # the walk visits exactly those pairs: one K tile load per non-zero pair
    loads = sum(1 for a in walk((kernel,), w, tiling) if a.tensor == "K")
    assert loads == sparse.pairs


def test_sparsity_one_is_dense() -> None:
    for pass_ in ("fwd", "bwd"):
        w = Workload(777, n_kv=555, d=32, heads=2, causal=True, pass_=pass_)
        for name in ("flash1", "flash2"):
            a = compare(w, "a100", algorithms=[name]).algorithm(name)
            b = compare(replace(w, sparsity=1.0), "a100", algorithms=[name]).algorithm(name)
            assert a.traffic == b.traffic


def test_prop4_per_pair_terms_scale_and_o_is_still_written() -> None:
    """Prop. 4: Θ(Nd + N²d²M⁻¹s); "for small values of s, we would still need to write the
    result O". FA1: K_j, V_j still loaded once (outside the 'if M_ij ≠ 0'), Q_i per kept pair."""
    n, d, b = 4096, 64, 128
    for s in (1.0, 0.5, 0.25, 0.1):
        w = Workload(n, d=d, sparsity=s)
        tiling = make_tiling(w, 10**9, "t", block_q=b, block_kv=b)
        t1 = closed_form(get_algorithm("flash1").kernels(w, tiling), w, tiling)
        t2 = closed_form(get_algorithm("flash2").kernels(w, tiling), w, tiling)
        pairs = cdiv((n // b) ** 2 * w.sparsity_fraction[0], w.sparsity_fraction[1])
        assert sum(t.elements for t in t1 if t.tensor == "K") == n * d
        assert sum(t.elements for t in t1 if t.tensor == "Q") == pairs * b * d
        assert sum(t.elements for t in t2 if t.tensor == "K") == pairs * b * d
        assert sum(t.elements for t in t2 if t.tensor == "O") == n * d


def test_standard_attention_stays_dense() -> None:
    dense = compare(Workload(512), "a100", algorithms=["standard"]).algorithm("standard")
    sparse = compare(Workload(512, sparsity=0.1), "a100",
                     algorithms=["standard"]).algorithm("standard")
    assert dense.traffic == sparse.traffic


@pytest.mark.parametrize(("s", "fraction"), [(0.3, (3, 10)), (0.25, (1, 4)), (1 / 3, (1, 3)),
                                             (1.0, (1, 1))])
def test_sparsity_as_an_exact_fraction(s: float, fraction: tuple[int, int]) -> None:
    assert Workload(8, sparsity=s).sparsity_fraction == fraction
