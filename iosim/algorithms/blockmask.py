"""Block-sparse masks (FlashAttention paper, Prop. 4) and split-KV programs: exact sums.

Block-sparse FlashAttention (the paper's Algorithm 5) is Algorithm 2 with "if M_ij ≠ 0" around the
work of a block pair: a pair whose mask block is zero is skipped (no load of Q_i, O_i, l_i, m_i and
no write), while K_j, V_j are still loaded and O is still written. Prop. 4: Θ(Nd + N²d²M⁻¹s)
accesses, s the fraction of non-zero blocks. The paper leaves the mask open; iosim fixes one:

    Number the pairs a kernel visits (after the causal skip, if any) in row-major order
    k = 0, 1, ..., P − 1 (row block i, then key block j). With s = p/q, pair k is non-zero iff
        ⌈(k+1)·s⌉ > ⌈k·s⌉,
    a Bresenham line: exactly ⌈s·k'⌉ of the first k' pairs are non-zero, spread evenly, and
    pair 0 is always kept. In total ⌈s·P⌉ pairs are non-zero.

The mask is a property of the (row block, key block) grid, not of a loop order, so Algorithm 1
(K/V outer) and FlashAttention-2 (Q outer) skip the same pairs, and a forward and its backward
agree. Every sum over the kept pairs telescopes (kept pairs in an index range [a, b) number
⌈b·s⌉ − ⌈a·s⌉), which gives the closed form below; `floor_sum` keeps it vectorised.

Split-KV (flash-decoding, FA2 `flash_fwd_kernel.h`): a query block's key blocks 0 .. T_c − 1 are
cut into `splits` runs of nb = ⌈T_c/splits⌉ blocks; split k owns [k·nb, min((k+1)·nb, T_c)). A
program (row block i, split k) with no visited key block exits early: it writes its zero partial
output and −∞ log-sum-exp but loads nothing (`if (n_block_min >= n_block_max)`).
"""

from __future__ import annotations

from typing import Any

from iosim.algorithms.blocks import BlockSums, Int, cdiv, floor_sum, imax, select


def kept(index: int, num: int, den: int) -> bool:
    """Whether the index-th visited pair (row-major) is a non-zero block of the mask s = num/den."""
    return bool(cdiv((index + 1) * num, den) > cdiv(index * num, den))


def kept_between(start: Int, stop: Int, num: Int, den: Int) -> Int:
    """Non-zero pairs among visited pairs start .. stop − 1 (telescoping)."""
    return cdiv(stop * num, den) - cdiv(start * num, den)


def _causal_geometry(n_q: Int, n_kv: Int, block_q: Int, block_kv: Int) -> tuple[Int, Int, Int]:
    """(first, count, full_reach) for a causal mask, as in blocks.py.

    first: the first row block that sees a key; count: full row blocks (all but the last) from
    first on; full_reach: full row blocks that visit every key block (n_i = T_c).
    """
    t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
    offset = n_kv - n_q
    first = imax(0, cdiv(1 - offset, block_q) - 1)
    count = imax(0, (t_r - 1) - first)
    reach_all = imax(first, cdiv((t_c - 1) * block_kv + 1 - offset, block_q) - 1)
    full_reach = imax(0, (t_r - 1) - reach_all)
    return first, count, full_reach


