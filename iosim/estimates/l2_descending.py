"""K/V re-reads of a causal forward whose programs walk their key blocks from the last down.

FlashAttention-2's forward (sdpa-flash) launches grid (num_m_block, b, h), the query block
fastest, with no causal reversal (flash_fwd_launch_template.h:63-64; flash_fwd_kernel.h
compute_attn: m_block = blockIdx.x), and each program walks its visited key blocks from the
last down ("We iterate over the blocks in reverse order", compute_attn_1rowblock). Under a
causal mask program m visits key blocks 0 … L_m − 1 (L_m grows with m): the walks are aligned
at their END (key block 0), not at their start as in iosim's Triton kernel (which walks up)
or FA2's backward (which walks a suffix of query blocks down, l2_restarts.py).

Program q, started at s_q, reads key block j at time E_q − j (E_q = s_q + L_q − 1, one block
per time unit as in l2.py). The latest earlier read of the same (batch, KV head, j) is by the
program q* of each query head of the group with the largest E_q ≤ E_p (E grows with m within
a head, so q* is found by bisection) if q* visits j; its predecessor in the same head reads j
L_p − L_{p−1} + (s_p − s_{p−1}) steps earlier: even programs that start together are r = B_r /
B_c steps apart on a tile, and once programs are long the starts thin out (S slots, starts
every L/S steps), so the reuse window grows with L. In the window, every running program
walks a contiguous range of its own key blocks (coordinates E_q − τ): their union per (batch,
KV head) is the distinct K/V tiles touched in between (LRU: the reuse distance), plus the own
tiles (Q_i read, O_i and L_i written) of the programs that start or end in it. The re-read
misses with l2_cutoff.miss_probability of that distance.

Evaluated at SAMPLES depths of each program (as l2_restarts.py), on the list schedule of
l2_restarts (`_schedule`) of the first sequences in launch order (`_simulated_units`); the
remaining (batch, head) sequences repeat the last simulated one's misses. Tests hold it to
benchmarks/fa2_descending_walk.py's tile-by-tile walk (exact reuse distances over a Fenwick
tree) on small cases.

It runs where a profile declares `forward_walk: descending`. No shipped profile does: judged on
a fresh set (IMPL8FRESH, tests/data/h200-impl-dram8.csv) it beat the ascending model in median
(17.3 vs 21.7 %) but not in worst (86.6 vs 63.2 %: one head × 65,536), docs/implementations.md.

DESCENDING_COPIES: the copies of a K/V tile the L2 holds in this walk (named, fitted).
Beyond MAX_PROGRAMS programs in one (batch, head) sequence, l2.py keeps its ascending closed form.
"""

from __future__ import annotations

import numpy as np

from iosim.estimates.l2_cutoff import miss_probability, never_miss_bytes
from iosim.estimates.l2_restarts import MAX_PROGRAMS, _owned_at, _schedule, _windows
from iosim.estimates.l2_waves import Lengths

DESCENDING_COPIES = 1.15
"""Copies of a K/V tile the L2 holds while FA2's forward walks down (l2_model.SHARED_COPIES = 2
for the lockstep walks: each L2 partition keeps a copy of what the SMs on its side read). In
the descending walk a tile's two readers are consecutive programs, which a second copy serves
only when they sit on opposite sides; with 2 the walk over-predicts the seen long causal calls
8-25×, with 1 it under-predicts them. Fitted (not a hardware fact) on the 95 seen sdpa-flash
calls that run on this walk (ncu: validation2-6 and CAUSALPROBE7, `python
benchmarks/descending_fit.py`; 42 of them moved by the constant), by the least median |error|
of the moved calls on a grid 1.0-1.3 by 0.05: 13.5 % (worst 62.1 %, 26 of 42 within 20 %).
Sensitivity: 1.10 → 17.6 % (66.6 %), 1.20 → 21.1 % (63.4 %), 1.25 → 15.8 % (worst 111.4 %),
1.0 → 36.5 % (72.1 %). What it leaves: at one constant the 2-head calls fit (c* 1.12-1.26)
and the calls of 3+ heads stay 40-60 % under (c* 1.38-1.44): see docs/implementations.md."""

ROWS = 4096
"""Reads judged per call at most: the launch's reads in order cut into ROWS equal strata, one
judged in each (each standing for its stratum's reads)."""

GOLDEN = (5 ** 0.5 - 1) / 2
"""The offsets of the judged reads in their strata, program by program: the fractional parts
of p × GOLDEN, spread evenly over [0, 1) for any run of consecutive programs."""

ROWS_AT_ONCE = 4096
"""Samples whose windows are evaluated in one array pass (a bound on the arrays' memory)."""


