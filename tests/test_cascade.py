"""Shared-prefix decoding (issue 14 item 3): cascade attention against split-KV over each
request's full KV, counted three ways and checked against a masked float64 reference."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim import Workload
from iosim.algorithms import ALGORITHMS
from iosim.algorithms.blocks import cdiv
from iosim.algorithms.closedform import closed_form
from iosim.algorithms.tilewalk import walk
from iosim.analysis.cascade_verdict import cascade_verdict
from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.analysis.verify import verify
from iosim.inputs.tiling import make_tiling
from tests.conftest import examples

ALL = ["standard", "splitkv", "cascade"]


@pytest.mark.parametrize(("workload", "kwargs"), [
    # GQA packing, two prefix splits, requests of unequal length (two of them equal: one segment)
    (Workload(1, n_kv=70, batch=3, heads=4, kv_heads=2, d=8, prefix_len=50,
              suffix_lens=(5, 20, 20)), {"block_q": 16, "block_kv": 16, "splits": 2}),
    # MHA, one query row per block: the prefix kernel's B rows are 2 query blocks
    (Workload(1, n_kv=70, batch=3, heads=2, d=8, prefix_len=50, suffix_lens=(5, 20, 1)),
     {"block_q": 2, "block_kv": 16, "splits": 1}),
    # MQA: 8 query heads × 5 requests = 40 packed prefix rows, 3 prefix splits (one empty)
    (Workload(1, n_kv=40, batch=5, heads=8, kv_heads=1, d=8, prefix_len=33,
              suffix_lens=(7, 1, 2, 3, 4)), {"block_q": 16, "block_kv": 8, "splits": 3}),
    # lengths that come back after others (runs 5, 20, 5, 20, 5): the closed form counts the
    # runs of one length as one segment of their summed batch (closedform._segment_parts); the
    # walk and the executor go request by request
    (Workload(1, n_kv=70, batch=5, heads=4, kv_heads=2, d=8, prefix_len=50,
              suffix_lens=(5, 20, 5, 20, 5)), {"block_q": 16, "block_kv": 16, "splits": 2}),
])
def test_three_counts_and_the_output_agree(workload: Workload, kwargs: dict[str, int]) -> None:
    checked = verify(workload, algorithms=ALL, **kwargs)  # type: ignore[arg-type]
    assert checked.ok
    assert all(a.stream_equal for a in checked.algorithms)


def test_cascade_reads_the_prefix_once_per_query_block() -> None:
    """Independent count: with the 4·8 = 32 packed rows of each KV head in one 64-row block
    and one prefix split, the prefix's K is read once per KV head (L·d per head), each
    suffix once; split-KV reads each request's L + s_b keys."""
    w = Workload(1, n_kv=4096 + 100, batch=4, heads=32, kv_heads=8, d=128, prefix_len=4096,
                 suffix_lens=(16, 40, 9, 100))
    by_name = {a.name: a for a in compare(w, "h200", algorithms=["splitkv", "cascade"],
                                          splits=1).algorithms}
    k_cascade = sum(t.elements for k in by_name["cascade"].kernels for t in k.traffic.terms
                    if t.tensor == "K")
    k_split = sum(t.elements for k in by_name["splitkv"].kernels for t in k.traffic.terms
                  if t.tensor == "K")
    assert k_cascade == 8 * 128 * (4096 + 16 + 40 + 9 + 100)
    assert k_split == 8 * 128 * (4 * 4096 + 16 + 40 + 9 + 100)


def test_each_wins_somewhere() -> None:
    """A long prefix shared by many requests favours cascade; a short prefix with long own
    suffixes leaves it only its extra launch and states."""
    long_prefix = Workload(1, n_kv=8192 + 64, batch=32, heads=32, kv_heads=8, d=128,
                           prefix_len=8192, suffix_lens=(64,) * 32)
    short_prefix = Workload(1, n_kv=16 + 8192, batch=2, heads=32, kv_heads=8, d=128,
                            prefix_len=16, suffix_lens=(8192, 8000))
    first = cascade_verdict(compare(long_prefix, "h200", algorithms=ALL))
    second = cascade_verdict(compare(short_prefix, "h200", algorithms=ALL))
    assert first is not None and first.winner == "cascade" and first.ratio > 2
    assert second is not None and second.winner == "splitkv"


def test_a_one_point_sweep_equals_compare() -> None:
    w = Workload(1, n_kv=300, batch=3, heads=8, kv_heads=2, d=64, prefix_len=256,
                 suffix_lens=(44, 3, 17))
    result = sweep(SweepSpec(n=(1,), n_kv=(300,), heads=(8,), kv_heads=(2,), batch=(3,),
                             gpu=("h100",), algorithms=tuple(ALL), prefix_len=256,
                             suffix_lens=(44, 3, 17)))
    for a in compare(w, "h100", algorithms=ALL).algorithms:
        grid = result.algorithm(a.name)
        assert int(grid.hbm_bytes.reshape(-1)[0]) == a.hbm_bytes
        assert float(grid.time_s.reshape(-1)[0]) == pytest.approx(a.time_s, rel=1e-12)


