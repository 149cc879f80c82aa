"""Decoding's DRAM bytes from the order in which a split launch's programs read and write.

Two rules for a decoding step (one query row per request and head), each a property of the
grid's launch order (the split index is the fastest grid axis in FA2's flash_fwd_splitkv and in
our kernels, calibrate/kernels_variants.py, kernels_mla_fp8.py) and of LRU on the L2, with the
cutoff of estimates/l2_cutoff.py (no constant of their own):

1. **A query tile is read once per row block, not once per split** (`query_once`). The S
   splits of one (request, KV head, row block) are S consecutive programs: they load the same
   Q_i at about the same time, so all but the first load hit in the L2 (its reuse distance is
   a few programs' key chunks). The L2-oblivious count charges Q_i S times; for MLA at 128 heads
   (Q 576 columns) and 32 splits that is 31 extra copies of a 1.5 MB tensor. Measured on the
   H200 (tests/data/h200-variants.json, sections mla, mla_fresh, mla_fresh2: ncu DRAM reads of
   the split kernel): the latent once plus Q once at every split count where no row block
   re-reads the latent (e.g. mla-g-b1-60000-h128 at 64 splits: 69.6 MB read, latent 69.1 MB,
   where the per-split Q count gave 78.4 MB).

2. **The partial states come back from the L2 only if they survive the stream after them**
   (`states_reread_share`). The split kernel writes each program's fp32 partial output and
   log-sum-exp at its end; the combine (merge) reads them in the same request order right
   after. Programs of equal length run in waves (estimates/l2.py's schedule) and write their
   states together at a wave's end; between the write of a state at the end of wave w and its
   read, the L2 sees the reads of every program of the later waves (and of later split
   kernels: cascade's suffix after its prefix), X_after(w) bytes (X: the split kernels' DRAM
   bytes other than states — the key/value or latent stream, Q), and the states themselves:
   those written after it and those the combine reads before it, S_w in all. Its reuse
   distance is therefore D(w) = S_w + X_after(w), and the combine re-reads from DRAM the
   share Σ_w (states of wave w / S_w) · P_miss(D(w)) (P_miss: l2_cutoff.miss_probability).
   One wave: D = S_w, the old rule's "while they fit", made gradual. Until issue 14's
   var7 the states were read back free whenever they fit in the L2 (S_w ≤ L2), which missed
   MLA at 128 heads and 8-32 splits by 13-20 %: ncu saw the combine read 38-72 MB of 50-84 MB
   of states from DRAM (mla-f-b24-6000-h128, mla-f-b12-20000-h128, mla-g-b10-9000-h128).

3. **Row blocks that a wave boundary parts read their key chunk twice** (`straddle_rereads`).
   Where the g query heads of a KV head need RB > 1 row blocks (MLA's 128 heads in 32-row
   tiles, MQA), shared_prefix_dram.row_blocks_once charges their common chunk once: they are
   Δ = kv_heads · S programs apart (grid: split fastest, then KV head, then request · row
   block) and run together. Programs of equal length run in lockstep waves of W; a pair
   (rb, rb + 1) whose positions a wave boundary separates is read a wave apart, after the
   other chunks of that wave passed through the L2 (W / RB chunks, the wave's distinct K/V
   bytes), and misses with l2_cutoff's probability at that reuse distance. Each of the
   ⌈P/W⌉ − 1 boundaries parts min(Δ, W) · (RB − 1)/RB pairs (the pairs (x, x + Δ) that
   straddle it, less the last row block's, which has no successor), at most every pair. Seen
   on the H200: mla-f-b12-20000-h128 at 16 splits (768 programs, W = 264: ncu read the
   latent 1.26 times), mla-f-b24-6000-h128 at 8 (1.09), mla-g-b10-9000-h128 at 32 (1.17),
   one wave (256 programs) ≤ 1.06. The same count over requests sharing a prefix is not
   applied: its distances differ (benchmarks/prefix_l2_flip.py); estimates/prefix_waves.py
   counts that case.

The rules are applied in estimates/l2.py dram_estimate with shared_prefix_dram's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms.closedform import Dims, kernel_programs
from iosim.algorithms.loopnest import Kernel, tensor_bytes
from iosim.estimates.l2_cutoff import (
    miss_probabilities,
    miss_probability,
    never_miss_bytes,
    sure_miss_bytes,
)
from iosim.estimates.l2_model import DramTerm
from iosim.inputs.ints import both, cdiv, imax, imin, is_array, select
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

QUERY_NOTE = "decoding: the splits of a row block are adjacent programs: Q read once"
STATES_NOTE = ("partial states: read back from L2 by the next kernel, the share evicted by "
               "the stream after them from DRAM")


def query_once(terms: Sequence[DramTerm], kernels: Sequence[Kernel],
               workload: Workload) -> tuple[DramTerm, ...]:
    """`terms` with a decoding split kernel's query reads charged at Q's compulsory bytes
    (rule 1 of the module docstring); unchanged for a prefill or a kernel without splits."""
    if workload.n != 1:
        return tuple(terms)
    compulsory: dict[tuple[str, str], int] = {}
    for k in kernels:
        for a, size in zip(k.accesses, query_compulsory(k, workload), strict=True):
            if size is not None:
                compulsory[(k.name, a.tensor)] = size
    out = []
    for t in terms:
        size = compulsory.get((t.kernel, t.tensor)) if t.op == "read" else None
        if size is not None and t.bytes > size:
            t = replace(t, bytes=size, note=QUERY_NOTE)
        out.append(t)
    return tuple(out)


def query_compulsory(kernel: Kernel, workload: Any) -> list[Any]:
    """Per access of `kernel`, in order: the compulsory bytes query_once charges it at most (a
    split kernel's read of a query tile every split shares), else None. Ints, or int arrays
    over a sweep's points (analysis/split_choice_grid.py) — the one rule for both."""
    out: list[Any] = []
    for a in kernel.accesses:
        if kernel.split and a.op == "read" and a.rows == "q" and not a.per_split and not a.scale:
            size = tensor_bytes(a, workload)
            out.append(size.astype(np.int64) if is_array(size) else int(size))
        else:
            out.append(None)
    return out


def state_writer_grids(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                       concurrent: int) -> list[tuple[str, int, int]] | None:
    """(name, programs, programs at once) of each split kernel, in launch order, for a
    decoding step (None otherwise, or where a grid is not modelled)."""
    if workload.n != 1 or tiling is None:
        return None
    dims = Dims.of(workload, tiling)
    grids = []
    for k in kernels:
        if not k.split:
            continue
        programs = kernel_programs(k, dims)
        if programs is None:
            return None
        grids.append((k.name, int(programs), int(concurrent)))
    return grids


STRADDLE_NOTE = ("read by each of the row blocks of one request and KV head together, from "
                 "DRAM once, and again where a wave boundary parts them")


class RowBlockGrid(Record):
    """A decoding split kernel's grid: requests × KV heads × row blocks × splits programs, over
    `key_blocks` key blocks per request (⌈⌈T_c/S⌉⌉ whole blocks a split; the last splits may be
    empty). Ints, or arrays over a sweep's points and split counts."""

    requests: Any
    kv_heads: Any
    row_blocks: Any
    splits: Any
    key_blocks: Any


def straddle_rereads(grid: RowBlockGrid, kv_bytes: Any, concurrent: Any,
                     capacity: float) -> Any:
    """Extra DRAM bytes of K and V (`kv_bytes`: them read once) where wave boundaries part
    the row blocks of one chunk (rule 3 of the module docstring). Ints and floats, or arrays
    over a sweep's points and split counts (analysis/split_choice_grid.py: `grid`'s fields
    then hold arrays) — the one rule for both, the same doubles."""
    rb, slots = grid.row_blocks, imax(1, concurrent)
    programs = grid.requests * grid.kv_heads * rb * grid.splits
    boundaries = cdiv(programs, slots) - 1
    per_split = cdiv(grid.key_blocks, grid.splits)
    chunks = grid.requests * grid.kv_heads * cdiv(grid.key_blocks, imax(1, per_split))
    applies = both(both(rb > 1, boundaries > 0), both(chunks > 0, kv_bytes > 0))
    if not is_array(applies) and not applies:
        return 0.0
    spacing = grid.kv_heads * grid.splits
    pairs = chunks * (rb - 1)
    parted = imin(pairs, boundaries * imin(spacing, slots) * (rb - 1) / rb)
    chunk = kv_bytes / imax(1, chunks)
    wave = imin(kv_bytes, slots / rb * chunk)
    return select(applies, parted * chunk * miss_probabilities(wave, capacity), 0.0)


class Writer(Record):
    """One kernel that writes partial states, in launch order: its DRAM reads other than
    states (`stream`), the states it writes, its programs and how many run at once."""

    stream: float
    states: float
    programs: int
    concurrent: int


def states_reread_share(writers: Sequence[Writer], capacity: float) -> float:
    """The share of partial states the combine reads from DRAM (rule 2 of the module
    docstring): each writer's programs run in waves of `concurrent` and write their states as
    they end, so a state written at the end of wave w is followed by the stream of the
    programs after that wave and of every later writer, and by the states themselves; each
    wave's states weighted by its programs."""
    written = sum(w.states for w in writers)
    if written <= 0:
        return 0.0
    missed = 0.0
    later_kernels = sum(w.stream for w in writers)
    for w in writers:
        later_kernels -= w.stream
        missed += w.states * wave_miss_share(w.stream, w.programs, w.concurrent,
                                             written, later_kernels, capacity)
    return missed / written


WAVE_MARGIN = 2
"""Waves on each side of the ones whose reuse distance lies inside l2_cutoff's tails that
wave_miss_share evaluates one by one (a margin for rounding: the waves beyond it miss surely,
or surely not)."""


def wave_miss_share(stream: Any, programs: Any, concurrent: Any, written: Any, later: Any,
                    capacity: float) -> Any:
    """Σ_w (programs of wave w / programs) · P_miss(written + later + stream · (programs after
    wave w) / programs): one writer's share of states re-read from DRAM (states_reread_share).
    The waves whose reuse distance is beyond l2_cutoff's upper tail (the first ones) miss
    surely and count their programs; those below its lower tail not at all; the few between
    are summed wave by wave. Ints and floats, or arrays over a sweep's points and split counts
    (analysis/split_choice_grid.py) — the one rule for both, the same doubles (each element's
    terms added in the same order)."""
    p, slots = imax(1, programs), imax(1, concurrent)
    waves = cdiv(p, slots)
    base = written + later
    stream = stream.astype(np.float64) if is_array(stream) else float(stream)
    # the first wave whose distance may fall inside the upper tail, and the first past the
    # lower one: r_k = base + stream · (p − (k + 1) · slots) / p, decreasing in k
    spread = stream * slots / p
    safe = select(spread > 0, spread, 1.0)

    def wave_at(distance: float) -> Any:
        return (base + stream - distance) / safe - 1

    first = select(spread > 0, wave_at(sure_miss_bytes(capacity)) - WAVE_MARGIN, 0)
    last = select(spread > 0, wave_at(never_miss_bytes(capacity)) + 1 + WAVE_MARGIN, waves)
    first = imin(imax(_floor(first), 0), waves - 1)
    last = imin(imax(_ceil(last), first), waves)
    share = first * slots / p  # the waves before `first`: each full, each a sure miss
    if not is_array(share):
        for wave in range(first, last):
            ended = min(p, (wave + 1) * slots)
            miss = miss_probability(base + stream * (p - ended) / p, capacity)
            share = share + (ended - wave * slots) / p * miss
        return share
    # arrays: the same sum, wave by wave, over the elements whose window is still open
    shape = np.broadcast(share, first, last, p, slots, base, stream).shape
    total, lo, hi, pa, sa, ba, st = (
        np.broadcast_to(v, shape).ravel() for v in (share, first, last, p, slots, base, stream))
    total = total.astype(np.float64)  # a copy, filled in below
    open_ = np.flatnonzero(hi > lo)
    offset = 0
    while open_.size:
        pe, se = pa[open_], sa[open_]
        at = lo[open_] + offset
        ended = np.minimum(pe, (at + 1) * se)
        miss = miss_probabilities(ba[open_] + st[open_] * (pe - ended) / pe, capacity)
        total[open_] = total[open_] + (ended - at * se) / pe * miss
        offset += 1
        open_ = open_[hi[open_] > lo[open_] + offset]
    return total.reshape(shape)


def _floor(x: Any) -> Any:
    return np.floor(x).astype(np.int64) if is_array(x) else math.floor(x)


def _ceil(x: Any) -> Any:
    return np.ceil(x).astype(np.int64) if is_array(x) else math.ceil(x)
