"""The block-size rules (inputs/tiling.py) on arrays equal them on one workload, and the
closed-form step-down equals the literal loop it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.errors import TilingError
from iosim.inputs.tiling import (
    TilingInputs,
    default_blocks,
    make_tiling,
    paper_blocks,
    tiles_for,
    working_set_bytes,
)
from iosim.inputs.units import DTYPE_BYTES
from iosim.inputs.workload import Workload
from tests.conftest import examples


def tiling_arrays(sram: object, d: object, elt: object, *, outer: str = "kv", block_q: object = 0,
                  block_kv: object = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tiles_for over arrays of SRAM, d and element sizes (the other inputs do not matter)."""
    sram, d, elt, block_q, block_kv = (np.asarray(v, dtype=np.int64) for v in np.broadcast_arrays(
        sram, d, elt, block_q, block_kv))
    t = tiles_for(TilingInputs(1, 1, d, 1, 1, 1, elt, sram, False, block_q, block_kv), outer)
    return (np.broadcast_to(t.block_q, sram.shape), np.broadcast_to(t.block_kv, sram.shape),
            np.broadcast_to(t.fits, sram.shape))

point = st.tuples(
    st.sampled_from([1, 2, 3, 16, 32, 64, 80, 96, 128, 192, 256, 512]),   # d
    st.sampled_from(list(DTYPE_BYTES)),                                    # dtype
    st.integers(min_value=1, max_value=400_000),                           # SRAM bytes
    st.sampled_from([0, 0, 0, 1, 7, 16, 64, 128, 333]),                   # B_r (0 = not given)
    st.sampled_from([0, 0, 0, 1, 9, 32, 64, 256, 1000]),                  # B_c (0 = not given)
)


def _scalar(d: int, dtype: str, sram: int, block_q: int, block_kv: int,
            outer: str) -> tuple[int, int, bool] | None:
    """make_tiling's blocks and whether they fit (a default rule's blocks that do not fit carry
    a fits note instead of being refused)."""
    try:
        t = make_tiling(Workload(256, d=d, dtype=dtype), sram, "test", block_q=block_q or None,
                        block_kv=block_kv or None, outer=outer)
    except TilingError:
        return None
    return t.block_q, t.block_kv, not t.fits_note


@settings(max_examples=examples(60))
@given(points=st.lists(point, min_size=1, max_size=60), outer=st.sampled_from(["kv", "q"]))
def test_vector_rule_equals_make_tiling(points: list[tuple[int, str, int, int, int]],
                                        outer: str) -> None:
    d, dtype, sram, bq, bkv = (np.array(col) for col in zip(*points, strict=True))
    elt = np.array([DTYPE_BYTES[t] for t in dtype])
    got_q, got_kv, fits = tiling_arrays(sram, d, elt, outer=outer, block_q=bq, block_kv=bkv)
    for i, p in enumerate(points):
        expected = _scalar(*p, outer=outer)
        if expected is None:
            # make_tiling refuses: the sweep marks the point instead
            assert not fits[i]
        else:
            assert (got_q[i], got_kv[i], bool(fits[i])) == expected


def _check_sram_sizes(sram: np.ndarray, outer: str) -> None:
    q, kv, fits = tiling_arrays(sram, 64, 2, outer=outer)
    for i, s in enumerate(sram.tolist()):
        assert (q[i], kv[i], bool(fits[i])) == _scalar(64, "fp16", s, 0, 0, outer)


@pytest.mark.parametrize("outer", ["kv", "q"])
def test_sram_sizes_for_d64_fp16(outer: str) -> None:
    """Every 11th size of the exhaustive run below, plus each multiple of 512 bytes and its two
    neighbours (there M/4d, M = SRAM / 2 fp16 elements, d = 64, crosses a whole number and
    Alg. 1's B_c = ⌈M/4d⌉ steps): the arrays keep Alg. 1's blocks as printed and mark an ℓ, m
    overflow, as make_tiling's fits note does."""
    steps = np.arange(1024, 40_000, 512)
    sram = np.unique(np.concatenate([np.arange(600, 40_000, 77), steps - 1, steps, steps + 1]))
    _check_sram_sizes(sram, outer)


@pytest.mark.slow
@pytest.mark.parametrize("outer", ["kv", "q"])
def test_every_sram_size_for_d64_fp16(outer: str) -> None:
    """Exhaustive over SRAM sizes (not a sample), as the test above."""
    _check_sram_sizes(np.arange(600, 40_000, 7), outer)


def test_given_blocks_that_overflow_are_kept_and_marked() -> None:
    # FlashAttention Fig. 2 shape on an A100 (163 KiB per block): B_c = 1024 with B_r = 64
    # needs (2·1024 + 2·64)·64·2 + 2·64·4 bytes, more than 166,912.
    need = working_set_bytes(64, 1024, 64, 2)
    assert need > 163 * 1024
    q, kv, fits = tiling_arrays(163 * 1024, 64, 2, outer="kv", block_kv=np.array([512, 1024]))
    assert q.tolist() == [64, 64] and kv.tolist() == [512, 1024]
    assert fits.tolist() == [True, False]


def test_sram_smaller_than_one_row_falls_back_to_1x1() -> None:
    q, kv, fits = tiling_arrays(100, 64, 2)
    assert (int(q), int(kv), bool(fits)) == (1, 1, False)


def _literal_step_down(sram: int, d: int, elt: int, outer: str) -> tuple[int, int]:
    """The rule as first written: take one row off the larger block (B_c on a tie) until fit."""
    q, kv = (max(1, b) for b in paper_blocks(sram // elt, d, outer))
    while working_set_bytes(q, kv, d, elt) > sram and (q, kv) != (1, 1):
        if kv >= q:
            kv -= 1
        else:
            q -= 1
    return q, kv


@settings(max_examples=examples(40))
@given(sram=st.lists(st.integers(1, 300_000), min_size=1, max_size=40),
       d=st.sampled_from([1, 8, 64, 128, 256]), elt=st.sampled_from([1, 2, 4]),
       outer=st.sampled_from(["kv", "q"]))
def test_bisection_step_down_equals_the_literal_loop(sram: list[int], d: int, elt: int,
                                                     outer: str) -> None:
    q, kv = default_blocks(np.array(sram), d, elt, outer)
    for i, s in enumerate(sram):
        assert (int(q[i]), int(kv[i])) == _literal_step_down(s, d, elt, outer)
        assert default_blocks(s, d, elt, outer) == _literal_step_down(s, d, elt, outer)