def test_the_cli_says_who_wins(iosim_cli: Any) -> None:
    code, out, err = iosim_cli("compare", "--gpu", "h200", "--n", "1", "--heads", "32",
                               "--kv-heads", "8", "--d", "128", "--prefix-len", "4096",
                               "--suffix-lens", "16,40,9,100", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["shared_prefix"]["winner"] in ("cascade", "splitkv")
    assert [a["name"] for a in data["algorithms"]] == ALL


@pytest.mark.parametrize(("args", "words"), [
    (["--n", "1", "--prefix-len", "64", "--suffix-lens", "1,x"], "--suffix-lens must be whole"),
    (["--n", "1", "--prefix-len", "64"], "needs both"),
    (["--n", "4", "--prefix-len", "64", "--suffix-lens", "1,2"], "--n 1"),
    (["--n", "1", "--prefix-len", "64", "--suffix-lens", "1,2", "--batch", "3"], "2 requests"),
    (["--n", "1", "--prefix-len", "64", "--suffix-lens", "1,2", "--algo", "flash2"],
     "flash2 does not model a shared-prefix"),
    (["--n", "1", "--n-kv", "64", "--algo", "cascade"], "--prefix-len"),
])
def test_bad_shared_prefix_input_is_one_line(iosim_cli: Any, args: list[str], words: str) -> None:
    code, _out, err = iosim_cli("compare", "--gpu", "h200", *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


@settings(max_examples=examples(40), deadline=None)
@given(prefix=st.integers(1, 90), suffixes=st.lists(st.integers(1, 40), min_size=1, max_size=5),
       kv_heads=st.sampled_from([1, 2, 4]), block_q=st.sampled_from([1, 3, 16]),
       block_kv=st.sampled_from([4, 7, 32]), splits=st.integers(1, 4),
       algorithm=st.sampled_from(ALL))
def test_closed_form_equals_the_walk_on_any_shared_prefix_batch(
        prefix: int, suffixes: list[int], kv_heads: int, block_q: int, block_kv: int,
        splits: int, algorithm: str) -> None:
    w = Workload(1, n_kv=prefix + max(suffixes), batch=len(suffixes), heads=4,
                 kv_heads=kv_heads, d=4, prefix_len=prefix, suffix_lens=tuple(suffixes))
    alg = ALGORITHMS[algorithm]
    tiling = None
    if alg.tiled:
        base = make_tiling(w, 10**9, "test", block_q=block_q, block_kv=block_kv, outer="q")
        top = cdiv(prefix if algorithm == "cascade" else w.n_kv, block_kv)
        tiling = alg.finish_tiling(base, w, sm_count=132, splits=min(splits, top),
                                   blocks_given=True)
    kernels = alg.kernels(w, tiling)
    closed: Counter[tuple[str, str, str]] = Counter()
    for t in closed_form(kernels, w, tiling):
        closed[(t.kernel, t.tensor, t.op)] += t.elements
    walked: Counter[tuple[str, str, str]] = Counter()
    for a in walk(kernels, w, tiling):
        walked[(a.kernel, a.tensor, a.op)] += a.elements
    assert +closed == +walked


def test_split_kv_dram_reads_the_shared_prefix_once() -> None:
    """The DRAM estimate of split-KV over a shared prefix: every distinct cache row once — the
    prefix, then each request's own suffix — for K and V (shared_prefix_dram.py), while the
    exact HBM count charges each request its own L + s_b rows."""
    w = Workload(1, n_kv=300, batch=3, heads=8, kv_heads=2, d=64, prefix_len=256,
                 suffix_lens=(44, 3, 17))
    splitkv = next(a for a in compare(w, "h200", algorithms=["splitkv"]).algorithms
                   if a.name == "splitkv")
    assert splitkv.dram is not None
    k_dram = sum(t.bytes for t in splitkv.dram.terms if t.tensor == "K")
    k_hbm = sum(t.bytes for k in splitkv.kernels for t in k.traffic.terms if t.tensor == "K")
    assert k_dram == (256 + 44 + 3 + 17) * 2 * 64 * 2
    assert k_hbm == (3 * 256 + 44 + 3 + 17) * 2 * 64 * 2


def test_a_shared_prefix_sweep_names_each_winner_as_compare_does() -> None:
    # one rule for compare, report and sweep: the sweep's note at each point is compare's own
    # verdict sentence (analysis/cascade_verdict.py) for that point's workload
    result = sweep(SweepSpec(n=(1,), n_kv=(4196,), heads=(32,), kv_heads=(8, 32), d=(128,),
                             batch=(4,), gpu=("h200",), algorithms=tuple(ALL), prefix_len=4096,
                             suffix_lens=(16, 40, 9, 100)))
    notes = [n for n in result.notes if "Shared prefix" in n]
    assert len(notes) == 2
    for kv_heads, note in zip((8, 32), notes, strict=True):
        w = Workload(1, n_kv=4196, batch=4, heads=32, kv_heads=kv_heads, d=128,
                     prefix_len=4096, suffix_lens=(16, 40, 9, 100))
        verdict = cascade_verdict(compare(w, "h200", algorithms=ALL))
        assert verdict is not None
        assert note == f"kv_heads {kv_heads}: {verdict.sentence()}"
