"""The tile walk of a kernel under a sliding window or packed sequences (masks.py).

The same loops as tilewalk._walk_kernel, over the row blocks and key blocks of masks.py: a
query-outer kernel visits key blocks lo_i .. hi_i − 1 of row block i's own sequence (split k
of a split-KV kernel the ones in [k·nb, (k+1)·nb)); a key-outer kernel visits the run of row
blocks that see key block j. Outer tiles are loaded once per outer block, as without a mask
(an empty split loads nothing: FA2 exits early). Tiles of a packed sequence start at its own
first token. Head packing never applies under a mask (splitkv.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from iosim.algorithms.closedform import kernel_blocks
from iosim.algorithms.loopnest import Kernel
from iosim.algorithms.masks import kv_blocks, row_blocks
from iosim.algorithms.tilewalk import TileAccess, _WalkGeometry
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload


def walk_masked_kernel(kernel: Kernel, workload: Workload, tiling: Tiling | None
                       ) -> Iterator[TileAccess]:
    """Every tile load and store of one tiled kernel under the workload's mask, in loop order."""
    assert not kernel.pack_heads, "head packing does not apply under a mask"
    w = workload
    block_q, block_kv = kernel_blocks(kernel, tiling, w.n, w.n_kv)
    splits = tiling.splits if tiling and kernel.split else 1
    rb = row_blocks(w.n, w.n_kv, block_q, block_kv, w.causal, w.window, w.seqlens, w.packing)
    kb = kv_blocks(rb, block_kv)
    rows = list(zip(rb.start.tolist(), rb.stop.tolist(), strict=True))
    keys = list(zip(kb.start.tolist(), kb.stop.tolist(), strict=True))
    seq_first_kv = [0]  # global index of each sequence's key block 0
    for t_c in rb.t_c.tolist()[:-1]:
        seq_first_kv.append(seq_first_kv[-1] + t_c)
    nb = -(-int(rb.t_c.max()) // splits)
    geometry = _WalkGeometry(w, block_q, block_kv, False)
    place = {where: [a for a in kernel.accesses if a.where == where]
             for where in ("prologue", "outer", "inner", "outer_end", "epilogue")}
    for b in range(w.batch):
        for h in range(w.heads):
            for access in place["prologue"]:
                yield from geometry.whole(kernel, access, b, h, tiling.splits if tiling else 1)
            if kernel.loop == "q":
                for i, (q0, q1) in enumerate(rows):
                    base = seq_first_kv[int(rb.seq[i])]
                    lo, hi = int(rb.lo[i]), int(rb.hi[i])
                    for k in range(splits):
                        mine = range(max(lo, k * nb), min(hi, (k + 1) * nb)) if kernel.split \
                            else range(lo, hi)
                        if not kernel.split or len(mine):
                            for access in place["outer"]:
                                yield from geometry.emit_rows(kernel, access, b, h, q0, q1, k)
                        for j in mine:
                            k0, k1 = keys[base + j]
                            for access in place["inner"]:
                                start, stop = (q0, q1) if access.rows == "q" else (k0, k1)
                                yield from geometry.emit_rows(kernel, access, b, h, start, stop, k)
                        for access in place["outer_end"]:
                            yield from geometry.emit_rows(kernel, access, b, h, q0, q1, k)
            else:
                for j, (k0, k1) in enumerate(keys):
                    for access in place["outer"]:
                        yield from geometry.emit_rows(kernel, access, b, h, k0, k1, 0)
                    for i in range(int(kb.first[j]), int(kb.last[j])):
                        q0, q1 = rows[i]
                        for access in place["inner"]:
                            start, stop = (k0, k1) if access.rows == "kv" else (q0, q1)
                            yield from geometry.emit_rows(kernel, access, b, h, start, stop, 0)
                    for access in place["outer_end"]:
                        yield from geometry.emit_rows(kernel, access, b, h, k0, k1, 0)
            for access in place["epilogue"]:
                yield from geometry.whole(kernel, access, b, h, tiling.splits if tiling else 1)
