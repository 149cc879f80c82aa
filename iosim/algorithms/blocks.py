"""Which (query block, key/value block) pairs a tiled kernel visits, and exact sums over them.

Blocks: T_r = ⌈n_q/B_r⌉ query blocks of B_r rows (the last has r_last rows), T_c = ⌈n_kv/B_c⌉
key/value blocks of B_c rows (the last has c_last). Without a mask every pair is visited. With a
causal mask (bottom-right aligned: query row q sees keys k <= q + n_kv - n_q) a kernel skips the
pairs that lie wholly above the diagonal, as FlashAttention-2 §3.1.1 and Triton's tutorial do;
row block i then visits the first n_i key blocks, where for every block but the last

    n_i = max(0, ⌊((i+1)·B_r − 1 + n_kv − n_q) / B_c⌋ + 1)

and the last row block (which holds query row n_q − 1, seeing every key) visits all T_c.
Every key block is visited by at least that last row block.

The sums below are exact for uneven last blocks and work element-wise on numpy integer arrays
(sweeps) as well as on Python ints (one workload), through `floor_sum` — no loop over blocks.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from iosim.inputs.ints import Int, cdiv, imax, imin, is_array, select

__all__ = ["BlockSums", "Int", "block_sums", "cdiv", "floor_sum", "imax", "imin", "select",
           "visited_kv_blocks"]


def floor_sum(n: Int, m: Int, a: Int, b: Int) -> Int:
    """Σ_{i=0}^{n-1} ⌊(a·i + b)/m⌋ for n >= 0, m >= 1, a >= 0, b >= 0, in O(log) steps.

    The Euclid-like reduction of AtCoder Library's floor_sum_unsigned; vectorised for arrays.
    """
    if not is_array(n, m, a, b):
        total: Int = 0
        while n > 0:
            if a >= m:
                total += n * (n - 1) // 2 * (a // m)
                a %= m
            if b >= m:
                total += n * (b // m)
                b %= m
            y_max = a * n + b
            if y_max < m:
                break
            n, b, m, a = y_max // m, y_max % m, a, m
        return total
    nn, mm, aa, bb = (np.array(v, dtype=np.int64) for v in np.broadcast_arrays(n, m, a, b))
    totals = np.zeros(nn.shape, dtype=np.int64)
    active = nn > 0
    while active.any():
        totals += np.where(active, nn * (nn - 1) // 2 * (aa // mm), 0)
        aa = np.where(active, aa % mm, aa)
        totals += np.where(active, nn * (bb // mm), 0)
        bb = np.where(active, bb % mm, bb)
        y_max = aa * nn + bb
        active &= y_max >= mm
        safe_m = np.where(active, mm, 1)
        nn, bb, mm, aa = (np.where(active, y_max // safe_m, nn),
                          np.where(active, y_max % safe_m, bb),
                          np.where(active, aa, mm), np.where(active, mm, aa))
    return totals


class BlockSums(NamedTuple):
    """Exact counts over the visited (i, j) block pairs of one (batch, head)."""

    row_blocks: Int
    """T_r = ⌈n_q/B_r⌉."""
    kv_blocks: Int
    """T_c = ⌈n_kv/B_c⌉."""
    pairs: Int
    """Number of visited (i, j) pairs."""
    pair_q_rows: Int
    """Σ over visited pairs of r_i: rows of Q_i (or O_i, l_i, ...) loaded once per pair."""
    pair_kv_rows: Int
    """Σ over visited pairs of c_j: rows of K_j (or V_j) loaded once per pair."""
    scores: Int
    """Σ over visited pairs of r_i·c_j: attention scores the kernel computes."""


def block_sums(n_q: Int, n_kv: Int, block_q: Int, block_kv: Int, causal: Any) -> BlockSums:
    """Closed-form sums over the visited block pairs (see the module docstring)."""
    t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
    r_last = n_q - (t_r - 1) * block_q
    full = BlockSums(t_r, t_c, t_r * t_c, n_q * t_c, n_kv * t_r, n_q * n_kv)
    if not is_array(causal) and not causal:
        return full

    offset = n_kv - n_q
    # Row blocks 0 .. T_r−2 are full (B_r rows); x_i = (i+1)·B_r − 1 + offset is the last key
    # their last row sees. Those with x_i < 0 see no key at all (only when n_kv < n_q).
    first = imax(0, cdiv(1 - offset, block_q) - 1)
    count = imax(0, (t_r - 1) - first)
    # Σ n_i over full row blocks = Σ_t (⌊x_{first+t}/B_c⌋ + 1), t < count
    base = imax(0, (first + 1) * block_q - 1 + offset)
    visited_full = count + floor_sum(count, block_kv, block_q, base)
    # Full row blocks that already reach the last key block: their keys stop at n_kv, not n_i·B_c.
    reach_all = imax(first, cdiv((t_c - 1) * block_kv + 1 - offset, block_q) - 1)
    count_all = imax(0, (t_r - 1) - reach_all)
    kv_rows_full = visited_full * block_kv - count_all * (t_c * block_kv - n_kv)

    causal_sums = BlockSums(
        row_blocks=t_r,
        kv_blocks=t_c,
        pairs=visited_full + t_c,
        pair_q_rows=block_q * visited_full + r_last * t_c,
        pair_kv_rows=kv_rows_full + n_kv,
        scores=block_q * kv_rows_full + r_last * n_kv,
    )
    if not is_array(causal):
        return causal_sums
    return BlockSums(*(select(causal, c, f) for c, f in zip(causal_sums, full, strict=True)))


def visited_kv_blocks(n_q: int, n_kv: int, block_q: int, block_kv: int, causal: bool) -> list[int]:
    """n_i for every row block i: row block i visits key blocks 0 .. n_i − 1 (for the tile walk)."""
    t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
    if not causal:
        return [t_c] * t_r
    offset = n_kv - n_q
    counts = [max(0, ((i + 1) * block_q - 1 + offset) // block_kv + 1) for i in range(t_r - 1)]
    return [*counts, t_c]


class VisitedKvBlocks:
    """`visited_kv_blocks` as a sequence that is never built: n_i, Σ n_i over a prefix and the
    number of row blocks with n_i <= j, each in O(log T_r) steps (through floor_sum), so that
    models over every row block (iosim/estimates/l2.py) take the same time at any N."""

    def __init__(self, n_q: int, n_kv: int, block_q: int, block_kv: int, causal: bool) -> None:
        self.t_r: int = int(cdiv(n_q, block_q))
        self.t_c: int = int(cdiv(n_kv, block_kv))
        self.block_q, self.block_kv, self.causal = block_q, block_kv, causal
        self.offset = n_kv - n_q
        # row blocks before `first` see no key (x_i < 0); as in block_sums
        self.first: int = max(0, int(cdiv(1 - self.offset, block_q)) - 1)

    def __len__(self) -> int:
        return self.t_r

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.t_r:
            raise IndexError(i)
        if not self.causal or i == self.t_r - 1:
            return self.t_c
        return max(0, ((i + 1) * self.block_q - 1 + self.offset) // self.block_kv + 1)

    def prefix(self, k: int) -> int:
        """Σ n_i for i < k."""
        if not self.causal:
            return k * self.t_c
        full = min(k, self.t_r - 1)  # row blocks before the last, which sees every key block
        count = max(0, full - self.first)
        base = (self.first + 1) * self.block_q - 1 + self.offset
        total = count + floor_sum(count, self.block_kv, self.block_q, base) if count else 0
        return int(total + (self.t_c if k >= self.t_r else 0))

    def count_at_most(self, j: int) -> int:
        """Row blocks i with n_i <= j, in closed form (it was a bisection over n_i, millions of
        calls in a measured-profile sweep's DRAM estimates). The last row block, and every one
        without a mask, sees all T_c key blocks; before it n_i = max(0, x_i + 1) with
        x_i = ⌊((i + 1)·B_r − 1 + offset) / B_c⌋, and for j >= 0, max(0, x_i + 1) <= j
        ⟺ (i + 1)·B_r − 1 + offset < j·B_c ⟺ i + 1 <= ⌊(j·B_c − offset) / B_r⌋: the first
        that many row blocks, at most T_r − 1 (tests/test_l2_closed_form.py holds it to a count
        over visited_kv_blocks)."""
        if j < 0:
            return 0
        last = 1 if self.t_c <= j else 0
        if not self.causal:
            return self.t_r * last
        before = (j * self.block_kv - self.offset) // self.block_q
        return int(min(max(0, before), self.t_r - 1)) + last


class RowsPerKvBlock:
    """For K/V-outer kernels: how many row blocks visit key block j (T_r − #{i: n_i <= j}),
    with prefix sums, over VisitedKvBlocks (never built as a list either)."""

    def __init__(self, visited: VisitedKvBlocks) -> None:
        self.visited = visited

    def __len__(self) -> int:
        return self.visited.t_c

    def __getitem__(self, j: int) -> int:
        if not 0 <= j < self.visited.t_c:
            raise IndexError(j)
        return self.visited.t_r - self.visited.count_at_most(j)

    def prefix(self, k: int) -> int:
        """Σ rows_j for j < k = Σ_i min(n_i, k)."""
        below = self.visited.count_at_most(k)  # these have n_i <= k
        return self.visited.prefix(below) + k * (self.visited.t_r - below)
