"""Paged KV cache (issue 14 item 2): block-table reads counted exactly, the executor gathering
K/V through a real (shuffled) block table, and the flags' bad input."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from iosim import Workload
from iosim.algorithms.blocks import cdiv
from iosim.algorithms.paging import page_entries
from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.analysis.verify import verify


def _brute_entries(n_q: int, n_kv: int, bq: int, bkv: int, causal: bool, splits: int,
                   page: int, split: bool) -> int:
    """Dense enumeration: every program (row block, split), every key block it visits (a key
    block is visited when some row of the block sees some key of it), the distinct pages of
    that tile's rows."""
    t_r, t_c = cdiv(n_q, bq), cdiv(n_kv, bkv)
    nb = cdiv(t_c, splits) if split else t_c
    total = 0
    for i in range(t_r):
        last_row = min(n_q, (i + 1) * bq) - 1
        for k in range(splits if split else 1):
            for j in range(k * nb, min((k + 1) * nb, t_c)):
                if causal and j * bkv > last_row + n_kv - n_q:
                    continue  # every key of the block lies above the diagonal
                rows = range(j * bkv, min(n_kv, (j + 1) * bkv))
                total += len({r // page for r in rows})
    return total


@pytest.mark.parametrize(("n_q", "n_kv", "bq", "bkv", "causal", "splits", "page"), [
    (n_q, n_kv, bq, bkv, causal, splits, page)
    for (n_q, n_kv), (bq, bkv), causal, splits, page in itertools.product(
        [(1, 1), (1, 97), (37, 100), (64, 64), (100, 37)], [(16, 16), (8, 24)], [False, True],
        [1, 3], [1, 5, 16, 24, 50, 1000])
])
def test_block_table_entries_equal_a_dense_enumeration(n_q: int, n_kv: int, bq: int, bkv: int,
                                                       causal: bool, splits: int,
                                                       page: int) -> None:
    split = splits > 1
    splits = min(splits, cdiv(n_kv, bkv))
    assert page_entries(n_q, n_kv, bq, bkv, causal, splits, page, split=split) == \
        _brute_entries(n_q, n_kv, bq, bkv, causal, splits, page, split)


def test_block_table_entries_on_arrays_equal_each_point() -> None:
    n_kv = np.array([100, 257, 1000])
    page = np.array([[1], [16], [300]])
    got = page_entries(1, n_kv, 1, 64, False, 2, page, split=True)
    for (a, kv), (b, p) in itertools.product(enumerate(n_kv), enumerate(page[:, 0])):
        assert got[b, a] == _brute_entries(1, int(kv), 1, 64, False, 2, int(p), True)


@pytest.mark.parametrize(("workload", "algorithms", "kwargs"), [
    (Workload(1, n_kv=200, heads=4, kv_heads=2, page_size=16), ["splitkv"],
     {"splits": 3, "block_kv": 32}),
    (Workload(1, n_kv=200, heads=2, batch=2, page_size=48), ["splitkv", "flash2"],
     {"splits": 2, "block_kv": 32}),
    (Workload(70, n_kv=150, causal=True, batch=2, page_size=7), ["flash2"],
     {"block_q": 16, "block_kv": 32}),
    # MLA absorbed decoding over a paged latent cache (FlashMLA's layout): V from the K pages
    (Workload(1, n_kv=200, heads=4, kv_heads=1, d=24, d_v=16, latent_kv=True, page_size=16),
     ["splitkv"], {"splits": 2, "block_q": 16, "block_kv": 32}),
    # V's head dim apart from Q·K's
    (Workload(70, n_kv=150, d=16, d_v=8, page_size=7), ["flash2"],
     {"block_q": 16, "block_kv": 32}),
])
def test_paged_counts_three_ways_and_the_gathered_output(workload: Workload,
                                                         algorithms: list[str],
                                                         kwargs: dict[str, int]) -> None:
    checked = verify(workload, algorithms=algorithms, **kwargs)  # type: ignore[arg-type]
    assert checked.ok
    for algorithm in checked.algorithms:
        table = [t for t in algorithm.terms if t.tensor == "block_table"]
        assert table and table[0].element_bytes == 4 and table[0].agree


def test_the_executor_really_gathers_through_the_block_table() -> None:
    """A contiguous read of the shuffled pool would attend to the wrong keys."""
    from iosim.execute import execute, precision, random_inputs

    w = Workload(1, n_kv=64, page_size=8)
    inputs = random_inputs(w, 0, precision("float64"))
    paged = execute("flash2", w, inputs, block_q=1, block_kv=16).output
    plain = execute("flash2", w.with_(page_size=None), inputs, block_q=1, block_kv=16).output
    assert np.allclose(paged, plain, atol=1e-12)
    pool = execute("flash2", w, inputs, block_q=1, block_kv=16, record=True)
    assert ("attn", "block_table", "read") in pool.counts


def test_a_paged_cache_adds_only_the_block_table_to_the_bytes() -> None:
    w = Workload(1, n_kv=4096, heads=8, kv_heads=2, batch=4)
    plain = {a.name: a for a in compare(w, "h100", algorithms=["splitkv"]).algorithms}
    paged = {a.name: a for a in compare(w.with_(page_size=16), "h100",
                                        algorithms=["splitkv"]).algorithms}
    extra = paged["splitkv"].hbm_bytes - plain["splitkv"].hbm_bytes
    tiling = paged["splitkv"].tiling
    assert tiling is not None
    # every (request, KV head) reads each of its 4096/16 = 256 pages' entries once: the tiles
    # of B_c = 256 rows hold whole pages
    assert extra == 4 * 2 * (4096 // 16) * 4


def test_a_one_point_sweep_equals_compare_with_a_page_size() -> None:
    w = Workload(1, n_kv=1000, heads=8, kv_heads=2, batch=3, page_size=24)
    result = sweep(SweepSpec(n=(1,), n_kv=(1000,), heads=(8,), kv_heads=(2,), batch=(3,),
                             gpu=("h100",), algorithms=("standard", "flash2", "splitkv"),
                             page_size=24))
    for a in compare(w, "h100", algorithms=["standard", "flash2", "splitkv"]).algorithms:
        assert int(result.algorithm(a.name).hbm_bytes.reshape(-1)[0]) == a.hbm_bytes


@pytest.mark.parametrize(("args", "words"), [
    (["--page-size", "0"], "--page-size must be at least 1"),
    (["--page-size", "16", "--algo", "flash1"], "flash1 does not read a paged KV cache"),
    (["--page-size", "16", "--pass", "bwd", "--algo", "flash2"], "backward"),
])
def test_bad_paged_input_is_one_line_and_exit_2(iosim_cli: Any, args: list[str],
                                                words: str) -> None:
    code, _out, err = iosim_cli("compare", "--gpu", "h100", "--n", "64", *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
