"""closed_form == walk for every kernel issue 3 adds (backward, split-KV, packed heads, block-sparse),
element for element, on causal, GQA and uneven shapes; and the vectorised counts agree."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim import Workload, closed_form, get_algorithm, make_tiling, walk
from iosim.algorithms.blocks import cdiv
from iosim.algorithms.closedform import Dims, access_elements, kernel_programs, kernel_sums
from iosim.record import field_names, replace
from tests.conftest import examples


def _setup(name: str, w: Workload, block_q: int, block_kv: int, splits: int = 1,
           bwd_blocks: tuple[int, int] | None = None):
    algorithm = get_algorithm(name)
    tiling = None
    if algorithm.tiled:
        tiling = replace(make_tiling(w, 10**9, "test", block_q=block_q, block_kv=block_kv),
                         splits=splits)
        if bwd_blocks is not None:
            tiling = replace(tiling, bwd_block_q=bwd_blocks[0], bwd_block_kv=bwd_blocks[1])
    return algorithm.kernels(w, tiling), tiling


def _by_term(kernels, w, tiling) -> tuple[Counter, Counter]:
    closed: Counter = Counter()
    for t in closed_form(kernels, w, tiling):
        closed[(t.kernel, t.tensor, t.op, t.element_bytes, t.init)] += t.elements
    walked: Counter = Counter()
    for a in walk(kernels, w, tiling):
        walked[(a.kernel, a.tensor, a.op, a.element_bytes, a.init)] += a.elements
    return +closed, +walked


shapes = st.fixed_dictionaries({
    "n": st.integers(1, 30),
    "n_kv": st.integers(1, 30),
    "d": st.integers(1, 4),
    "kv_heads": st.integers(1, 2),
    "group": st.integers(1, 3),
    "batch": st.integers(1, 2),
    "causal": st.booleans(),
    "sparsity": st.sampled_from([1.0, 0.5, 0.3, 0.77, 1 / 3, 0.05]),
    "unfused": st.sampled_from([(), ("dropout",), ("scale", "mask", "dropout")]),
    "block_q": st.integers(1, 9),
    "block_kv": st.integers(1, 9),
})


def _workload(s: dict, pass_: str) -> Workload:
    return Workload(s["n"], n_kv=s["n_kv"], d=s["d"], heads=s["kv_heads"] * s["group"],
                    kv_heads=s["kv_heads"], batch=s["batch"], causal=s["causal"], pass_=pass_,
                    sparsity=s["sparsity"], unfused=s["unfused"])


@settings(max_examples=examples(150))
@given(s=shapes, bq2=st.integers(1, 9), bkv2=st.integers(1, 9))
def test_backward_closed_form_equals_walk(s: dict, bq2: int, bkv2: int) -> None:
    for name in ("standard", "flash1", "flash2"):
        w = _workload(s, "fwdbwd")
        kernels, tiling = _setup(name, w, s["block_q"], s["block_kv"], bwd_blocks=(bq2, bkv2))
        closed, walked = _by_term(kernels, w, tiling)
        assert closed == walked, name


@settings(max_examples=examples(150))
@given(s=shapes, split_seed=st.integers(0, 10**6))
def test_splitkv_closed_form_equals_walk(s: dict, split_seed: int) -> None:
    w = _workload(s, "fwd")
    t_c = cdiv(s["n_kv"], s["block_kv"])
    splits = 1 + split_seed % t_c
    kernels, tiling = _setup("splitkv", w, s["block_q"], s["block_kv"], splits)
    closed, walked = _by_term(kernels, w, tiling)
    assert closed == walked


@settings(max_examples=examples(60))
@given(s=shapes, split_seed=st.integers(0, 10**6))
def test_walk_addresses_stay_inside_their_tensors(s: dict, split_seed: int) -> None:
    """Every tile the walk emits lies inside its tensor: rows, heads (query or KV), split copy."""
    w = _workload(s, "fwd")
    splits = 1 + split_seed % cdiv(s["n_kv"], s["block_kv"])
    kernels, tiling = _setup("splitkv", w, s["block_q"], s["block_kv"], splits)
    kv_tensors = {"K", "V"}
    for a in walk(kernels, w, tiling):
        length = w.n_kv if a.tensor in kv_tensors else w.n
        assert 0 <= a.row_start < a.row_stop <= length
        assert 0 <= a.head < (w.kv_heads if a.tensor in kv_tensors else w.heads)
        assert 0 <= a.split < splits
        if a.tensor in {"O_partial", "lse_partial"}:
            assert splits > 1


def test_packed_decode_writes_every_query_head_once() -> None:
    """GQA decode (FA2 seqlenq_ngroups_swapped): the 4 query heads of a KV head are 4 rows of one
    tile; the walk still writes O of each query head (row 0) once per split."""
    w = Workload(1, n_kv=100, d=8, heads=8, kv_heads=2, batch=1)
    kernels, tiling = _setup("splitkv", w, 64, 16, splits=3)
    writes = Counter((a.head, a.split) for a in walk(kernels, w, tiling)
                     if a.tensor == "O_partial" and a.op == "write")
    assert writes == Counter({(h, k): 1 for h in range(8) for k in range(3)})
    kv_reads = Counter((a.head, a.row_start) for a in walk(kernels, w, tiling) if a.tensor == "K")
    assert set(kv_reads.values()) == {1}  # each K tile of each KV head read exactly once


def _vector_dims(workloads: list[Workload], tilings: list) -> Dims:
    cols = [Dims.of(w, t) for w, t in zip(workloads, tilings, strict=True)]
    return Dims(**{f: np.array([getattr(c, f) for c in cols]) for f in field_names(Dims)})


def _random_case(rng: np.random.Generator, name: str, packed: bool) -> tuple[Workload, object]:
    kv = int(rng.integers(1, 3))
    group = 2 if packed else int(rng.integers(1, 3))
    n = 1 if packed else int(rng.integers(1, 200))
    block_kv = int(rng.integers(1, 40))
    w = Workload(n, n_kv=int(rng.integers(2 * block_kv, 300)), d=int(rng.integers(1, 9)),
                 heads=kv * group, kv_heads=kv, batch=int(rng.integers(1, 3)),
                 causal=bool(rng.random() < 0.5), sparsity=float(rng.choice([1.0, 0.5, 0.3])),
                 pass_="fwd" if name == "splitkv" else "fwdbwd")
    t = make_tiling(w, 10**9, "t", block_q=int(rng.integers(1, 40)), block_kv=block_kv)
    t_c = cdiv(w.n_kv, block_kv)
    return w, replace(t, splits=int(rng.integers(2, t_c + 1)),
                      bwd_block_q=int(rng.integers(1, 40)), bwd_block_kv=int(rng.integers(1, 40)))


def test_vectorised_counts_equal_scalar_counts() -> None:
    """Dims of numpy arrays (sweeps) give the same counts as one workload at a time."""
    rng = np.random.default_rng(3)
    for name, packed in (("flash1", False), ("flash2", False), ("standard", False),
                         ("splitkv", False), ("splitkv", True)):
        cases = [_random_case(rng, name, packed) for _ in range(40)]
        workloads = [w for w, _ in cases]
        tilings = [t for _, t in cases]
        kernels = get_algorithm(name).kernels(workloads[0], tilings[0])
        assert any(k.pack_heads for k in kernels) == packed
        vector = _vector_dims(workloads, tilings)
        for kernel in kernels:
            vsums = kernel_sums(kernel, vector)
            for access in kernel.accesses:
                got = access_elements(access, kernel, vector, vsums)
                for i, (w, t) in enumerate(cases):
                    scalar = Dims.of(w, t)
                    want = access_elements(access, kernel, scalar, kernel_sums(kernel, scalar))
                    assert int(got[i]) == want, (name, kernel.name, access.tensor, w, t)
            if kernel.grid is not None:
                programs = kernel_programs(kernel, vector)
                for i, (w, t) in enumerate(cases):
                    assert int(programs[i]) == kernel_programs(kernel, Dims.of(w, t))
