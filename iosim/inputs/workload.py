"""What attention is asked to do (Workload) and how the tiled algorithms cut it (Tiling)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from iosim.errors import TilingError, WorkloadError
from iosim.inputs import limits
from iosim.inputs.limits import MAX_LENGTH
from iosim.inputs.units import DTYPE_BYTES, STAT_BYTES

Pass = Literal["fwd", "bwd", "fwdbwd"]
PASSES: tuple[str, ...] = ("fwd", "bwd", "fwdbwd")
UNFUSED_OPS: tuple[str, ...] = ("scale", "mask", "dropout")
"""Extra N×N elementwise kernels of an unfused standard pipeline (FlashAttention fuses them)."""


@dataclass(frozen=True, slots=True)
class Workload:
    """One attention call: batch × query heads of (n × n_kv) attention with head dimension d.

    Causal masking is bottom-right aligned when n != n_kv (query i sees keys j <= i + n_kv - n),
    as in FlashAttention-2 since v2.1, so decoding (n = 1) sees every key.
    """

    n: int
    n_kv: int | None = None
    d: int = 64
    heads: int = 1
    kv_heads: int | None = None
    batch: int = 1
    dtype: str = "fp16"
    causal: bool = False
    pass_: Pass = "fwd"
    unfused: tuple[str, ...] = ()
    sparsity: float = 1.0
    """Block-sparse FlashAttention (Prop. 4): the fraction s of non-zero blocks, 0 < s <= 1.
    Tiled kernels visit only the blocks of the mask in iosim/algorithms/blockmask.py; standard
    attention stays dense."""

    def __post_init__(self) -> None:
        for name in ("n", "d", "heads", "batch"):
            _check_positive_int(name, getattr(self, name))
        if self.n_kv is None:
            object.__setattr__(self, "n_kv", self.n)
        _check_positive_int("n_kv", self.n_kv)
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        _check_positive_int("kv_heads", self.kv_heads)
        for name, high in (("n", MAX_LENGTH), ("n_kv", MAX_LENGTH), ("d", limits.MAX_HEAD_DIM),
                           ("heads", limits.MAX_HEADS), ("kv_heads", limits.MAX_HEADS),
                           ("batch", limits.MAX_BATCH)):
            limits.check_int("--" + name.replace("_", "-"), getattr(self, name), high=high,
                             error=WorkloadError)
        limits.check_workload_size(self.n, self.seq_kv, self.d, self.batch, self.heads,
                                   error=WorkloadError)
        if self.heads % self.heads_kv:
            raise WorkloadError(
                f"--kv-heads {self.kv_heads} does not divide --heads {self.heads}; GQA/MQA "
                f"needs heads = groups × kv-heads (e.g. --kv-heads "
                f"{_a_divisor(self.heads, self.heads_kv)})"
            )
        if self.dtype not in DTYPE_BYTES:
            raise WorkloadError(f"unknown dtype '{self.dtype}'; use one of {', '.join(DTYPE_BYTES)}")
        if self.pass_ not in PASSES:
            raise WorkloadError(f"unknown pass '{self.pass_}'; use one of {', '.join(PASSES)}")
        bad = [op for op in self.unfused if op not in UNFUSED_OPS]
        if bad:
            raise WorkloadError(f"unknown unfused op '{bad[0]}'; use any of {', '.join(UNFUSED_OPS)}")
        object.__setattr__(self, "unfused", tuple(op for op in UNFUSED_OPS if op in self.unfused))
        if (isinstance(self.sparsity, bool) or not isinstance(self.sparsity, (int, float))
                or not 0 < self.sparsity <= 1):
            raise WorkloadError(f"--sparsity must be a fraction of non-zero blocks in (0, 1], got "
                                f"{limits.excerpt(self.sparsity)}; e.g. --sparsity 0.25")
        object.__setattr__(self, "sparsity", float(self.sparsity))

    @property
    def seq_kv(self) -> int:
        assert self.n_kv is not None
        return self.n_kv

    @property
    def heads_kv(self) -> int:
        assert self.kv_heads is not None
        return self.kv_heads

    @property
    def sparsity_fraction(self) -> tuple[int, int]:
        """s as a fraction p/q (q <= 10^6) so that block-mask counts are exact integers."""
        f = Fraction(self.sparsity).limit_denominator(10**6)
        return f.numerator, f.denominator

    @property
    def element_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def group_size(self) -> int:
        """Query heads per KV head (1 = MHA, heads = MQA)."""
        return self.heads // self.heads_kv

    def describe(self) -> str:
        kv = f" (kv {self.seq_kv})" if self.seq_kv != self.n else ""
        heads = f"{self.heads} heads" + (f" / {self.heads_kv} kv" if self.heads_kv != self.heads else "")
        mask = "causal" if self.causal else "non-causal"
        sparse = f", block-sparse s = {self.sparsity:g}" if self.sparsity != 1 else ""
        return (f"batch {self.batch} × {heads}, N {self.n}{kv}, d {self.d}, {self.dtype}, "
                f"{_PASS_NAMES[self.pass_]}, {mask}{sparse}")

    def with_(self, **changes: object) -> Workload:
        return replace(self, **changes)  # type: ignore[arg-type]


_PASS_NAMES = {"fwd": "forward", "bwd": "backward", "fwdbwd": "forward+backward"}


def _check_positive_int(name: str, value: object) -> None:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"{flag} must be a whole number, got {value!r}")
    if value < 1:
        raise WorkloadError(f"{flag} must be at least 1, got {value}")


def _a_divisor(heads: int, near: int) -> int:
    small = [k for k in range(1, math.isqrt(heads) + 1) if heads % k == 0]
    divisors = small + [heads // k for k in small]
    return min(divisors, key=lambda k: (abs(k - near), k))


# ---------------------------------------------------------------------------------------------
# Tiling


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
        return self.sram_bytes // DTYPE_BYTES[dtype]

    @property
    def backward_blocks(self) -> tuple[int, int]:
        """(B_r, B_c) of the backward pass's kernels."""
        return (self.bwd_block_q if self.bwd_block_q is not None else self.block_q,
                self.bwd_block_kv if self.bwd_block_kv is not None else self.block_kv)


