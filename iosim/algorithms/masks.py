"""Sliding windows and packed variable-length sequences: which block pairs a tiled kernel visits.

A mask (Workload.window, Workload.seqlens) keeps score (q, k) iff key k lies in the range of
query row q. Query q sits at key position p = q + n_kv − n_q (bottom-right, as causal); its
range is [p − L, p + R] ∩ [0, n_kv) with

    L = W − 1 under a window W, else unbounded;   R = 0 causal, W − 1 two-sided window, else
    unbounded,

so every row sees a contiguous run of keys, and both ends of it never decrease with q. Hence
row block i (rows a_i .. b_i − 1) visits a contiguous run of key blocks [lo_i, hi_i):

    lo_i = ⌊max(0, a_i + off − L) / B_c⌋,   hi_i = ⌊min(n_kv − 1, b_i − 1 + off + R) / B_c⌋ + 1

(empty where b_i − 1 + off + R < 0), exactly FlashAttention-2's `n_block_min`, `n_block_max`
(flash_fwd_kernel.h, `Is_local`, window_size = (L, R)). Key block j is visited by the row
blocks i with lo_i <= j < hi_i, again a contiguous run (the backward's `m_block_min/max`).
A pair partly inside the mask is visited in full; a pair wholly outside is skipped.

Packed sequences (seqlens) run as FlashAttention-2's varlen kernels do (`cu_seqlens`): each
sequence is its own problem, cut into blocks from its own first token (blocks never straddle
two sequences; each sequence's last blocks may be short), with the mask applied inside it
(n_q = n_kv per sequence, so off = 0). The grid spans ⌈max_seqlen/B⌉ blocks per sequence;
programs past a sequence's end exit before touching memory (`if (m_block * kBlockM >=
binfo.actual_seqlen_q) return;`), so they count in the launch (occupancy) but move nothing.

Packed sequences under FlexAttention's document mask (packing = "document") are one problem of
n tokens instead: blocks are cut from token 0 and straddle sequence boundaries. Row q keeps keys
[max(s_q, p − L), min(e_q, p + R)], s_q .. e_q its sequence; both ends still never decrease with
q, so a row block's run of key blocks is again [lo_i, hi_i), with lo from its first row's
sequence start and hi from its last row's sequence end. Every program has work.

The sums are exact: numpy over every row block of every sequence (one entry per row block,
never per pair), for one workload; a sweep's arrays of sizes are evaluated point by point.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from iosim.algorithms.blocks import BlockSums
from iosim.inputs.ints import cdiv
from iosim.inputs.limits import check_mask_blocks

IntArray = np.ndarray[Any, np.dtype[np.int64]]
UNBOUNDED = 1 << 40
"""L or R of an unbounded side (far beyond limits.MAX_LENGTH, and far from int64's end)."""


class RowBlocks(NamedTuple):
    """Every row block of every sequence of one (batch, head), in launch order."""

    seq: IntArray
    """Which sequence the row block belongs to."""
    start: IntArray
    """First query row (packed rows: the sequence's offset plus the block's own)."""
    stop: IntArray
    lo: IntArray
    """First visited key block, counted within the sequence."""
    hi: IntArray
    """One past the last visited key block (lo == hi: none)."""
    kv_start: IntArray
    """Per sequence: the key row its key block 0 starts at."""
    kv_len: IntArray
    """Per sequence: its keys."""
    t_c: IntArray
    """Per sequence: its key blocks ⌈kv_len/B_c⌉."""


def reach(causal: bool, window: int | None) -> tuple[int, int]:
    """(L, R): how far left and right of its position a query row sees (module docstring)."""
    left = UNBOUNDED if window is None else window - 1
    right = 0 if causal else (UNBOUNDED if window is None else window - 1)
    return left, right


def sequences(n_q: int, n_kv: int, seqlens: tuple[int, ...] | None
              ) -> tuple[IntArray, IntArray, IntArray]:
    """(query lengths, key lengths, offsets) of the problems a kernel runs: one without
    packing, one per packed sequence (queries and keys alike)."""
    if seqlens is None:
        one = np.zeros(1, dtype=np.int64)
        return one + n_q, one + n_kv, one
    lengths = np.asarray(seqlens, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return lengths, lengths, offsets


@lru_cache(maxsize=64)
def row_blocks(n_q: int, n_kv: int, block_q: int, block_kv: int, causal: bool,
               window: int | None, seqlens: tuple[int, ...] | None,
               packing: str = "varlen") -> RowBlocks:
    """The visited key-block run [lo, hi) of every row block (module docstring)."""
    _check_blocks(n_q, n_kv, block_q, block_kv, seqlens, packing)
    if seqlens is not None and packing == "document":
        return _document_blocks(n_q, block_q, block_kv, causal, window, seqlens)
    q_len, kv_len, offsets = sequences(n_q, n_kv, seqlens)
    t_r = -(-q_len // block_q)
    seq = np.repeat(np.arange(q_len.shape[0], dtype=np.int64), t_r)
    first = np.concatenate([[0], np.cumsum(t_r)[:-1]]).astype(np.int64)
    local = np.arange(seq.shape[0], dtype=np.int64) - first[seq]
    a = local * block_q
    b = np.minimum((local + 1) * block_q, q_len[seq])
    off = kv_len[seq] - q_len[seq]
    left, right = reach(causal, window)
    low = np.maximum(0, a + off - left)
    high = np.minimum(kv_len[seq] - 1, b - 1 + off + right)
    empty = (high < 0) | (low > high)
    lo = np.where(empty, 0, low // block_kv)
    hi = np.where(empty, 0, high // block_kv + 1)
    for array in (lo, hi):
        array.setflags(write=False)
    return RowBlocks(seq, offsets[seq] + a, offsets[seq] + b, lo, hi, offsets, kv_len,
                     -(-kv_len // block_kv))


def _check_blocks(n_q: int, n_kv: int, block_q: int, block_kv: int,
                  seqlens: tuple[int, ...] | None, packing: str) -> None:
    """Refuse, before allocating, more row or key blocks than limits.MAX_MASK_BLOCKS."""
    lengths = (n_q,) if seqlens is None or packing == "document" else seqlens
    kv_lengths = (n_kv,) if seqlens is None or packing == "document" else seqlens
    rows = sum(-(-q // block_q) for q in lengths)
    keys = sum(-(-k // block_kv) for k in kv_lengths)
    check_mask_blocks(rows, rows=True, length=n_q, block=block_q)
    check_mask_blocks(keys, rows=False, length=n_kv, block=block_kv)


def _document_blocks(n: int, block_q: int, block_kv: int, causal: bool, window: int | None,
                     seqlens: tuple[int, ...]) -> RowBlocks:
    """row_blocks of FlexAttention's document mask: one problem, blocks from token 0."""
    ends = np.cumsum(np.asarray(seqlens, dtype=np.int64))
    starts = ends - np.asarray(seqlens, dtype=np.int64)
    t_r = -(-n // block_q)
    a = np.arange(t_r, dtype=np.int64) * block_q
    b = np.minimum(a + block_q, n)
    first_seq = np.searchsorted(ends, a, side="right")
    last_seq = np.searchsorted(ends, b - 1, side="right")
    left, right = reach(causal, window)
    lo = np.maximum(starts[first_seq], a - left) // block_kv
    hi = np.minimum(ends[last_seq] - 1, b - 1 + right) // block_kv + 1
    one = np.zeros(1, dtype=np.int64)
    for array in (lo, hi):
        array.setflags(write=False)
    return RowBlocks(np.zeros(t_r, dtype=np.int64), a, b, lo, hi, one, one + n,
                     one + -(-n // block_kv))


def mask_sums(n_q: int, n_kv: int, block_q: int, block_kv: int, causal: bool,
              window: int | None, seqlens: tuple[int, ...] | None,
              packing: str = "varlen") -> BlockSums:
    """The exact block sums of one (batch, head) under the mask: pairs, Σ r_i, Σ c_j, Σ r_i·c_j
    over the visited pairs (blocks.BlockSums), the last key block of a sequence short."""
    rb = row_blocks(n_q, n_kv, block_q, block_kv, causal, window, seqlens, packing)
    rows = rb.stop - rb.start
    count = rb.hi - rb.lo
    c_last = rb.kv_len - (rb.t_c - 1) * block_kv
    short = (block_kv - c_last)[rb.seq]
    kv_rows = count * block_kv - np.where((count > 0) & (rb.hi == rb.t_c[rb.seq]), short, 0)
    return BlockSums(
        row_blocks=int(rows.shape[0]),
        kv_blocks=int(rb.t_c.sum()),
        pairs=int(count.sum()),
        pair_q_rows=int((rows * count).sum()),
        pair_kv_rows=int(kv_rows.sum()),
        scores=int((rows * kv_rows).sum()),
    )


def split_work_rows(n_q: int, n_kv: int, block_q: int, block_kv: int, causal: bool,
                    window: int | None, seqlens: tuple[int, ...] | None, splits: int,
                    packing: str = "varlen") -> int:
    """Σ r_i over the split-KV programs (row block i, split k) with a key block to visit: split k
    owns key blocks [k·nb, (k+1)·nb) of its sequence, nb = ⌈T_c/splits⌉ with T_c of the longest
    sequence (flash_fwd_kernel.h n_blocks_per_split from params.seqlen_k = max_seqlen_k)."""
    rb = row_blocks(n_q, n_kv, block_q, block_kv, causal, window, seqlens, packing)
    nb = -(-int(rb.t_c.max()) // splits)
    # splits k with k·nb < hi and (k+1)·nb > lo: from ⌊lo/nb⌋ to ⌈hi/nb⌉ − 1
    with_work = np.where(rb.hi > rb.lo, -(-rb.hi // nb) - rb.lo // nb, 0)
    return int(((rb.stop - rb.start) * with_work).sum())


class KvBlocks(NamedTuple):
    """For a key-outer loop: every key block of every sequence, and the run of row blocks
    [first, last) (global row-block indices) that visit it."""

    seq: IntArray
    start: IntArray
    stop: IntArray
    first: IntArray
    last: IntArray


def kv_blocks(rb: RowBlocks, block_kv: int) -> KvBlocks:
    """Invert the row blocks' runs: key block j of sequence s is visited by the row blocks i of
    s with lo_i <= j < hi_i, a contiguous run since lo and hi never decrease within s."""
    seq = np.repeat(np.arange(rb.t_c.shape[0], dtype=np.int64), rb.t_c)
    first_block = np.concatenate([[0], np.cumsum(rb.t_c)[:-1]]).astype(np.int64)
    j = np.arange(seq.shape[0], dtype=np.int64) - first_block[seq]
    stride = int(rb.t_c.max()) + 2
    # keys sorted by (sequence, value): seq·stride + value never decreases along the row blocks
    hi_key = rb.seq * stride + rb.hi
    lo_key = rb.seq * stride + rb.lo
    first = np.searchsorted(hi_key, seq * stride + j, side="right").astype(np.int64)
    last = np.searchsorted(lo_key, seq * stride + j, side="right").astype(np.int64)
    last = np.maximum(first, last)
    start = rb.kv_start[seq] + j * block_kv
    stop = np.minimum(start + block_kv, rb.kv_start[seq] + rb.kv_len[seq])
    return KvBlocks(seq, start, stop, first, last)


def grid_blocks(n_q: Any, n_kv: Any, block: Any, along_q: bool,
                seqlens: tuple[int, ...] | None, packing: str = "varlen") -> tuple[Any, Any]:
    """(programs launched, programs with a block) along one axis of one (batch, head): without
    packing both are ⌈length/B⌉; packed, FA2 varlen launches ⌈max_seqlen/B⌉ per sequence and
    the programs past a sequence's end exit at once. Ints, or a sweep's arrays of B."""
    if seqlens is None or packing == "document":
        blocks = cdiv(n_q if along_q else n_kv, block)
        return blocks, blocks
    lengths = np.asarray(seqlens, dtype=np.int64)
    launched = len(seqlens) * cdiv(int(lengths.max()), block)
    if isinstance(block, np.ndarray):
        real = np.vectorize(lambda b: int((-(-lengths // b)).sum()), otypes=[np.int64])(block)
        return launched, real
    return launched, int((-(-lengths // block)).sum())


def longest_program(n_q: int, n_kv: int, block_q: int, block_kv: int, causal: bool,
                    window: int | None, seqlens: tuple[int, ...] | None, along_q: bool,
                    packing: str = "varlen") -> int:
    """Inner-block steps of the longest program of a query-outer (along_q) or key-outer kernel
    (occupancy's tail)."""
    rb = row_blocks(n_q, n_kv, block_q, block_kv, causal, window, seqlens, packing)
    if along_q:
        return int((rb.hi - rb.lo).max())
    kb = kv_blocks(rb, block_kv)
    return int((kb.last - kb.first).max())
