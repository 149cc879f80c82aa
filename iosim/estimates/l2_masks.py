"""The L2 model's shared tiles under a sliding window or packed sequences (algorithms/masks.py).

Without a mask every program of a head sweeps the same prefix of K/V (l2.py's reuse distances).
Under a mask program i reads the band [lo_i, hi_i) of inner tiles, and the bands of programs
that run side by side overlap. The rule, in l2.py's terms (LRU, SHARED_COPIES copies of a
shared tile, P = min(concurrent, programs) programs launched in grid order), for the distance
between two programs' reads of a shared tile:

  * staggered: where the first wave's programs have unequal lengths (a window's ramp at the
    start of a sequence, causal lengths), they finish one by one and their successors run
    staggered; as l2.py's causal programs, between two programs' reads of a tile the running
    ones advance about one program's length L (its band of tiles) and swap their own tiles:
    distance = L tiles + P programs' own tiles;
  * in step: programs of one length start together; consecutive outer blocks read a shared tile
    δ = lo_{i+1} − lo_i steps apart, in which the other programs read (P − 1)·δ tiles and
    (P − 1)·δ/L of them read and write their own tiles.

If the distance fits in the L2, every inner tile a unit (a KV head for K/V, a query head
otherwise) visits comes from DRAM once: passes = the visited rows over all rows of the tensor;
otherwise at every visit (the L2-oblivious count, × the query heads reading a KV head's tile).
All or nothing, like the LRU's hit pattern per tile: tests/test_masks.py holds it to the
simulation (l2_simulate.py, the model's definition) where the regime is clear; partial regimes
differ (up to 2.4× over the simulation in the cases tried). A first model, to be held to Nsight
Compute on the H200 (issue 14); docs/variants-masks.md says so.
"""

from __future__ import annotations

import numpy as np

from iosim.algorithms.closedform import kernel_blocks
from iosim.algorithms.loopnest import KV_HEAD_TENSORS, Kernel, tensor_bytes
from iosim.algorithms.masks import kv_blocks, row_blocks
from iosim.estimates.l2_model import SHARED_COPIES, shared_tile
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload


def masked_shared_passes(kernel: Kernel, workload: Workload, tiling: Tiling | None,
                         capacity: float, concurrent: int, own_bytes: float
                         ) -> tuple[float, str] | None:
    """(DRAM passes over the shared inner tensors, as a multiple of their size, and why): the
    visited rows once, or every visit (the oblivious count); None when the kernel has no
    shared inner tensor. `own_bytes`: one program's own tiles (read at its start plus written
    at its end)."""
    w = workload
    shared = [a for a in kernel.accesses if shared_tile(kernel, a)]
    if not shared or kernel.loop is None:
        return None
    block_q, block_kv = kernel_blocks(kernel, tiling, w.n, w.n_kv)
    rb = row_blocks(w.n, w.n_kv, block_q, block_kv, w.causal, w.window, w.seqlens, w.packing)
    kb = kv_blocks(rb, block_kv)
    if kernel.loop == "q":
        # outer: row blocks; inner: key blocks, numbered over every sequence in order
        first_kv = np.concatenate([[0], np.cumsum(rb.t_c)[:-1]])[rb.seq]
        lo, hi = rb.lo + first_kv, rb.hi + first_kv
        tiles = kb.stop - kb.start
        visited = int(tiles[kb.last > kb.first].sum())
        visits = int((tiles * (kb.last - kb.first)).sum())  # Σ over visited pairs of c_j
        total, block = w.n_kv, block_kv
    else:
        # outer: key blocks; inner: the runs of row blocks that visit them
        lo, hi = kb.first, kb.last
        rows = rb.stop - rb.start
        marks = np.zeros(rows.shape[0] + 1, dtype=np.int64)  # +1 at each run's start, −1 after
        np.add.at(marks, lo, 1)
        np.add.at(marks, hi, -1)
        seen = np.cumsum(marks)[:-1] > 0
        visited = int(rows[seen].sum())
        visits = int((rows * (rb.hi - rb.lo)).sum())  # Σ over visited pairs of r_i
        total, block = w.n, block_q
    per_kv = any(a.per_kv_head or a.tensor in KV_HEAD_TENSORS for a in shared)
    group = w.group_size if per_kv else 1
    units = w.batch * w.heads // group
    running = min(concurrent, units * lo.shape[0] * group)
    # consecutive outer blocks whose bands overlap read the shared tiles δ = lo_{i+1} − lo_i
    # steps apart when they run in step; in those steps every running program reads δ tiles
    overlap = hi[:-1] > lo[1:]
    delta = int((lo[1:] - lo[:-1])[overlap].max()) if overlap.any() else 0
    lengths = hi - lo
    first = lengths[: min(running, lengths.shape[0])]
    # a first wave of unequal programs (the window's ramp at the sequence start) finishes one
    # by one, so the next programs start δ apart and read each tile at the same time (l2.py's
    # staggered stream); programs of one length start and run in step
    staggered = bool((first != first[0]).any())
    row_bytes = sum(tensor_bytes(a, w, per_head=True) for a in shared) / total
    tile = SHARED_COPIES * block * row_bytes
    mean_steps = max(1.0, float(lengths.mean()))
    if staggered:
        # as l2.py's staggered causal programs: between two programs' reads of a tile the
        # running ones advance about one program's length (its band) and swap their own tiles
        distance = tile * mean_steps + running * own_bytes
    else:
        # in step: P·δ tiles, and P·δ/L programs' own tiles (read and written once in L steps)
        distance = max(1, running - 1) * max(1, delta) * (tile + own_bytes / mean_steps)
    if distance > capacity:
        return visits * group / total, (f"re-read by every program: {running} programs read "
                                        f"{distance / 2**20:.1f} MiB between two programs' "
                                        f"reads of a tile > L2")
    how = "staggered" if staggered else "in step"
    return visited / total, (f"read once per head: {running} programs {how} read "
                             f"{distance / 2**20:.1f} MiB between two programs' reads of a tile")
