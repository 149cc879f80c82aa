"""How the tiled algorithms cut a workload into blocks: the rules, written once over ints or arrays.

`make_tiling` sizes one workload's blocks (and refuses what does not fit, naming the parameter);
`tiles_for` applies the same rules element-wise to a sweep's int64 grids, where a point whose
blocks do not fit is marked rather than refused. Both call `default_blocks` (Alg. 1 line 1,
stepped down to fit) and `working_set_bytes`, so the scalar and the sweep path cannot disagree.
An algorithm's further choices (FlashAttention-2's backward blocks, split-KV's split count) are
its `choose_tiles`, which takes the `TilingInputs` and `Tiles` defined here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iosim.errors import TilingError, arg
from iosim.inputs.ints import Int, check_count, either, imax, imin, is_array, select
from iosim.inputs.limits import MAX_BLOCK, check_int, check_sram_bytes
from iosim.inputs.units import DTYPE_BYTES, STAT_BYTES
from iosim.inputs.workload import Workload


@dataclass(frozen=True, slots=True)
class Tiling:
    """Block sizes B_r (query rows) × B_c (key/value rows) and the SRAM budget they were sized for."""

    block_q: int
    block_kv: int
    sram_bytes: int
    sram_source: str
    """Which figure M came from: 'sram_per_block of <gpu>', '--sram', '--sram-elements'."""
    rule: str
    """How the block sizes were chosen, e.g. 'Alg. 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d)'."""
    bwd_block_q: int | None = None
    bwd_block_kv: int | None = None
    """The backward pass's B_r × B_c where it differs from the forward's (None: the same).
    FlashAttention-2's backward loops K/V-outer while its forward loops Q-outer, so Alg. 1
    line 1's rule, applied to each loop order, sizes the two passes differently."""
    bwd_rule: str = ""
    splits: int = 1
    """Split-KV (flash-decoding): each query block's key blocks are cut into this many programs."""
    splits_rule: str = ""
    """How the split count was chosen ('--splits', or flash_api.cpp's heuristic and its inputs)."""

    def sram_elements(self, dtype: str) -> int:
        """The SRAM budget M in elements of `dtype`."""
        return self.sram_bytes // DTYPE_BYTES[dtype]

    @property
    def backward_blocks(self) -> tuple[int, int]:
        """(B_r, B_c) of the backward pass's kernels."""
        return (self.bwd_block_q if self.bwd_block_q is not None else self.block_q,
                self.bwd_block_kv if self.bwd_block_kv is not None else self.block_kv)


def working_set_bytes(block_q: Int, block_kv: Int, d: Int, element_bytes: Int, *,
                      stat_bytes: Int = STAT_BYTES) -> Int:
    """Bytes of SRAM one program of a tiled forward kernel holds: the tiles Alg. 1 lines 6-8 load.

    K_j, V_j (B_c × d), Q_i, O_i (B_r × d) at `element_bytes` each, and l_i, m_i (B_r each) at
    `stat_bytes` (fp32). S_ij and P_ij (B_r × B_c) stay in registers, as in FlashAttention-2's
    kernels, and are not charged to the SRAM. Ints or arrays.
    """
    return (2 * block_kv + 2 * block_q) * d * element_bytes + 2 * block_q * stat_bytes


