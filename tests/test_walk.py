"""The tile walk: its totals equal the closed form term by term; walk_arrays equals walk."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.loopnest import TileAccess, closed_form, walk
from iosim.algorithms.tilestream import walk_arrays
from iosim.compare import sram_budget, tiling_for
from iosim.hardware import resolve_hardware
from iosim.workload import Tiling, Workload
from tests.strategies import tilings, workloads

SETTINGS = settings(max_examples=120, deadline=None,
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
    tiling = data.draw(tilings(workload)) if ALGORITHMS[algorithm].tiled else None
    kernels = ALGORITHMS[algorithm].kernels(workload)
    walked = walk_terms(list(walk(kernels, workload, tiling)))
    assert walked == closed_terms(algorithm, workload, tiling)


@SETTINGS
@given(data=st.data(), algorithm=st.sampled_from(sorted(ALGORITHMS)))
def test_walk_arrays_is_the_walk_access_by_access(data: st.DataObject, algorithm: str) -> None:
    workload = data.draw(workloads(max_n=120))
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
                                    "row_stop", "cols", "element_bytes", "init")


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