def working_set_bytes(block_q: int, block_kv: int, d: int, element_bytes: int) -> int:
    """SRAM one program of a tiled kernel holds: the tiles Alg. 1 lines 6 and 8 load.

    K_j, V_j (B_c × d), Q_i, O_i (B_r × d) in the input dtype, and l_i, m_i (B_r each) in fp32.
    S_ij and P_ij (B_r × B_c) stay in registers, as in FlashAttention-2's kernels, and are not
    charged to the SRAM.
    """
    return (2 * block_kv + 2 * block_q) * d * element_bytes + 2 * block_q * STAT_BYTES


def _paper_blocks(sram_elements: int, d: int, outer: str) -> tuple[int, int]:
    """(B_r, B_c) by Alg. 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d).

    Algorithm 1 keeps K_j, V_j resident in its outer loop, so the resident (outer) block gets
    ⌈M/4d⌉ rows and the streamed one min(⌈M/4d⌉, d). FlashAttention-2 swaps the loops (Q_i
    resident), so the same rule applied to its loop order gives B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d).
    """
    resident = -(-sram_elements // (4 * d))
    streamed = min(resident, d)
    return (streamed, resident) if outer == "kv" else (resident, streamed)


def make_tiling(
    workload: Workload,
    sram_bytes: int,
    sram_source: str,
    *,
    block_q: int | None = None,
    block_kv: int | None = None,
    outer: str = "kv",
) -> Tiling:
    """Block sizes for a workload: Alg. 1's rule by default, or the user's, checked against SRAM.

    `outer` is the algorithm's outer-loop axis ("kv" for Algorithm 1, "q" for FlashAttention-2).
    """
    d, elt = workload.d, workload.element_bytes
    m = sram_bytes // elt
    smallest = working_set_bytes(1, 1, d, elt)
    if sram_bytes < smallest:
        raise TilingError(
            f"d = {d} does not fit in the SRAM: even 1-row tiles of Q, K, V, O need {smallest:,} "
            f"bytes and the SRAM ({sram_source}) holds {sram_bytes:,}; lower --d or raise --sram"
        )
    for flag, value in (("--block-q", block_q), ("--block-kv", block_kv)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise TilingError(f"{flag} must be a whole number of at least 1, got "
                              f"{limits.excerpt(value)}")
        if value is not None:
            limits.check_int(flag, value, high=limits.MAX_BLOCK, error=TilingError)
    limits.check_sram_bytes(sram_source, sram_bytes)
    paper_q, paper_kv = _paper_blocks(m, d, outer)
    chosen_q = block_q if block_q is not None else paper_q
    chosen_kv = block_kv if block_kv is not None else paper_kv
    if block_q is None and block_kv is None:
        rule = ("Alg. 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d)" if outer == "kv" else
                "Alg. 1 line 1 for a Q-outer loop: B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d)")
        # ⌈M/4d⌉ rounds up, and the fp32 statistics need room too: when that overflows the SRAM
        # step the blocks down until they fit (one row off the larger block at a time, found by
        # bisection: _step_down_array), and say so.
        stepped = _step_down_array(*(np.int64(v) for v in (paper_q, paper_kv, d, elt, sram_bytes)))
        chosen_q, chosen_kv = (int(v) for v in stepped)
        if (chosen_q, chosen_kv) != (paper_q, paper_kv):
            rule += f" = {paper_q} × {paper_kv}, stepped down to fit the SRAM"
    else:
        rule = "given" if block_q is not None and block_kv is not None else (
            "given; the other from Alg. 1 line 1")
        need = working_set_bytes(chosen_q, chosen_kv, d, elt)
        if need > sram_bytes:
            raise TilingError(
                f"blocks B_r = {chosen_q}, B_c = {chosen_kv} do not fit: Q_i, O_i "
                f"({chosen_q}×{d}) + K_j, V_j ({chosen_kv}×{d}) in {workload.dtype} + l_i, m_i "
                f"need {need:,} bytes, the SRAM ({sram_source}) holds {sram_bytes:,}; "
                f"use smaller --block-q/--block-kv or a larger --sram"
            )
    return Tiling(chosen_q, chosen_kv, sram_bytes, sram_source, rule)


# ---------------------------------------------------------------------------------------------
# The same rule on numpy arrays, for sweeps (iosim/analysis/sweep.py); tests hold it equal to make_tiling.


def tiling_arrays(
    sram_bytes: Any, d: Any, element_bytes: Any, *, outer: str = "kv",
    block_q: Any = 0, block_kv: Any = 0,
) -> tuple[Any, Any, Any]:
    """(B_r, B_c, fits) of `make_tiling` element-wise over int64 arrays (0 = "not given").

    Where make_tiling raises because the blocks do not fit, `fits` is False instead: the given
    blocks are kept as they are (a sweep shows what they would cost), and a default that cannot
    fit even 1 × 1 tiles falls back to 1 × 1.
    """
    sram, dd, elt, bq, bkv = (np.asarray(v, dtype=np.int64) for v in np.broadcast_arrays(
        sram_bytes, d, element_bytes, block_q, block_kv))
    paper_q, paper_kv = _paper_blocks_array(sram // elt, dd, outer)
    given = (bq > 0) | (bkv > 0)
    stepped_q, stepped_kv = _step_down_array(paper_q, paper_kv, dd, elt, sram)
    # an SRAM below 1 × 1 tiles gives blocks of 0 rows: keep them at 1 (make_tiling raises)
    chosen_q = np.maximum(1, np.where(bq > 0, bq, np.where(given, paper_q, stepped_q)))
    chosen_kv = np.maximum(1, np.where(bkv > 0, bkv, np.where(given, paper_kv, stepped_kv)))
    fits = working_set_array(chosen_q, chosen_kv, dd, elt) <= sram
    return chosen_q, chosen_kv, fits


def working_set_array(block_q: Any, block_kv: Any, d: Any, element_bytes: Any) -> Any:
    """`working_set_bytes` on arrays (the same formula: K_j, V_j, Q_i, O_i tiles + l_i, m_i)."""
    return (2 * block_kv + 2 * block_q) * d * element_bytes + 2 * block_q * STAT_BYTES


def _paper_blocks_array(sram_elements: Any, d: Any, outer: str) -> tuple[Any, Any]:
    """`_paper_blocks` on arrays: Alg. 1 line 1, resident block ⌈M/4d⌉, streamed min(⌈M/4d⌉, d)."""
    resident = -(-sram_elements // (4 * d))
    streamed = np.minimum(resident, d)
    return (streamed, resident) if outer == "kv" else (resident, streamed)


def _step_down_array(q0: Any, kv0: Any, d: Any, elt: Any, sram: Any) -> tuple[Any, Any]:
    """make_tiling's step-down loop in closed form: the blocks after the fewest steps that fit.

    The loop takes one row off the larger block (B_c on a tie) per step, so after k steps the
    blocks are `_after_steps(k)`; the working set falls strictly with k, so the first k that
    fits is found by bisection over k in [0, q0 + kv0 − 2] (1 × 1 tiles, where the loop must
    stop; when even those do not fit, make_tiling raises and here the blocks stay 1 × 1).
    """
    def after(k: Any) -> tuple[Any, Any]:
        gap = np.abs(kv0 - q0)
        low = np.minimum(q0, kv0)
        kv_larger = kv0 >= q0
        # k ≤ gap: only the larger block has shrunk
        early_q = np.where(kv_larger, q0, q0 - k)
        early_kv = np.where(kv_larger, kv0 - k, kv0)
        # k > gap: both equal, then B_c and B_r take turns (B_c first)
        j = k - gap
        late_q = low - j // 2
        late_kv = low - (j + 1) // 2
        early = k <= gap
        return np.where(early, early_q, late_q), np.where(early, early_kv, late_kv)

    lo = np.zeros_like(q0)
    hi = q0 + kv0 - 2
    while (lo < hi).any():
        mid = (lo + hi) // 2
        q, kv = after(mid)
        ok = working_set_array(q, kv, d, elt) <= sram
        hi = np.where(ok, mid, hi)
        lo = np.where(ok | (lo >= hi), lo, mid + 1)
    return after(lo)
