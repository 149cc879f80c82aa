"""FA2's causal forward re-reads K and V: the walk in launch order against ncu's counts (no GPU).

    python benchmarks/fa2_descending_walk.py tests/data/h200-impl-dram7.csv validation6 [N_MIN]

Issue 11, open cause 1 (helper impl7, round 7): the long causal sdpa-flash calls read K and V
3-9 times over where the L2 model says once. FlashAttention-2's forward launches grid
(num_m_block, b, h), the query block fastest, in order (flash_fwd_launch_template.h:63-64;
flash_fwd_kernel.h compute_attn: m_block = blockIdx.x, no reversal), and each program walks its
key blocks from the last down ("We iterate over the blocks in reverse order",
compute_attn_1rowblock). iosim's Triton kernel launches the same grid but walks up, and its DRAM
at the same shapes is within 4 % (reports/impl-validation/dram.md).

This script runs that schedule tile by tile: `slots` programs at once (SMs × programs per SM,
the occupancy compare uses), each taking the next in launch order when one ends, all advancing
one key block per step; each re-read's reuse distance is the distinct bytes touched since the
block's last read (K_j and V_j of every program at `copies` lines per tile, plus the programs'
own Q_i and O_i), and it misses with l2_cutoff.miss_probability. It prints, per causal prefill
call of flash_fwd_kernel, the excess K/V bytes ncu counted beyond the model, those the walk
predicts at copies 1, 1.5 and 2, and the copies that would match (c*). Slow (a Python step per
tile: about a minute for the largest calls); evidence for docs/implementations.md, not a model.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.impl_dram_h200 import _set, judge
from iosim.algorithms.blocks import VisitedKvBlocks
from iosim.analysis.compare import compare
from iosim.estimates.l2_cutoff import FILL_SHARE, FILL_WIDTH, TAIL

MODELLED = {"Q", "K", "V", "O", "L", "spill (local memory)"}
"""The terms of one flash_fwd_kernel call (a split-KV call has others: not this walk)."""


class _Fenwick:
    """Prefix sums over access times (bytes of each key's latest access)."""

    def __init__(self, n: int) -> None:
        self.tree = [0.0] * (n + 1)

    def add(self, i: int, value: float) -> None:
        i += 1
        while i < len(self.tree):
            self.tree[i] += value
            i += i & -i

    def prefix(self, i: int) -> float:
        total = 0.0
        while i > 0:
            total += self.tree[i]
            i -= i & -i
        return total


def reuse_distances(w: Any, block_q: int, block_kv: int, slots: int
                    ) -> tuple[float, np.ndarray, np.ndarray]:
    """(bytes of one K_j + V_j tile, K/V bytes and own-tile bytes between consecutive uses of
    each re-read K/V tile) of the descending walk in launch order."""
    lengths = list(VisitedKvBlocks(w.n, w.n_kv, block_q, block_kv, w.causal))
    group = w.heads // w.kv_heads
    kv_tile = 2 * block_kv * w.d * w.element_bytes
    own = block_q * w.d * w.element_bytes
    programs = [(b, h // group, steps) for h in range(w.heads) for b in range(w.batch)
                for steps in lengths]
    clock_max = sum(p[2] for p in programs) + 2 * len(programs) + 1
    kv_bytes, own_bytes = _Fenwick(clock_max), _Fenwick(clock_max)
    last: dict[tuple[int, int, int], int] = {}
    kv_total = own_total = 0.0
    clock = 0
    out_kv: list[float] = []
    out_own: list[float] = []
    running: list[list[int] | None] = [None] * slots
    upcoming = 0
    while True:
        busy = False
        for s in range(slots):
            state = running[s]
            if state is None:
                if upcoming >= len(programs):
                    continue
                state = [upcoming, 0]
                running[s] = state
                upcoming += 1
                own_bytes.add(clock, own)  # Q_i
                own_total += own
                clock += 1
            busy = True
            b, kv_head, steps = programs[state[0]]
            key = (b, kv_head, steps - 1 - state[1])  # from the last key block down
            prev = last.get(key)
            if prev is not None:
                out_kv.append(kv_total - kv_bytes.prefix(prev + 1))
                out_own.append(own_total - own_bytes.prefix(prev + 1))
                kv_bytes.add(prev, -kv_tile)
                kv_total -= kv_tile
            kv_bytes.add(clock, kv_tile)
            kv_total += kv_tile
            last[key] = clock
            clock += 1
            state[1] += 1
            if state[1] >= steps:
                own_bytes.add(clock, own)  # O_i
                own_total += own
                clock += 1
                running[s] = None
        if not busy:
            return kv_tile, np.array(out_kv), np.array(out_own)


def missed_bytes(kv_tile: float, kv: np.ndarray, own: np.ndarray, copies: float,
                 capacity: float) -> float:
    """K/V bytes the re-reads miss at `copies` lines per tile (l2_cutoff.miss_probability)."""
    z = ((copies * kv + own) / capacity - FILL_SHARE) / FILL_WIDTH
    erf = np.vectorize(math.erf)
    p = np.where(z <= -TAIL, 0.0, np.where(z >= TAIL, 1.0, 0.5 * (1 + erf(z / math.sqrt(2)))))
    return float(kv_tile * p.sum())


def main() -> None:
    csv, set_name = Path(sys.argv[1]), sys.argv[2]
    n_min = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    points = _set(set_name)
    for r in judge(csv, set_name):
        w = points[r["index"]]
        if r["impl"] != "sdpa-flash" or not w.causal or w.n < n_min:
            continue
        est = compare(w, "h200", impl="sdpa-flash", profile="measured").algorithms[-1]
        assert est.dram is not None and est.tiling is not None
        terms = {t.tensor: t.bytes for t in est.dram.terms}
        if set(terms) - MODELLED:
            continue
        capacity = est.dram.l2_bytes
        kv_once = terms["K"] + terms["V"]
        excess = r["dram"] - sum(terms.values())
        kv_tile, kv, own = reuse_distances(w, est.tiling.block_q, est.tiling.block_kv,
                                           est.dram.concurrent_programs)
        at = {c: missed_bytes(kv_tile, kv, own, c, capacity) for c in (1.0, 1.5, 2.0)}
        lo, hi = 0.5, 2.5
        for _ in range(30):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if missed_bytes(kv_tile, kv, own, mid, capacity) < excess else (
                lo, mid)
        print(f"#{r['index']:2} b{w.batch} h{w.heads}/{w.kv_heads} N{w.n} d{w.d}: ncu "
              f"{r['dram'] / 1e6:7.1f} MB, model {sum(terms.values()) / 1e6:7.1f} MB; excess "
              f"{excess / 1e6:7.1f} MB = {excess / kv_once:4.1f} K/V passes; walk at copies 1 / "
              f"1.5 / 2: {at[1.0] / 1e6:7.1f} / {at[1.5] / 1e6:7.1f} / {at[2.0] / 1e6:8.1f} MB; "
              f"c* {lo:.2f}", flush=True)


if __name__ == "__main__":
    main()