def sparse_block_sums(dense: BlockSums, n_q: Int, n_kv: Int, block_q: Int, block_kv: Int,
                      causal: Any, num: Int, den: Int) -> BlockSums:
    """The block sums of `dense` (blocks.block_sums) restricted to the non-zero pairs of the mask.

    With P visited pairs and A row blocks that visit all T_c key blocks (a suffix of the rows,
    each occupying the T_c indices just before the next one's):
      kept          = ⌈P·s⌉
      kept_last     = ⌈P·s⌉ − ⌈(P − T_c)·s⌉           (the last row block: indices P − T_c .. P − 1)
      kept_last_col = Σ_{u<A} ⌈(b₀ + u·T_c)·s⌉ − ⌈(b₀ − 1 + u·T_c)·s⌉, b₀ = P − (A − 1)·T_c
                                                      (pairs with j = T_c − 1, the short key block)
    then Σ r_i = B_r·kept − (B_r − r_last)·kept_last, Σ c_j = B_c·kept − (B_c − c_last)·kept_last_col,
    and Σ r_i·c_j likewise from the last row block's kept pairs.
    """
    t_r, t_c = dense.row_blocks, dense.kv_blocks
    r_last = n_q - (t_r - 1) * block_q
    c_last = n_kv - (t_c - 1) * block_kv
    pairs = dense.pairs
    _, _, full_reach = _causal_geometry(n_q, n_kv, block_q, block_kv)
    reach = select(causal, full_reach + 1, t_r)
    total = cdiv(pairs * num, den)
    last_row = total - cdiv((pairs - t_c) * num, den)
    b0 = pairs - (reach - 1) * t_c
    last_col = (floor_sum(reach, den, num * t_c, num * b0 + den - 1)
                - floor_sum(reach, den, num * t_c, num * (b0 - 1) + den - 1))
    last_pair = total - cdiv((pairs - 1) * num, den)
    kv_rows = block_kv * total - (block_kv - c_last) * last_col
    return BlockSums(
        row_blocks=t_r,
        kv_blocks=t_c,
        pairs=total,
        pair_q_rows=block_q * total - (block_q - r_last) * last_row,
        pair_kv_rows=kv_rows,
        scores=block_q * kv_rows
        - (block_q - r_last) * (block_kv * last_row - (block_kv - c_last) * last_pair),
    )


def split_blocks(t_c: Int, splits: Int) -> Int:
    """nb: key blocks per split, ⌈T_c/splits⌉ (FA2 flash_fwd_kernel.h `n_blocks_per_split`)."""
    return cdiv(t_c, splits)


def split_work_rows(n_q: Int, n_kv: Int, block_q: Int, block_kv: Int, causal: Any,
                    splits: Int) -> Int:
    """Σ over (row block i, split k) programs that visit at least one key block of r_i.

    Row block i visits n_i key blocks; with nb blocks per split, ⌈n_i/nb⌉ of its programs have
    work. For the causal full rows n_i = ⌊x_i/B_c⌋ + 1 with x_i = (i+1)·B_r − 1 + n_kv − n_q, and
    ⌈(⌊x/B_c⌋ + 1)/nb⌉ = ⌊(x + nb·B_c)/(nb·B_c)⌋, a floor sum.
    """
    full, with_work, r_last, _ = _split_work(n_q, n_kv, block_q, block_kv, splits)
    return select(causal, block_q * full + r_last * with_work, n_q * with_work)


def split_work_programs(n_q: Int, n_kv: Int, block_q: Int, block_kv: Int, causal: Any,
                        splits: Int) -> Int:
    """The (row block i, split k) programs that visit at least one key block: Σ_i ⌈n_i/nb⌉,
    the same sum as split_work_rows without the rows' weights (FP8 scales are read once per
    such program)."""
    full, with_work, _, t_r = _split_work(n_q, n_kv, block_q, block_kv, splits)
    return select(causal, full + with_work, t_r * with_work)


def _split_work(n_q: Int, n_kv: Int, block_q: Int, block_kv: Int,
                splits: Int) -> tuple[Int, Int, Int, Int]:
    """(Σ over the causal full row blocks of ⌈n_i/nb⌉, programs with work of a row block that
    sees every key block, r_last, T_r)."""
    t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
    nb = split_blocks(t_c, splits)
    with_work = cdiv(t_c, nb)
    first, count, _ = _causal_geometry(n_q, n_kv, block_q, block_kv)
    base = imax(0, (first + 1) * block_q - 1 + n_kv - n_q)
    full = floor_sum(count, nb * block_kv, block_q, base + nb * block_kv)
    r_last = n_q - (t_r - 1) * block_q
    return full, with_work, r_last, t_r

