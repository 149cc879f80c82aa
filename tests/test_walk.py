"""The tile walk: its totals equal the closed form term by term; walk_arrays equals walk."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from iosim.algorithms import ALGORITHMS, get_algorithm
from iosim.algorithms.blocks import cdiv
from iosim.algorithms.closedform import closed_form
from iosim.algorithms.tilestream import walk_arrays
from iosim.algorithms.tilewalk import TileAccess, walk
from iosim.algorithms.triton_bwd import triton_unsupported
from iosim.analysis.compare import tiling_for
from iosim.analysis.requests import sram_budget
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.tiling import Tiling, make_tiling
from iosim.inputs.workload import Workload
from iosim.record import replace
from tests.conftest import examples
from tests.strategies import tilings, workloads

SETTINGS = settings(max_examples=examples(120),
                    suppress_health_check=[HealthCheck.too_slow])


def walk_terms(accesses: list[TileAccess]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(elements, bytes) per (kernel, tensor, op)."""
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for a in accesses:
        entry = out[(a.kernel, a.tensor, a.op)]
        entry[0] += a.elements
        entry[1] += a.bytes
    return {k: (v[0], v[1]) for k, v in out.items()}


def closed_terms(algorithm: str, workload: Workload,
                 tiling: Tiling | None) -> dict[tuple[str, str, str], tuple[int, int]]:
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for t in closed_form(ALGORITHMS[algorithm].kernels(workload), workload, tiling):
        entry = out[(t.kernel, t.tensor, t.op)]
        entry[0] += t.elements
        entry[1] += t.bytes
    return {k: (v[0], v[1]) for k, v in out.items()}


@SETTINGS
@given(data=st.data(), algorithm=st.sampled_from(sorted(ALGORITHMS)))
def test_walk_equals_closed_form_term_by_term(data: st.DataObject, algorithm: str) -> None:
    workload = data.draw(workloads())
    assume(algorithm != "triton" or not triton_unsupported(workload))
    assume(algorithm != "cascade")  # shared-prefix batches only: tests/test_cascade.py
    tiling = data.draw(tilings(workload)) if ALGORITHMS[algorithm].tiled else None
    kernels = ALGORITHMS[algorithm].kernels(workload)
    walked = walk_terms(list(walk(kernels, workload, tiling)))
    assert walked == closed_terms(algorithm, workload, tiling)


# half its neighbours' examples: each walks every access twice (the README run's slowest test)
@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), algorithm=st.sampled_from(sorted(ALGORITHMS)))
def test_walk_arrays_is_the_walk_access_by_access(data: st.DataObject, algorithm: str) -> None:
    workload = data.draw(workloads(max_n=120))
    assume(algorithm != "triton" or not triton_unsupported(workload))
    assume(algorithm != "cascade")  # a ragged launch has no array walk (tilestream.py)
    tiling = data.draw(tilings(workload)) if ALGORITHMS[algorithm].tiled else None
    kernels = ALGORITHMS[algorithm].kernels(workload)
    stream = walk_arrays(kernels, workload, tiling)
    walked = list(walk(kernels, workload, tiling))
    assert list(stream.records()) == walked
    assert len(stream) == len(walked)
    assert int(stream.bytes.sum()) == sum(a.bytes for a in walked)
    assert stream.totals() == {k: v[0] for k, v in walk_terms(walked).items()}


def test_walk_of_uneven_causal_gqa_lists_every_tile() -> None:
    """A hand-checked case: N = 5, N_kv = 3, B_r = 2, B_c = 2, causal, 2 query heads on 1 KV head.

    Bottom-right causal: query q sees keys k <= q − 2. Row blocks {0,1}, {2,3}, {4}: the first
    sees no key (skipped), the second key block 0 only, the last both key blocks (blocks.py).
    """
    w = Workload(5, n_kv=3, d=4, heads=2, kv_heads=1, causal=True, dtype="fp16")
    kernels = ALGORITHMS["flash2"].kernels(w)
    rows = [(a.tensor, a.op, a.head, a.row_start, a.row_stop)
            for a in walk(kernels, w, Tiling(2, 2, 0, "", "")) if a.head == 0 or a.tensor == "Q"]
    head0 = [(t, op, h, r0, r1) for t, op, h, r0, r1 in rows if (t, h) != ("Q", 1)]
    assert head0[:11] == [
        ("Q", "read", 0, 0, 2), ("O", "write", 0, 0, 2), ("L", "write", 0, 0, 2),
        ("Q", "read", 0, 2, 4), ("K", "read", 0, 0, 2), ("V", "read", 0, 0, 2),
        ("O", "write", 0, 2, 4), ("L", "write", 0, 2, 4),
        ("Q", "read", 0, 4, 5), ("K", "read", 0, 0, 2), ("V", "read", 0, 0, 2),
    ]
    # K and V of query head 1 are KV head 0's (GQA: h // group)
    assert {a.head for a in walk(kernels, w, Tiling(2, 2, 0, "", "")) if a.tensor == "K"} == {0}


def test_tile_access_fields_are_stable() -> None:
    """The L2 model (issue 6) consumes this record: its fields are an interface."""
    assert TileAccess.__slots__ == ("kernel", "tensor", "op", "batch", "head", "row_start",
                                    "row_stop", "cols", "element_bytes", "init", "split")


