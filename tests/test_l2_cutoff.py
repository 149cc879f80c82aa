"""The L2's soft cutoff (estimates/l2_cutoff.py) and the weighted sum over blocks it drives
(l2_waves.sum_weighted), against brute-force enumerations and the ideal LRU it generalises."""

from __future__ import annotations

import itertools
import math
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.algorithms import get_algorithm
from iosim.algorithms.blocks import RowsPerKvBlock, VisitedKvBlocks, visited_kv_blocks
from iosim.estimates import l2_cutoff
from iosim.estimates.l2 import dram_estimate
from iosim.estimates.l2_simulate import simulate
from iosim.estimates.l2_waves import EXACT_TERMS, sum_weighted
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload

MiB = 2**20


@pytest.fixture(scope="module")
def h200():  # type: ignore[no-untyped-def]
    return load_hardware(config_dir() / "h200.yaml")


def _tiling(block_q: int, block_kv: int) -> Tiling:
    return Tiling(block_q, block_kv, 1 << 30, "test", "test", bwd_block_q=block_q,
                  bwd_block_kv=block_kv)


def test_the_cutoff_is_a_step_without_width_and_a_normal_cdf_with_one() -> None:
    with patch.object(l2_cutoff, "FILL_WIDTH", 0.0), patch.object(l2_cutoff, "FILL_SHARE", 1.0):
        assert l2_cutoff.miss_probability(100.0, 100.0) == 0.0  # the ideal LRU keeps it
        assert l2_cutoff.miss_probability(100.1, 100.0) == 1.0
    with patch.object(l2_cutoff, "FILL_WIDTH", 0.1), patch.object(l2_cutoff, "FILL_SHARE", 0.8):
        assert l2_cutoff.miss_probability(80.0, 100.0) == pytest.approx(0.5)
        # one standard deviation above: Φ(1)
        assert l2_cutoff.miss_probability(90.0, 100.0) == pytest.approx(
            0.5 * (1 + math.erf(1 / math.sqrt(2))))
        assert l2_cutoff.miss_probability(39.9, 100.0) == 0.0  # beyond TAIL deviations: exact
        assert l2_cutoff.miss_probability(120.1, 100.0) == 1.0
        assert l2_cutoff.never_misses(39.9, 100.0) and not l2_cutoff.never_misses(41.0, 100.0)
        assert l2_cutoff.never_miss_bytes(100.0) == pytest.approx(40.0)
        assert l2_cutoff.sure_miss_bytes(100.0) == pytest.approx(120.0)


@settings(max_examples=200, deadline=None)
@given(n_q=st.integers(1, 300), n_kv=st.integers(1, 300), block_q=st.integers(1, 40),
       block_kv=st.integers(1, 40), causal=st.booleans(), centre=st.floats(-1, 14),
       width=st.floats(0.0, 5.0))
def test_sum_weighted_equals_the_sum_over_the_list(n_q, n_kv, block_q, block_kv, causal,  # type: ignore[no-untyped-def]
                                                   centre, width):
    """Σ lengths · weight(length) by the closed form = the sum over the listed lengths, for a
    weight shaped as the cutoff (0 below, 1 above, rising in between)."""
    def weight(x: int) -> float:
        if width == 0:
            return 1.0 if x > centre else 0.0
        return min(1.0, max(0.0, (x - centre) / width + 0.5))

    listed = visited_kv_blocks(n_q, n_kv, block_q, block_kv, causal)
    lazy = VisitedKvBlocks(n_q, n_kv, block_q, block_kv, causal)
    rows = RowsPerKvBlock(lazy)
    for seq, lazy_seq in ((listed, lazy), (list(rows[j] for j in range(len(rows))), rows)):
        expected = sum(x * weight(x) for x in seq[1:])
        assert sum_weighted(lazy_seq, 1, len(seq), weight) == pytest.approx(expected, abs=1e-9)


def test_sum_weighted_beyond_its_exact_terms_stays_within_a_part_in_a_thousand() -> None:
    """Far more partial weights than EXACT_TERMS (a causal head of 2^22 rows in 1-row blocks):
    the run-by-run midpoint sum against the term-by-term one."""
    lazy = VisitedKvBlocks(2**22, 2**22, 1, 1, True)
    assert len(lazy) > 100 * EXACT_TERMS
    half = len(lazy) / 2

    def weight(x: int) -> float:
        return 0.5 * (1 + math.erf((x - half) / (0.2 * half * math.sqrt(2))))

    step = 997  # a coarse but exact-enough reference: every 997th term, scaled
    exact = sum(lazy[i] * weight(lazy[i]) for i in range(1, len(lazy), step)) * step
    assert sum_weighted(lazy, 1, len(lazy), weight) == pytest.approx(exact, rel=1e-3)


@pytest.mark.parametrize(("mib", "programs"), [(60, 132), (1, 4)])
def test_alg4_with_the_step_cutoff_is_the_lru_simulation(h200, mib: float, programs: int) -> None:  # type: ignore[no-untyped-def]
    """With FILL_SHARE 1 and FILL_WIDTH 0 the serial sweeps are the ideal LRU that the
    tile-by-tile simulation walks."""
    w = Workload(1024, d=64, heads=8, pass_="bwd")
    kernels = get_algorithm("flash1").kernels(w)
    t = _tiling(64, 128)
    with patch.object(l2_cutoff, "FILL_SHARE", 1.0), patch.object(l2_cutoff, "FILL_WIDTH", 0.0):
        closed = dram_estimate(kernels, w, t, h200, concurrent_programs=programs,
                               l2_bytes=mib * MiB)
    simulated = simulate(kernels, w, t, l2_bytes=mib * MiB, concurrent_programs=programs)
    assert closed.read_bytes == pytest.approx(simulated.read_bytes, rel=0.01)


def test_alg4_dram_grows_gradually_as_the_sweeps_approach_the_l2(h200) -> None:  # type: ignore[no-untyped-def]
    """Algorithm 4's fused kernel at 8 heads, d 128, N 4096 … 8192 (a head's sweeps × 8 heads
    from 0.54 to 1.08 of the L2): the DRAM bytes rise in steps no larger than the cutoff's
    width allows, where the ideal LRU jumps from one pass to every key block's at one N."""
    def attn_bytes(n: int) -> float:
        w = Workload(n, d=128, heads=8, pass_="bwd")
        t = _tiling(64, 64)
        e = dram_estimate(get_algorithm("flash1").kernels(w), w, t, h200)
        return float(sum(x.bytes for x in e.terms if x.kernel == "bwd_attn"))

    sizes = list(range(4096, 8193, 256))
    soft = [attn_bytes(n) / n for n in sizes]
    assert all(b >= a * 0.999 for a, b in itertools.pairwise(soft))  # more re-reads as N grows
    jumps = [b / a for a, b in itertools.pairwise(soft)]
    with patch.object(l2_cutoff, "FILL_SHARE", 1.0), patch.object(l2_cutoff, "FILL_WIDTH", 0.0):
        step = [attn_bytes(n) / n for n in sizes]
    assert max(b / a for a, b in itertools.pairwise(step)) > 10  # the LRU's cliff
    assert max(jumps) < 0.5 * max(b / a for a, b in itertools.pairwise(step))
