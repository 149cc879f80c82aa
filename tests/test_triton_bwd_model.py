"""The loop nest of iosim's Triton backward (algorithms/triton_bwd.py): closed form = tile walk =
the executor written from the kernels (execute/triton_bwd.py), element for element, on causal,
GQA and uneven shapes with small tiles; gradients = the float64 formula; what it refuses."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosim import Workload, closed_form, get_algorithm, make_tiling, walk
from iosim.algorithms import triton_bwd as T
from iosim.errors import IosimError
from iosim.execute import ExecutorError, execute, precision, random_inputs, reference_gradients

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextmanager
def tiles(block_m1: int, block_n1: int, block_m2: int, block_n2: int) -> Iterator[None]:
    """Every head dim tiled as given (the table's d = 64 entry is the fallback)."""
    saved = dict(T.TRITON_BWD_TILES)
    T.TRITON_BWD_TILES.clear()
    T.TRITON_BWD_TILES[64] = T.BackwardTiles(block_m1, block_n1, block_m2, block_n2, 4, 3)
    try:
        yield
    finally:
        T.TRITON_BWD_TILES.clear()
        T.TRITON_BWD_TILES.update(saved)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Workload, tuple[int, int, int, int]]:
    kv_heads, group = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    w = Workload(draw(st.integers(1, 60)), d=draw(st.integers(1, 5)), heads=kv_heads * group,
                 kv_heads=kv_heads, batch=draw(st.integers(1, 2)), causal=draw(st.booleans()),
                 pass_=draw(st.sampled_from(["bwd", "fwdbwd"])))
    # the kernels need block_n1 a multiple of block_m1 and block_m2 of block_n2
    m1, n2 = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return w, (m1, m1 * draw(st.integers(1, 4)), n2 * draw(st.integers(1, 4)), n2)


def counted(w: Workload) -> tuple[Counter, Counter]:
    tiling = make_tiling(w, 10**9, "test", block_q=8, block_kv=8)
    kernels = get_algorithm("triton").kernels(w, tiling)
    closed: Counter = Counter()
    for t in closed_form(kernels, w, tiling):
        closed[(t.kernel, t.tensor, t.op, t.element_bytes)] += t.elements
    walked: Counter = Counter()
    for a in walk(kernels, w, tiling):
        walked[(a.kernel, a.tensor, a.op, a.element_bytes)] += a.elements
    return +closed, +walked


@SETTINGS
@given(case=cases())
def test_closed_form_equals_walk(case: tuple[Workload, tuple[int, int, int, int]]) -> None:
    w, t = case
    with tiles(*t):
        closed, walked = counted(w)
    assert closed == walked


@SETTINGS
@given(case=cases(), dtype=st.sampled_from(["float64", "float32"]))
def test_executor_counts_stream_and_gradients(case: tuple[Workload, tuple[int, int, int, int]],
                                              dtype: str) -> None:
    w, t = case
    x = random_inputs(w, 3, precision(dtype), grad=True)
    with tiles(*t):
        run = execute("triton", w, x, dtype=dtype, block_q=8, block_kv=8, record=True)
        tiling = make_tiling(w, 10**9, "test", block_q=8, block_kv=8)
        kernels = get_algorithm("triton").kernels(w, tiling)
        stream = list(walk(kernels, w, tiling))
        terms = closed_form(kernels, w, tiling)
    closed: Counter = Counter()
    for term in terms:
        closed[(term.kernel, term.tensor, term.op)] += term.elements
    assert run.counts == dict(+closed)

    def strip(a: object) -> tuple[object, ...]:
        return tuple(getattr(a, f) for f in ("kernel", "tensor", "op", "batch", "head",
                                             "row_start", "row_stop", "cols"))

    assert [strip(a) for a in run.log] == [strip(a) for a in stream]
    want = reference_gradients(w, x)
    for name, value in run.gradients().items():
        scale = max(1.0, float(np.abs(want[name]).max(initial=0.0)))
        assert float(np.abs(value - want[name]).max(initial=0.0)) / scale < {
            "float64": 1e-12, "float32": 1e-5}[dtype], name


def test_one_head_counted_by_hand() -> None:
    """N = 256, d = 64, tiles dkdv 64 × 128, dq 128 × 64, no mask: dkdv has T_c = 2 key blocks,
    each streaming all 256 rows of Q and dO (2·256·64 elements) and of L and D (2·256); dq has
    T_r = 2 query blocks, each streaming all of K and V."""
    w = Workload(256, d=64, pass_="bwd")
    with tiles(64, 128, 128, 64):
        terms = {(t.kernel, t.tensor, t.op): t.elements for t in
                 closed_form(get_algorithm("triton").kernels(w), w, None)}
    assert terms[("bwd_dkdv", "Q", "read")] == 2 * 256 * 64
    assert terms[("bwd_dkdv", "L", "read")] == 2 * 256
    assert terms[("bwd_dkdv", "K", "read")] == 256 * 64  # each key block once
    assert terms[("bwd_dq", "K", "read")] == 2 * 256 * 64
    assert terms[("bwd_dq", "Q", "read")] == 256 * 64
    assert terms[("bwd_dq", "dQ", "write")] == 256 * 64  # once: no fp32 accumulator in HBM
    assert ("bwd_dq", "dQaccum", "read") not in terms


@pytest.mark.parametrize(("change", "message"), [
    ({"n_kv": 50}, "self-attention only"),
    ({"sparsity": 0.5}, "no block-sparse mask"),
    ({"unfused": ("dropout",)}, "no dropout"),
])
def test_what_the_kernels_do_not_do_is_refused(change: dict, message: str) -> None:
    w = Workload(64, d=8, pass_="bwd", **change)
    with pytest.raises(IosimError, match=message):
        get_algorithm("triton").kernels(w)
    with pytest.raises(ExecutorError, match=message):
        execute("triton", w, random_inputs(w, 0, precision("float64"), grad=True))


def test_the_triton_schedule_note_is_printed_only_where_its_kernels_run() -> None:
    # the measured profile's backward schedule times iosim's own Triton backward kernels alone:
    # a comparison without them (flash2's loop nest, or SDPA's kernels under --impl) must not
    # say that it used it
    from iosim.analysis.compare import compare

    def says(**options: object) -> bool:
        result = compare(Workload(4096, d=128, heads=16, pass_="bwd"), "h200", profile="measured",
                         **options)  # type: ignore[arg-type]
        return any("Triton backward kernels are timed" in note for note in result.roofs.notes)

    assert says(algorithms=["triton"])
    assert not says(algorithms=["flash2"])
    assert not says(impl="sdpa-flash")
