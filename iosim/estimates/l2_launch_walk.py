"""K/V re-reads of FA2's causal forward, from a step-by-step LRU walk of its launch order.

What FlashAttention-2's forward does (Dao-AILab/flash-attention at commit 0251105a, the
kernels PyTorch vendors under aten/src/ATen/native/transformers/cuda/flash_attn/):

* The grid is (num_m_block, b, h) (csrc/flash_attn/src/flash_fwd_launch_template.h:63-64,
  `dim3 grid(num_m_block, params.b, params.h)`), and compute_attn takes m_block = blockIdx.x,
  bidb = blockIdx.y, bidh = blockIdx.z (flash_fwd_kernel.h:1084-1088). blockIdx.x is issued
  fastest: the query blocks of one (batch, head) are adjacent in launch order, then the batch,
  then the heads (slowest). m_block is not reversed under a causal mask: the short programs
  (the first query blocks of a head) are issued first.
* Program m visits key blocks 0 … n_block_max − 1, n_block_max = ⌈((m + 1)·kBlockM + N_kv −
  N_q)/kBlockN⌉ under the (bottom-right) causal mask (flash_fwd_kernel.h:91-94;
  blocks.VisitedKvBlocks), and walks them from the last down: `int n_block = n_block_max - 1`
  (line 274), then `--n_block` through the masking steps (line 309) and the rest (`for (;
  n_block >= n_block_min; --n_block)`, line 385; "We iterate over the blocks in reverse
  order", line 138).
* Tiles: configs/impls/sdpa-flash.yaml forward_tiles, from run_mha_fwd_hdim* of the same
  template (d ≤ 64: 128 × 128; d ≤ 128: 128 × 64 on sm80/sm90; d 256: 64 × 64 on H100-class
  parts); programs per SM from the profile's registers and shared memory
  (Tiling.programs_per_sm: 2 at d 64, 128 and 256 on the H200).

The model (l2.py's, followed step by step instead of by a closed form): the launch's programs
are list-scheduled in grid order on SMs × programs-per-SM slots, each slot taking the next
program when its program ends (a program's length: its key blocks, one per time step, as in
l2.py; l2_restarts._schedule). In step τ every running program reads one K/V tile of its
(batch, KV head): program p, started at s_p with L_p key blocks, reads key block
L_p − 1 − (τ − s_p). A program reads its own Q_i at its start and writes O_i, L_i at its end.
The L2 is one LRU cache of those tiles, a K/V tile held at walk_copies copies (growing with
the sequences live side by side, live_sequences; round 9 held one WALK_COPIES). A K/V tile read
again at step t, last read at step t₀, has a reuse distance of the distinct K/V tiles read at
steps t₀ < τ < t (the other reads of steps t₀ and t are concurrent with the tile's and counted
on neither side: the seen records chose this against counting one whole end, which round 8's
l2_descending did, docs/implementations.md) plus the own tiles of the programs that start or
end at steps t₀ < τ ≤ t − 1, and
misses with l2_cutoff.miss_probability of it (the soft cutoff fitted on Algorithm 4's sweeps
and the backward's restarts). Of the reads of one tile in one step, one is the read, the
others hit (which one only moves a miss between sequences). Each (batch, KV head, key block)'s
first read is compulsory (l2.py counts it).

Exact for that definition: each tile's last read is kept, and the distinct tiles in a window
are a suffix sum of the histogram of last-read steps (tests/test_l2_launch_walk.py holds it to
a brute-force enumeration). Cost: one numpy pass over the running programs per time step
(about 50 µs); a launch of more than MAX_STEPS steps walks its first (batch, head) sequences
and the rest repeat the last GQA period's misses (as l2_restarts does); where one sequence
alone needs more than MAX_STEPS (N beyond about 150,000 at d 128), l2.py keeps its ascending
closed form (`walk_fits`).
"""

from __future__ import annotations

import math

import numpy as np

from iosim.estimates.l2_cutoff import miss_probability, never_miss_bytes, sure_miss_bytes
from iosim.estimates.l2_restarts import _schedule
from iosim.estimates.l2_waves import Lengths

WALK_COPIES = 1.4
"""Round 9's one figure for every launch (main's model before round 13; the judges' "before"):
fitted by `python benchmarks/descending_fit.py --before` on the 110 seen sdpa-flash calls then
walked, grid 1.0-2.0 by 0.05, least median + worst |error| of the 51 calls it moves (median
16.2 %, worst 61.4 %). Per call the figure that matches ncu is not one number: it grows with
the sequences running side by side (`live_sequences`), from 1.26-1.48 at one head to 1.6-1.7
at 2-3 heads live and 1.8-2.7 at 4-12 (`python benchmarks/walk_copies_fit.py --per-call`).
Replaced by `walk_copies`."""