def paper_blocks(sram_elements: Int, d: Int, outer: str) -> tuple[Int, Int]:
    """(B_r, B_c) by Alg. 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d), M in elements.

    Algorithm 1 keeps K_j, V_j resident in its outer loop, so the resident (outer) block gets
    ⌈M/4d⌉ rows and the streamed one min(⌈M/4d⌉, d). FlashAttention-2 swaps the loops (Q_i
    resident), so the same rule applied to its loop order gives B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d).
    """
    resident = -(-sram_elements // (4 * d))
    streamed = imin(resident, d)
    return (streamed, resident) if outer == "kv" else (resident, streamed)


def _after_steps(k: Int, q0: Int, kv0: Int) -> tuple[Int, Int]:
    """The blocks after k steps of taking one row off the larger block (B_c on a tie)."""
    gap = abs(kv0 - q0)
    low = imin(q0, kv0)
    kv_larger = kv0 >= q0
    early = k <= gap  # only the larger block has shrunk
    early_q = select(kv_larger, q0, q0 - k)
    early_kv = select(kv_larger, kv0 - k, kv0)
    j = k - gap  # then both are equal, and B_c and B_r take turns (B_c first)
    return select(early, early_q, low - j // 2), select(early, early_kv, low - (j + 1) // 2)


def default_blocks(sram_bytes: Int, d: Int, element_bytes: Int, outer: str) -> tuple[Int, Int]:
    """(B_r, B_c): Alg. 1 line 1 for a loop with `outer` resident, stepped down until they fit.

    ⌈M/4d⌉ rounds up, and the fp32 statistics need room too, so the paper's blocks can overflow
    the SRAM by a little; then one row comes off the larger block (B_c on a tie) per step. The
    working set falls strictly with the steps, so the fewest steps that fit are found by
    bisection over k in [0, q0 + kv0 − 2] (1 × 1 tiles, where the steps stop; when even those
    do not fit the blocks stay 1 × 1 and `make_tiling` refuses). Ints or arrays.
    """
    q0, kv0 = paper_blocks(sram_bytes // element_bytes, d, outer)
    q0, kv0 = imax(q0, 1), imax(kv0, 1)
    if not is_array(sram_bytes, d, element_bytes):
        if working_set_bytes(q0, kv0, d, element_bytes) <= sram_bytes:
            return q0, kv0
        q, kv = default_blocks(np.asarray(sram_bytes), np.asarray(d), np.asarray(element_bytes),
                               outer)
        return int(q), int(kv)
    q0, kv0 = (np.asarray(v, dtype=np.int64) for v in np.broadcast_arrays(q0, kv0))
    lo = np.zeros_like(q0)
    hi = q0 + kv0 - 2
    while (lo < hi).any():
        mid = (lo + hi) // 2
        ok = working_set_bytes(*_after_steps(mid, q0, kv0), d, element_bytes) <= sram_bytes
        hi = np.where(ok, mid, hi)
        lo = np.where(ok | (lo >= hi), lo, mid + 1)
    return _after_steps(lo, q0, kv0)


@dataclass(frozen=True, slots=True)
class TilingInputs:
    """What the tiling rules read about a workload, GPU and request: ints or arrays.

    0 means "not given" for the given block sizes and split count, and "unknown" for sm_count.
    """

    n: Int
    n_kv: Int
    d: Int
    heads: Int
    kv_heads: Int
    batch: Int
    element_bytes: Int
    sram_bytes: Int
    backward: Int
    """Whether the pass runs a backward (bool or bool array)."""
    block_q: Int = 0
    block_kv: Int = 0
    splits: Int = 0
    sm_count: Int = 0

    @classmethod
    def of(cls, workload: Workload, sram_bytes: int, *, block_q: int | None = None,
           block_kv: int | None = None, splits: int | None = None,
           sm_count: int | None = None) -> TilingInputs:
        """One workload's inputs (None → 0: not given, or unknown)."""
        w = workload
        return cls(w.n, w.n_kv, w.d, w.heads, w.kv_heads, w.batch, w.element_bytes, sram_bytes,
                   w.pass_ != "fwd", block_q or 0, block_kv or 0, splits or 0, sm_count or 0)

    @property
    def blocks_given(self) -> Int:
        """Whether the user gave a block size (either one)."""
        return either(self.block_q > 0, self.block_kv > 0)


@dataclass(frozen=True, slots=True)
class Tiles:
    """An algorithm's blocks, as ints or arrays: what `Tiling` holds, without the rule texts."""

    block_q: Int
    block_kv: Int
    fits: Int
    """Whether the forward's tiles fit the SRAM (bool or bool array)."""
    bwd_block_q: Int = None
    """The backward's blocks where a rule sizes them apart from the forward's (else None)."""
    bwd_block_kv: Int = None
    splits: Int = 1


def tiles_for(inputs: TilingInputs, outer: str) -> Tiles:
    """The forward's (B_r, B_c): each given size as given, the others by `default_blocks`.

    With one size given the other is Alg. 1 line 1's, not stepped down (the user's block is
    what must fit). `fits` says whether the working set fits the SRAM.
    """
    p = inputs
    stepped_q, stepped_kv = default_blocks(p.sram_bytes, p.d, p.element_bytes, outer)
    paper_q, paper_kv = paper_blocks(p.sram_bytes // p.element_bytes, p.d, outer)
    given = p.blocks_given
    block_q = select(p.block_q > 0, p.block_q, select(given, imax(paper_q, 1), stepped_q))
    block_kv = select(p.block_kv > 0, p.block_kv, select(given, imax(paper_kv, 1), stepped_kv))
    fits = working_set_bytes(block_q, block_kv, p.d, p.element_bytes) <= p.sram_bytes
    return Tiles(block_q, block_kv, fits)


def default_rule(sram_bytes: int, d: int, element_bytes: int, outer: str,
                 chosen: tuple[int, int]) -> str:
    """How `default_blocks` chose `chosen` = (B_r, B_c), in words (one workload)."""
    rule = ("Alg. 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d)" if outer == "kv" else
            "Alg. 1 line 1 for a Q-outer loop: B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d)")
    paper = paper_blocks(sram_bytes // element_bytes, d, outer)
    if chosen != paper:
        rule += f" = {paper[0]} × {paper[1]}, stepped down to fit the SRAM"
    return rule


def make_tiling(
    workload: Workload,
    sram_bytes: int,
    sram_source: str,
    *,
    block_q: int | None = None,
    block_kv: int | None = None,
    outer: str = "kv",
) -> Tiling:
    """Block sizes for one workload: Alg. 1's rule by default, or the given ones (rows).

    `sram_bytes` is the budget M in bytes and `sram_source` where it came from; `outer` is the
    algorithm's outer-loop axis ("kv" for Algorithm 1, "q" for FlashAttention-2). Raises
    TilingError, naming block_q/block_kv or sram, when the tiles cannot fit.
    """
    d, elt = workload.d, workload.element_bytes
    smallest = working_set_bytes(1, 1, d, elt)
    if sram_bytes < smallest:
        raise TilingError(
            f"d = {d} does not fit in the SRAM: even 1-row tiles of Q, K, V, O need {smallest:,} "
            f"bytes and the SRAM ({sram_source}) holds {sram_bytes:,}; lower {arg('d')} or raise "
            f"{arg('sram')}")
    for name, value in (("block_q", block_q), ("block_kv", block_kv)):
        if value is not None:
            check_count(name, value, TilingError)
            check_int(name, value, high=MAX_BLOCK, error=TilingError)
    check_sram_bytes("sram", sram_bytes)
    inputs = TilingInputs.of(workload, sram_bytes, block_q=block_q, block_kv=block_kv)
    tiles = tiles_for(inputs, outer)
    chosen_q, chosen_kv = int(tiles.block_q), int(tiles.block_kv)
    if block_q is None and block_kv is None:
        rule = default_rule(sram_bytes, d, elt, outer, (chosen_q, chosen_kv))
    else:
        rule = "given" if block_q is not None and block_kv is not None else (
            "given; the other from Alg. 1 line 1")
        if not tiles.fits:
            need = working_set_bytes(chosen_q, chosen_kv, d, elt)
            raise TilingError(
                f"blocks B_r = {chosen_q}, B_c = {chosen_kv} do not fit: Q_i, O_i "
                f"({chosen_q}×{d}) + K_j, V_j ({chosen_kv}×{d}) in {workload.dtype} + l_i, m_i "
                f"need {need:,} bytes, the SRAM ({sram_source}) holds {sram_bytes:,}; "
                f"use smaller {arg('block_q')}/{arg('block_kv')} or a larger {arg('sram')}",
                param="block_q" if block_q is not None else "block_kv")
    return Tiling(chosen_q, chosen_kv, sram_bytes, sram_source, rule)