@pytest.mark.parametrize("algorithm", ["flash1", "flash2"])
@pytest.mark.parametrize("causal", [False, True])
def test_default_a100_tiling_walk_matches_closed_form_at_n_4096(algorithm: str, causal: bool) -> None:
    """The benchmark's configuration (benchmarks/walk_speed.py) at a quarter of its N."""
    hw = resolve_hardware("a100").hardware
    w = Workload(4096, d=64, causal=causal)
    sram, source = sram_budget(hw, w.element_bytes)
    tiling = tiling_for(ALGORITHMS[algorithm], w, sram, source)
    stream = walk_arrays(ALGORITHMS[algorithm].kernels(w), w, tiling)
    closed = closed_form(ALGORITHMS[algorithm].kernels(w), w, tiling)
    assert int(stream.bytes.sum()) == closed.bytes
    assert stream.totals() == {(t.kernel, t.tensor, t.op): t.elements for t in closed}


@settings(max_examples=examples(200))
@given(name=st.sampled_from(["standard", "flash1", "flash2", "splitkv"]),
       n=st.one_of(st.just(1), st.integers(1, 30)), n_kv=st.integers(1, 30),
       kv_heads=st.integers(1, 2), group=st.integers(1, 3), batch=st.integers(1, 2),
       causal=st.booleans(), pass_=st.sampled_from(["fwd", "bwd", "fwdbwd"]),
       sparsity=st.sampled_from([1.0, 0.5, 0.3, 1 / 3, 0.05]),
       blocks=st.tuples(*[st.integers(1, 9)] * 4), split_seed=st.integers(0, 10**6))
def test_walk_arrays_is_the_walk_for_split_packed_sparse_and_backward_kernels(
        name: str, n: int, n_kv: int, kv_heads: int, group: int, batch: int, causal: bool,
        pass_: str, sparsity: float, blocks: tuple[int, int, int, int], split_seed: int) -> None:
    """Issue 3's kernels: split-KV programs and per-split copies, GQA decoding with packed heads
    (n = 1), block-sparse masks, the backward's own block sizes and the GQA dK/dV group sum."""
    w = Workload(n, n_kv=n_kv, d=3, heads=kv_heads * group, kv_heads=kv_heads, batch=batch,
                 causal=causal, pass_="fwd" if name == "splitkv" else pass_,  # type: ignore[arg-type]
                 sparsity=sparsity, unfused=("scale", "mask", "dropout"))
    algorithm = get_algorithm(name)
    tiling = None
    if algorithm.tiled:
        tiling = replace(make_tiling(w, 10**9, "test", block_q=blocks[0], block_kv=blocks[1]),
                         splits=1 + split_seed % cdiv(n_kv, blocks[1]),
                         bwd_block_q=blocks[2], bwd_block_kv=blocks[3])
    kernels = algorithm.kernels(w, tiling)
    stream = walk_arrays(kernels, w, tiling)
    assert list(stream.records()) == list(walk(kernels, w, tiling))


def test_walk_arrays_packed_decode_cuts_tiles_at_query_heads() -> None:
    """GQA decode: 3 query heads per KV head packed as 3 rows; a 2-row tile spans two heads, so
    it is two accesses (FA2 seqlenq_ngroups_swapped), each one row of its query head."""
    w = Workload(1, n_kv=8, d=4, heads=3, kv_heads=1)
    tiling = replace(make_tiling(w, 10**9, "test", block_q=2, block_kv=4), splits=2)
    stream = walk_arrays(get_algorithm("splitkv").kernels(w, tiling), w, tiling)
    q_reads = [(a.head, a.row_start, a.row_stop, a.split) for a in stream.records()
               if a.tensor == "Q"]
    # programs (row block 0: heads 0, 1; row block 1: head 2) × splits 0, 1
    assert q_reads == [(0, 0, 1, 0), (1, 0, 1, 0), (0, 0, 1, 0), (1, 0, 1, 0),
                       (2, 0, 1, 0), (2, 0, 1, 0)]
    partial = [(a.head, a.split) for a in stream.records()
               if a.tensor == "O_partial" and a.op == "write"]
    assert partial == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]


def test_group_sum_writes_dk_dv_after_reading_the_whole_group() -> None:
    """The GQA sum kernel writes dK, dV of a KV head once, after reading the dK/dV_expanded of all
    its query heads (the walk issues a once-per-KV-head access with the group's last head)."""
    w = Workload(8, d=2, heads=4, kv_heads=2, pass_="bwd")
    kernels = [k for k in get_algorithm("standard").kernels(w) if k.name == "bwd_sum_dkdv"]
    order = [(a.tensor, a.op, a.head) for a in walk_arrays(kernels, w, None).records()]
    assert order == [
        ("dK_expanded", "read", 0), ("dV_expanded", "read", 0),
        ("dK_expanded", "read", 1), ("dV_expanded", "read", 1), ("dK", "write", 0), ("dV", "write", 0),
        ("dK_expanded", "read", 2), ("dV_expanded", "read", 2),
        ("dK_expanded", "read", 3), ("dV_expanded", "read", 3), ("dK", "write", 1), ("dV", "write", 1),
    ]
    assert order == [(a.tensor, a.op, a.head) for a in walk(kernels, w, None)]