WALK_COPIES_ONE = 1.15
"""walk_copies at one live sequence. Fitted with WALK_COPIES_PER_E by `python
benchmarks/walk_copies_fit.py` on the 139 seen sdpa-flash calls the walk models (ncu:
validation2-6, CAUSALPROBE7, IMPL8FRESH, IMPL9FRESH, IMPL12FRESH), grid 1.0-1.6 by 0.05 ×
0-1.5 by 0.05, least median + worst |error| (each call's bytes linear in the copies between
eight walked figures): median 4.5 %, worst 37.1 %, 129 of 139 within 20 %; walked exactly,
4.4 %, 38.0 %, 130 (WALK_COPIES 1.4 there: 6.0 %, 61.4 %, 107). Sensitivity: 1.1 → 4.8 /
44.0 % (125), 1.2 → 5.6 / 56.7 % (119)."""

WALK_COPIES_PER_E = 0.55
"""walk_copies' growth per e-fold of the live sequences (with WALK_COPIES_ONE). Sensitivity:
0.5 → 4.9 / 43.4 % (127), 0.6 → 5.5 / 42.2 % (121). The form (log) against 1 + B (1 − 1/s),
the next best (A 1.0, B 1.1: 4.6 / 35.4 %, 128; 1.05 → 59.7 % worst): the log keeps the many
small heads of b 2-3 × 12-20 heads (1.8-2.7 wanted) that the saturating form caps at 2.1."""

MAX_STEPS = 6000
"""Time steps walked at most (about 0.2 s on one core)."""

CUTOFF_POINTS = 4096
"""Points of the tabulated miss probability between l2_cutoff's tails (linear between them)."""


def walk_fits(lengths: Lengths, slots: int) -> bool:
    """Whether one (batch, head) sequence of the launch walks within MAX_STEPS steps."""
    per_seq = lengths.prefix(len(lengths))
    return per_seq <= MAX_STEPS * max(1, min(slots, len(lengths))) and \
        lengths[len(lengths) - 1] <= MAX_STEPS


def _miss_table(capacity: float) -> tuple[np.ndarray, np.ndarray]:
    """(reuse distances in bytes, miss probabilities) tabulated across l2_cutoff's tails."""
    lo, hi = never_miss_bytes(capacity), sure_miss_bytes(capacity)
    if hi <= lo:  # a step (FILL_WIDTH 0): two points either side of it
        lo = math.nextafter(hi, -math.inf)
    xs = np.linspace(lo, hi, CUTOFF_POINTS)
    return xs, np.array([miss_probability(float(x), capacity) for x in xs])


