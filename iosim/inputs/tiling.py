"""How the tiled algorithms cut a workload into blocks: the rules, written once over ints or arrays.

`make_tiling` sizes one workload's blocks (and refuses what does not fit, naming the parameter);
`tiles_for` applies the same rules element-wise to a sweep's int64 grids, where a point whose
blocks do not fit is marked rather than refused. Both call `default_blocks` (Alg. 1 line 1,
stepped down to fit) and `working_set_bytes`, so the scalar and the sweep path cannot disagree.
An algorithm's further choices (FlashAttention-2's backward blocks, split-KV's split count) are
its `choose_tiles`, which takes the `TilingInputs` and `Tiles` defined here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from iosim.errors import TilingError, arg
from iosim.estimates.occupancy import SmLimits, programs_per_sm, sm_limits
from iosim.inputs.api_values import check_choice, check_instance, check_int
from iosim.inputs.excerpts import excerpt
from iosim.inputs.implementations import Implementation, dtype_code
from iosim.inputs.ints import Int, both, either, imax, imin, is_array, select
from iosim.inputs.limits import (
    MAX_LENGTH,
    MAX_PROGRAMS_PER_SM,
    MAX_SRAM_BYTES,
    check_block,
    check_sram_bytes,
)
from iosim.inputs.units import DTYPE_BYTES, STAT_BYTES
from iosim.inputs.workload import WORKLOAD_EXAMPLE, Workload
from iosim.record import Record

if TYPE_CHECKING:
    from iosim.inputs.code_tiles import CodeTiles

TILE_RULES = ("code", "alg1")
"""--tiles: the implementation's tile tables (FlashAttention-2's code by default), or Alg. 1."""

MAX_COMPUTE_CAPABILITY = 999
"""make_tiling's `cc` is a compute capability × 10 (80, 90, 100; 0 = unknown): three digits
hold every one NVIDIA has named."""


class Tiling(Record):
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
    programs_per_sm: int = 1
    bwd_programs_per_sm: int = 1
    """Programs one SM holds at once, forward and backward (estimates/occupancy.py)."""
    occupancy_rule: str = ""
    """What set the programs per SM (the tiles' shared memory, warps, registers)."""
    fits_note: str = ""
    """The separate fits check of a default rule: what it found when the rule's blocks,
    with everything the program holds, exceed the SRAM ('' when they fit)."""

    def __post_init__(self) -> None:
        # A Tiling built in Python meets make_tiling's bounds (one input boundary, as Hardware
        # does): Tiling(-1, 64, ...) gave closed_form -268,169,216 bytes, a NaN SRAM or a
        # block of 1.5 rows were counted, and a block of 0 was a ZeroDivisionError.
        for name in ("block_q", "block_kv", "bwd_block_q", "bwd_block_kv"):
            value = getattr(self, name)
            if value is not None or name in ("block_q", "block_kv"):  # Alg. 1's rule may size
                check_int(name, value, high=MAX_SRAM_BYTES,  # a block past MAX_BLOCK: < 2^38
                          what="rows of a block sized to an SRAM of at most 1 TiB",  # rows
                          error=TilingError)
        check_int("sram_bytes", self.sram_bytes, low=0, high=MAX_SRAM_BYTES,  # 0: blocks
                  error=TilingError)  # given, no budget they were sized for (tests/strategies)
        check_int("splits", self.splits, high=MAX_LENGTH, error=TilingError)
        for name in ("programs_per_sm", "bwd_programs_per_sm"):
            check_int(name, getattr(self, name), high=MAX_PROGRAMS_PER_SM,
                      what="CUDA's resident blocks per SM", error=TilingError)
        for name in ("sram_source", "rule", "bwd_rule", "splits_rule", "occupancy_rule",
                     "fits_note"):
            if not isinstance(getattr(self, name), str):
                raise TilingError(f"{arg(name)} must be text, got {excerpt(getattr(self, name))}")

    def sram_elements(self, dtype: str) -> int:
        """The SRAM budget M in elements of `dtype`."""
        return self.sram_bytes // DTYPE_BYTES[dtype]

    @property
    def backward_blocks(self) -> tuple[int, int]:
        """(B_r, B_c) of the backward pass's kernels."""
        return (self.bwd_block_q if self.bwd_block_q is not None else self.block_q,
                self.bwd_block_kv if self.bwd_block_kv is not None else self.block_kv)


def working_set_bytes(block_q: Int, block_kv: Int, d: Int, element_bytes: Int, *,
                      stat_bytes: Int = STAT_BYTES, d_v: Int = None, v_in_k: Int = False) -> Int:
    """Bytes of SRAM one program of a tiled forward kernel holds: the tiles Alg. 1 lines 6-8 load.

    K_j (B_c × d), V_j (B_c × d_v), Q_i (B_r × d), O_i (B_r × d_v) at `element_bytes` each, and
    l_i, m_i (B_r each) at `stat_bytes` (fp32); d_v = V's head dim (None: d, the paper's
    (2B_c + 2B_r)·d). S_ij and P_ij (B_r × B_c) stay in registers, as in FlashAttention-2's
    kernels, and are not charged to the SRAM. `v_in_k` (MLA's latent cache): V_j is the first
    d_v columns of K_j, no tile of its own. Ints or arrays.
    """
    width = 2 * d if d_v is None else d + d_v
    v_tile = block_kv * (d if d_v is None else d_v)
    own_v = select(v_in_k, 0, v_tile) if is_array(v_in_k) else (0 if v_in_k else v_tile)
    return ((block_kv + block_q) * width - v_tile + own_v) * element_bytes \
        + 2 * block_q * stat_bytes


def paper_blocks(sram_elements: Int, d: Int, outer: str, d_v: Int = None) -> tuple[Int, Int]:
    """(B_r, B_c) by Alg. 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d), M in elements.

    Algorithm 1 keeps K_j, V_j resident in its outer loop, so the resident (outer) block gets
    ⌈M/4d⌉ rows and the streamed one min(⌈M/4d⌉, d). FlashAttention-2 swaps the loops (Q_i
    resident), so the same rule applied to its loop order gives B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d).

    When V's head dim d_v differs from d (MLA, issue 14), the paper's 4d — one row of each of
    the four tiles Q_i, K_j, V_j, O_i of width d that must fit in M (proof of Theorem 2,
    arXiv 2205.14135 App. C: "K_j, V_j ... B_c d = O(M)", "Q_i, O_i ... B_r d = O(M)") — becomes
    the same four rows at their own widths, 2(d + d_v): B_c = ⌈M/2(d + d_v)⌉; the streamed
    block keeps min(·, d), d being the Q·K dim of S_ij = Q_i K_jᵀ. With d_v = d both are the
    paper's rule, to the element.
    """
    four_rows = 4 * d if d_v is None else 2 * (d + d_v)
    resident = -(-sram_elements // four_rows)
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


def default_blocks(sram_bytes: Int, d: Int, element_bytes: Int, outer: str,
                   d_v: Int = None, v_in_k: Int = False) -> tuple[Int, Int]:
    """(B_r, B_c): Alg. 1 line 1 for a loop with `outer` resident, stepped down until they fit.

    ⌈M/4d⌉ rounds up, and the fp32 statistics need room too, so the paper's blocks can overflow
    the SRAM by a little; then one row comes off the larger block (B_c on a tie) per step. The
    working set falls strictly with the steps, so the fewest steps that fit are found by
    bisection over k in [0, q0 + kv0 − 2] (1 × 1 tiles, where the steps stop; when even those
    do not fit the blocks stay 1 × 1 and `make_tiling` refuses). `d_v`: V's head dim (None:
    d). Ints or arrays.
    """
    q0, kv0 = paper_blocks(sram_bytes // element_bytes, d, outer, d_v)
    q0, kv0 = imax(q0, 1), imax(kv0, 1)
    if not is_array(sram_bytes, d, element_bytes, d_v, v_in_k):
        if working_set_bytes(q0, kv0, d, element_bytes, d_v=d_v, v_in_k=v_in_k) <= sram_bytes:
            return q0, kv0
        q, kv = default_blocks(np.asarray(sram_bytes), np.asarray(d), np.asarray(element_bytes),
                               outer, None if d_v is None else np.asarray(d_v),
                               np.asarray(v_in_k))
        return int(q), int(kv)
    q0, kv0 = (np.asarray(v, dtype=np.int64) for v in np.broadcast_arrays(q0, kv0))
    lo = np.zeros_like(q0)
    hi = q0 + kv0 - 2
    while (lo < hi).any():
        mid = (lo + hi) // 2
        ok = working_set_bytes(*_after_steps(mid, q0, kv0), d, element_bytes,
                               d_v=d_v, v_in_k=v_in_k) <= sram_bytes
        hi = np.where(ok, mid, hi)
        lo = np.where(ok | (lo >= hi), lo, mid + 1)
    return _after_steps(lo, q0, kv0)


class TilingInputs(Record):
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
    causal: Int = False
    dtype: Int = 0
    """implementations.dtype_code of the dtype (tile tables may depend on it)."""
    cc: Int = 0
    """The GPU's compute capability as an int (80), 0 when unknown."""
    sram_per_sm: Int = 0
    """Shared memory per SM in bytes (0: unknown, then the per-block budget)."""
    tile_rule: str = "code"
    """"code": the implementation's tile table where it has one; "alg1": Alg. 1 line 1."""
    impl: Implementation | None = None
    """The implementation whose tables apply (None: each algorithm's default)."""
    masked: Int = False
    """A sliding window or packed sequences (Workload.masked): no head packing (splitkv.py)."""
    varlen: tuple[int, ...] | None = None
    """Packed sequences run as FA2 varlen (Workload.seqlens with packing "varlen"): the split
    heuristic counts sequences × ⌈max_seqlen/B⌉ query blocks (splitkv.py)."""
    d_v: Int = 0
    """V's head dim (0: d)."""
    latent_kv: Int = False
    """MLA's latent cache: V_j is part of K_j in SRAM (bool or bool array)."""
    prefix_len: Int = 0
    """A shared-prefix batch's prefix tokens (0: none), which cascade's kernels split."""

    @property
    def dv(self) -> Int:
        """V's head dim d_v (d where not given)."""
        return select(np.asarray(self.d_v) > 0, self.d_v, self.d) if is_array(self.d_v) else (
            self.d_v or self.d)

    @classmethod
    def of(cls, workload: Workload, sram_bytes: int, *, block_q: int | None = None,
           block_kv: int | None = None, splits: int | None = None,
           sm_count: int | None = None, cc: int = 0, sram_per_sm: int = 0,
           tile_rule: str = "code", impl: Implementation | None = None) -> TilingInputs:
        """One workload's inputs (None → 0: not given, or unknown)."""
        w = workload
        return cls(w.n, w.n_kv, w.d, w.heads, w.kv_heads, w.batch, w.element_bytes, sram_bytes,
                   w.pass_ != "fwd", block_q or 0, block_kv or 0, splits or 0, sm_count or 0,
                   w.causal, dtype_code(w.dtype), cc, sram_per_sm, tile_rule, impl,
                   masked=w.masked, varlen=w.seqlens if w.packing == "varlen" else None,
                   d_v=w.d_v, latent_kv=w.latent_kv, prefix_len=w.prefix_len or 0)

    @property
    def limits(self) -> SmLimits:
        """The SM's limits (shared memory, threads, blocks), ints or arrays."""
        per_sm = select(np.asarray(self.sram_per_sm) > 0, self.sram_per_sm, self.sram_bytes)
        return sm_limits(per_sm, self.cc)

    @property
    def blocks_given(self) -> Int:
        """Whether the user gave a block size (either one)."""
        return either(self.block_q > 0, self.block_kv > 0)


class Tiles(Record):
    """An algorithm's blocks, as ints or arrays: what `Tiling` holds, without the rule texts."""

    block_q: Int
    block_kv: Int
    fits: Int
    """Whether the forward's tiles fit the SRAM (bool or bool array)."""
    bwd_block_q: Int = None
    """The backward's blocks where a rule sizes them apart from the forward's (else None)."""
    bwd_block_kv: Int = None
    splits: Int = 1
    per_sm: Int = 1
    """Programs per SM of the forward's kernels (estimates/occupancy.py)."""
    bwd_per_sm: Int = 1
    code: Any = False
    """Whether the forward's blocks came from an implementation's tile table."""


ASSUMED_WARPS = 4
"""Warps of a program whose blocks come from Alg. 1's rule (no code to read them from): the
4 warps FlashAttention's kernels use for most head dims (flash_fwd_launch_template.h)."""


def tiles_for(inputs: TilingInputs, outer: str, code: CodeTiles | None = None) -> Tiles:
    """The forward's (B_r, B_c): each given size as given; else the implementation's tile
    table (`code`, where it has a row for the point) or Alg. 1 line 1 as printed.

    With one size given the other is Alg. 1 line 1's. `fits` says whether the program's
    shared memory (the table's rule) or Alg. 1's working set fits the SRAM; Alg. 1's blocks
    are not stepped down when ℓ and m overflow it (the paper's rule does not count them):
    the fits check says so instead (`fits_note`).
    """
    p = inputs
    paper_q, paper_kv = paper_blocks(p.sram_bytes // p.element_bytes, p.d, outer, p.dv)
    paper_q, paper_kv = imax(paper_q, 1), imax(paper_kv, 1)
    given = p.blocks_given
    use_code: Any = False if code is None else both(
        both(np.logical_not(given), code.found), code.shared_bytes <= p.sram_bytes)
    # the code's tiles where its table has a row for the point and they fit the SRAM; else
    # Alg. 1 line 1 (a GPU or --sram the implementation was not written for)
    if code is not None and not is_array(use_code):
        use_code = bool(use_code)
    block_q = select(p.block_q > 0, p.block_q, select(use_code, code.block_q if code else 0,
                                                      paper_q))
    block_kv = select(p.block_kv > 0, p.block_kv, select(use_code, code.block_kv if code else 0,
                                                         paper_kv))
    own = working_set_bytes(block_q, block_kv, p.d, p.element_bytes, d_v=p.dv,
                            v_in_k=p.latent_kv)
    shared = own if code is None else select(use_code, code.shared_bytes, own)
    fits = shared <= p.sram_bytes
    warps = ASSUMED_WARPS if code is None else select(use_code, code.warps, ASSUMED_WARPS)
    regs = 0 if code is None else select(use_code, code.registers_per_thread, 0)
    per_sm = programs_per_sm(p.limits, shared_bytes=shared, warps=warps,
                             registers_per_thread=regs)
    return Tiles(block_q, block_kv, fits, per_sm=per_sm, bwd_per_sm=per_sm, code=use_code)


def default_rule(sram_bytes: int, d: int, element_bytes: int, outer: str,
                 chosen: tuple[int, int], d_v: int | None = None) -> str:
    """How Alg. 1 line 1 chose `chosen` = (B_r, B_c), in words (one workload)."""
    rows = "4d" if d_v is None or d_v == d else "2(d+d_v)"
    rule = (f"Alg. 1 line 1: B_c = ⌈M/{rows}⌉, B_r = min(⌈M/{rows}⌉, d)" if outer == "kv" else
            f"Alg. 1 line 1 for a Q-outer loop: B_r = ⌈M/{rows}⌉, B_c = min(⌈M/{rows}⌉, d)")
    paper = paper_blocks(sram_bytes // element_bytes, d, outer, d_v)
    if chosen != (max(paper[0], 1), max(paper[1], 1)):
        rule += f" = {paper[0]} × {paper[1]}, stepped down to fit the SRAM"
    return rule


def fits_note(block_q: int, block_kv: int, sram_bytes: int, sram_source: str, d: int,
              element_bytes: int, outer: str, d_v: int | None = None,
              v_in_k: bool = False) -> str:
    """The fits check of Alg. 1's blocks: '' when Q_i, K_j, V_j, O_i and ℓ_i, m_i fit, else what
    they need and the blocks, stepped down one row at a time, that would fit."""
    need = working_set_bytes(block_q, block_kv, d, element_bytes, d_v=d_v, v_in_k=v_in_k)
    if need <= sram_bytes:
        return ""
    q, kv = default_blocks(sram_bytes, d, element_bytes, outer, d_v, v_in_k)
    return (f"fits check: {block_q} × {block_kv} tiles with fp32 ℓ_i, m_i need {need:,} B, "
            f"{need - sram_bytes:,} B more than the SRAM ({sram_source}); the paper's rule "
            f"does not count ℓ and m — {q} × {kv} would fit (--block-q {q} --block-kv {kv})")


def _check_tiling_options(sram_source: object, code_for: object, tile_rule: object,
                          impl: object) -> None:
    """make_tiling's options are what compare passes; from the Python API each was taken
    unchecked (tile_rule="no" gave Alg. 1's tiles, sram_source=None printed "None", code_for=3
    was a TypeError)."""
    if not isinstance(sram_source, str):
        raise TilingError(f"{arg('sram_source')} must be a str saying where the SRAM size came "
                          f"from (e.g. 'sram_per_block of h100'), got {excerpt(sram_source)}")
    if code_for is not None and not callable(code_for):
        raise TilingError(f"{arg('code_for')} must be a function of the TilingInputs (an "
                          f"algorithm's code_tiles) or None, got {excerpt(code_for)}")
    check_choice("tile_rule", tile_rule, TILE_RULES, what="tile rule", error=TilingError)
    if impl is not None and not isinstance(impl, Implementation):
        raise TilingError(f"{arg('impl')} must be an Implementation (from iosim.inputs."
                          f"implementations_yaml.get_implementation) or None, got "
                          f"{excerpt(impl)}")


def make_tiling(
    workload: Workload,
    sram_bytes: int,
    sram_source: str,
    *,
    block_q: int | None = None,
    block_kv: int | None = None,
    outer: str = "kv",
    code_for: Callable[[TilingInputs], CodeTiles | None] | None = None,
    cc: int = 0,
    sram_per_sm: int = 0,
    tile_rule: str = "code",
    impl: Implementation | None = None,
) -> Tiling:
    """Block sizes for one workload: the implementation's tile table (`code_for` gives it, for
    algorithms that have one), Alg. 1's rule, or the given ones (rows).

    `sram_bytes` is the budget M in bytes and `sram_source` where it came from; `outer` is the
    algorithm's outer-loop axis ("kv" for Algorithm 1, "q" for FlashAttention-2). Raises
    TilingError, naming block_q/block_kv or sram, when the tiles cannot fit.
    """
    check_instance("workload", workload, Workload, WORKLOAD_EXAMPLE)
    sram_bytes = check_int("sram_bytes", sram_bytes, high=MAX_SRAM_BYTES, error=TilingError)
    check_choice("outer", outer, ("kv", "q"), what="outer loop", error=TilingError)
    _check_tiling_options(sram_source, code_for, tile_rule, impl)
    cc = check_int("cc", cc, low=0, high=MAX_COMPUTE_CAPABILITY, what="a compute capability × 10",
                   error=TilingError)
    sram_per_sm = check_int("sram_per_sm", sram_per_sm, low=0, high=MAX_SRAM_BYTES,
                            what="bytes of shared memory per SM", error=TilingError)
    d, elt, d_v = workload.d, workload.element_bytes, workload.d_v
    latent = workload.latent_kv
    smallest = working_set_bytes(1, 1, d, elt, d_v=d_v, v_in_k=latent)
    if sram_bytes < smallest:
        raise TilingError(
            f"d = {d} does not fit in the SRAM: even 1-row tiles of Q, K, V, O need {smallest:,} "
            f"bytes and the SRAM ({sram_source}) holds {sram_bytes:,}; lower {arg('d')} or raise "
            f"{arg('sram')}")
    for name, value in (("block_q", block_q), ("block_kv", block_kv)):
        if value is not None:
            check_block(name, value, error=TilingError)
    check_sram_bytes("sram", sram_bytes)
    inputs = TilingInputs.of(workload, sram_bytes, block_q=block_q, block_kv=block_kv, cc=cc,
                             sram_per_sm=sram_per_sm, tile_rule=tile_rule, impl=impl)
    code = code_for(inputs) if code_for is not None else None
    tiles = tiles_for(inputs, outer, code)
    chosen_q, chosen_kv = int(tiles.block_q), int(tiles.block_kv)
    note = ""
    if block_q is None and block_kv is None:
        if tiles.code and code is not None:
            rule = f"the code's tiles for d = {d}: {str(code.source).split(';')[0]}"
        else:
            rule = default_rule(sram_bytes, d, elt, outer, (chosen_q, chosen_kv), d_v)
            if code is not None:
                rule += (f" (the code's tiles for d = {d} do not fit the SRAM)" if code.found
                         else f" (no tile-table row for d = {d})")
            note = fits_note(chosen_q, chosen_kv, sram_bytes, sram_source, d, elt, outer, d_v,
                             latent)
    else:
        rule = "given" if block_q is not None and block_kv is not None else (
            "given; the other from Alg. 1 line 1")
        if not tiles.fits:
            need = working_set_bytes(chosen_q, chosen_kv, d, elt, d_v=d_v, v_in_k=latent)
            held = (f"Q_i, O_i ({chosen_q}×{d}) + K_j, V_j ({chosen_kv}×{d})" if d_v == d else
                    f"Q_i ({chosen_q}×{d}), O_i ({chosen_q}×{d_v}) + K_j ({chosen_kv}×{d}), "
                    f"V_j ({chosen_kv}×{d_v})")
            raise TilingError(
                f"blocks B_r = {chosen_q}, B_c = {chosen_kv} do not fit: "
                f"{held} in {workload.dtype} + l_i, m_i "
                f"need {need:,} bytes, the SRAM ({sram_source}) holds {sram_bytes:,}; "
                f"use smaller {arg('block_q')}/{arg('block_kv')} or a larger {arg('sram')}",
                param="block_q" if block_q is not None else "block_kv")
    per_sm = int(tiles.per_sm)
    return Tiling(chosen_q, chosen_kv, sram_bytes, sram_source, rule,
                  programs_per_sm=per_sm, bwd_programs_per_sm=per_sm, fits_note=note)