def _union_lengths(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row: the length of the union of the intervals [a, b) (empty ones, b <= a, add
    nothing): sorted by a, each adds what lies beyond the running maximum of the ends before."""
    order = np.argsort(a, axis=1, kind="stable")
    a, b = np.take_along_axis(a, order, axis=1), np.take_along_axis(b, order, axis=1)
    b = np.where(b > a, b, a)  # an empty interval: no reach beyond its start
    reach = np.maximum.accumulate(b, axis=1)
    before = np.concatenate([np.full((len(a), 1), np.iinfo(np.int64).min), reach[:, :-1]],
                            axis=1)
    return np.maximum(0, b - np.maximum(a, before)).sum(axis=1)  # type: ignore[no-any-return]


def descending_misses(lengths: Lengths, batch: int, heads: int, group: int, slots: int,
                      tile_bytes: float, own_read: float, own_write: float,
                      capacity: float) -> float:
    """Key-block reads (steps) of a causal forward walking down that miss beyond the first
    read of each (batch, KV head, key block), summed over the launch (`lengths`: key blocks of
    each query block of a head, in launch order; `tile_bytes`: the K/V bytes one step reads,
    copies counted; `own_read`, `own_write`: a program's own tiles)."""
    per_seq = len(lengths)
    sequences = batch * heads
    if per_seq < 1 or sequences < 1:
        return 0.0
    steps = np.array([lengths[i] for i in range(per_seq)], dtype=np.int64)
    # every sequence up to MAX_PROGRAMS programs: a head's misses grow over the first heads
    # of a launch as the schedule drifts from the first wave's lockstep
    simulated = min(sequences, max(1, MAX_PROGRAMS // per_seq))
    # launch order (h, b, m): sequence k is (b, h) = (k % batch, k // batch)
    starts_l, ends_l, seq_l = _schedule(steps.tolist(), simulated, min(slots, simulated * per_seq))
    start, end = np.array(starts_l, dtype=np.int64), np.array(ends_l, dtype=np.int64)
    seq = np.array(seq_l, dtype=np.int64)
    length = end - start
    last = end - 1  # E: the time of the read of key block 0
    unit = (seq % batch) * (heads // group) + (seq // batch) // group
    # the reads judged: ROWS of all of them (or all), one in each of ROWS equal strata of the
    # reads in launch order, at offsets from the golden ratio's fractions
    reads = np.cumsum(length)
    count = min(ROWS, int(reads[-1]))
    weight = float(reads[-1]) / count  # reads each judged read stands for
    at = ((np.arange(count) + np.modf(np.arange(count) * GOLDEN)[0]) * weight).astype(np.int64)
    p = np.searchsorted(reads, at, side="right")
    depth = at - (reads[p] - length[p])
    tile = length[p] - 1 - depth  # key block j, read at E_p − j
    now = last[p] - tile
    # the latest earlier read of the same (unit, j), over the sequences of p's unit: in each,
    # the program with the largest E at most E_p (E grows along a sequence), if it visits j
    previous = np.full(count, -1, dtype=np.int64)
    for k in range(simulated):
        rows = np.nonzero(unit[p] == unit[k * per_seq])[0]
        if not len(rows):
            continue
        mine = np.arange(k * per_seq, (k + 1) * per_seq)
        q = np.searchsorted(last[mine], last[p[rows]], side="right") - 1
        own = seq[p[rows]] == k
        q = np.where(own, p[rows] - k * per_seq - 1, q)  # in its own sequence: its predecessor
        q_at = mine[np.maximum(q, 0)]
        visits = (q >= 0) & (length[q_at] > tile[rows])
        previous[rows] = np.maximum(previous[rows], np.where(visits, last[q_at] - tile[rows], -1))
    judged = np.nonzero((previous >= 0) & (now > previous))[0]
    # a window walked by every running program in full cannot overflow: the sure hits
    running = min(slots, len(start))
    bound = (now[judged] - previous[judged]) * running * tile_bytes + running * (
        own_read + own_write)
    judged = judged[bound > never_miss_bytes(capacity)]
    missed = np.zeros(simulated)
    longest = int(length.max())
    by_end = np.argsort(end, kind="stable")
    sorted_ends = end[by_end]
    # the first program in launch order still running after time t: the least index among the
    # programs ending after t (a suffix minimum over the programs sorted by their ends)
    alive = np.minimum.accumulate(by_end[::-1])[::-1]
    spread = longest + 2 * int(end.max()) + 2  # keeps the units' coordinates apart
    for chunk in range(0, len(judged), ROWS_AT_ONCE):
        r = judged[chunk:chunk + ROWS_AT_ONCE]
        t0, t1 = previous[r], now[r]
        first = alive[np.minimum(np.searchsorted(sorted_ends, t0, side="right"), len(end) - 1)]
        stop = np.searchsorted(start, t1, side="left")
        # the programs running in each window, padded with empty ones (l2_restarts)
        s_q, e_q, u_q = _windows(start, end, unit, first, stop, t0)
        # the steps t0 <= τ < t1 (one of the two ends: the programs that read in the same step
        # as the first or the second read of the tile read before it or after it, as the SMs'
        # order has it, half of them on average): program q reads key block E_q − τ at
        # τ ∈ [s_q, e_q), E_q = e_q − 1
        tau_lo = np.maximum(t0[:, None], s_q)
        tau_hi = np.minimum(t1[:, None], e_q) - 1
        walked = tau_lo <= tau_hi
        a = np.where(walked, e_q - 1 - tau_hi + u_q * spread, 0)
        b = np.where(walked, e_q - tau_lo + u_q * spread, 0)
        distinct = _union_lengths(a, b)
        owned = _owned_at(start, sorted_ends, t0[:, None], t1[:, None] - 1, own_read,
                          own_write)[:, 0]
        for i, n, o in zip(p[r].tolist(), distinct.tolist(), owned.tolist(), strict=True):
            chance = miss_probability(n * tile_bytes + o, capacity)
            if chance:
                missed[seq[i]] += weight * chance
    total = float(missed.sum())
    if simulated < sequences:  # the rest repeat the last GQA period's misses, sequence by sequence
        tail = missed[-min(batch * group, simulated):]
        total += float(tail.mean()) * (sequences - simulated)
    return total