def _walked_sequences(per_seq_steps: int, sequences: int, slots: int) -> int:
    """Sequences walked: as many as fit MAX_STEPS steps of `slots` programs, at least one."""
    return max(1, min(sequences, MAX_STEPS * slots // max(1, per_seq_steps)))


def launch_walk_misses(lengths: Lengths, batch: int, heads: int, group: int, slots: int,
                       tile_bytes: float, own_read: float, own_write: float,
                       capacity: float) -> float:
    """K/V tile reads (steps) of a causal forward walking its key blocks down that miss beyond
    the first read of each (batch, KV head, key block), summed over the launch (the module
    docstring). `lengths`: key blocks of each query block of a head, in launch order;
    `tile_bytes`: the L2 bytes of one step's K/V tile, copies counted; `own_read`, `own_write`:
    a program's own tiles (Q_i read at its start; O_i, L_i written at its end)."""
    per_seq = len(lengths)
    sequences = batch * heads
    if per_seq < 1 or sequences < 1:
        return 0.0
    steps = np.array([lengths[i] for i in range(per_seq)], dtype=np.int64)
    walked = _walked_sequences(int(steps.sum()), sequences, max(1, min(slots, sequences * per_seq)))
    # launch order (h, b, m): sequence k is (b, h) = (k % batch, k // batch)
    starts, ends, seqs = _schedule(steps.tolist(), walked, min(slots, walked * per_seq))
    start, end = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
    seq = np.array(seqs, dtype=np.int64)
    unit = (seq % batch) * (heads // group) + (seq // batch) // group
    key_blocks = max(1, int(steps.max()))
    horizon = int(end.max())
    # own tiles by step: Q_i read at a program's start, O_i and L_i written at its end
    own = np.zeros(horizon + 2)
    np.add.at(own, start, own_read)
    np.add.at(own, end, own_write)
    own_upto = np.cumsum(own)  # own_upto[t]: own bytes at steps <= t
    last = np.full((int(unit.max()) + 1) * key_blocks, -1, dtype=np.int64)  # each tile's last read
    latest = np.zeros(horizon + 1, dtype=np.int64)  # tiles whose last read is at each step
    xs, ps = _miss_table(capacity)
    missed = np.zeros(walked)
    slot_of = np.zeros(len(last), dtype=np.int64)  # scratch: which read of a step took a tile
    joined_by = np.searchsorted(start, np.arange(horizon), side="right")  # started by step t
    running = np.zeros(0, dtype=np.int64)
    joined = 0
    for t in range(horizon):
        if joined_by[t] > joined:
            running = np.concatenate([running, np.arange(joined, joined_by[t])])
            joined = int(joined_by[t])
        running = running[end[running] > t]
        if not len(running):
            continue
        tile = unit[running] * key_blocks + end[running] - 1 - t
        # of the reads of one tile in this step, one (whichever the assignment keeps) is the
        # read and the others hit
        slot_of[tile] = np.arange(len(tile))
        tiles = tile[slot_of[tile] == np.arange(len(tile))]
        before = last[tiles]
        again = before >= 0
        if again.any():
            t0 = before[again]
            lo = int(t0.min())
            # distinct tiles last read at steps t0 < τ < t: a suffix sum over the window (the
            # other reads of steps t0 and t are concurrent with the tile's: not counted)
            suffix = np.concatenate([np.cumsum(latest[lo:t][::-1])[::-1], [0]])
            reuse = suffix[t0 - lo + 1] * tile_bytes + (own_upto[t - 1] - own_upto[t0])
            chance = np.interp(reuse, xs, ps, left=0.0, right=1.0)
            if walked > 1:
                missed += np.bincount(seq[running[slot_of[tiles[again]]]], weights=chance,
                                      minlength=walked)[:walked]
            else:
                missed[0] += chance.sum()
            np.subtract.at(latest, t0, 1)
        latest[t] = len(tiles)
        last[tiles] = t
    total = float(missed.sum())
    if walked < sequences:  # the rest repeat the last GQA period's misses, sequence by sequence
        tail = missed[-min(batch * group, walked):]
        total += float(tail.mean()) * (sequences - walked)
    return total



def live_sequences(lengths: Lengths, batch: int, heads: int, slots: int) -> float:
    """The (batch, head) sequences with a program running beside an average K/V read of the
    walk: each step's live sequences weighted by its running programs, over the schedule
    launch_walk_misses walks. A sequence's programs are launched one after another and the
    next starts by the time the one before it ends (its slot frees then at the latest), so a
    sequence runs without a gap from its first start to its last end: difference arrays."""
    per_seq = len(lengths)
    sequences = batch * heads
    if per_seq < 1 or sequences < 1:
        return 0.0
    steps = [lengths[i] for i in range(per_seq)]
    walked = _walked_sequences(sum(steps), sequences, max(1, min(slots, sequences * per_seq)))
    starts, ends, _ = _schedule(steps, walked, min(slots, walked * per_seq))
    start, end = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
    horizon = int(end.max()) + 1
    running = np.zeros(horizon)
    np.add.at(running, start, 1.0)
    np.add.at(running, end, -1.0)
    live = np.zeros(horizon)
    first = start.reshape(walked, per_seq).min(axis=1)
    last = end.reshape(walked, per_seq).max(axis=1)
    np.add.at(live, first, 1.0)
    np.add.at(live, last, -1.0)
    reads, live = np.cumsum(running), np.cumsum(live)
    return float((reads * live).sum() / max(1.0, reads.sum()))


def walk_copies(live: float) -> float:
    """The L2 bytes a K/V tile holds in the walk, in copies of its own bytes, at `live`
    sequences running side by side (live_sequences): WALK_COPIES_ONE + WALK_COPIES_PER_E ·
    ln(live). Named and fitted, not a hardware fact: the walk's one LRU with each tile at
    one fixed figure lost the seen long causal calls of 3-8 heads by 30-60 % (WALK_COPIES);
    each sequence running beside the others costs the L2 more than its tiles (its programs
    drifting against the walk's common steps, or its stream's conflicts in the L2's hashed
    sets: the records do not tell which; reports/impl-validation/impl13.md)."""
    return WALK_COPIES_ONE + WALK_COPIES_PER_E * math.log(max(1.0, live))
