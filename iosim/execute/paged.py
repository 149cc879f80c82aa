"""A paged KV cache for the executor: K and V in a pool of pages, reached through a block table.

Written from how vLLM and FlashAttention-2 (`flash_attn_with_kvcache(..., block_table=...)`) lay
a paged cache out, not from iosim/algorithms/paging.py: the pool holds `batch · ⌈N_kv/P⌉` pages
of P rows for every KV head (the last page of each request partly filled, its tail never read);
the block table [batch, ⌈N_kv/P⌉] int32 names the pool page of each logical page. The pages are
placed in a deterministic shuffled order (a permutation seeded by the run's seed), so that a
kernel reading the cache contiguously would read the wrong keys and fail the output check.

A kernel loads a K/V tile of logical rows [k0, k1) as FA2 does: it reads the block-table entries
of the pages the tile spans (one read of entries ⌊k0/P⌋ .. ⌊(k1 − 1)/P⌋), then gathers the
tile's K rows and V rows from those pages. The gather is counted in elements and logged as the
tile the kernel addresses (request, KV head, logical rows), the record the tile walk yields.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.execute.hbm import InstrumentedHBM

Array = np.ndarray[Any, Any]

TABLE = "block_table"
PAGED_EXECUTORS = frozenset({"flash2", "splitkv"})
"""The executors that read K and V through a block table when the workload has a page size."""


def place_paged(hbm: InstrumentedHBM, inputs: dict[str, Array], page_size: int, seed: int,
                storage: Any) -> None:
    """Put K and V (batch, kv_heads, N_kv, d) into HBM as a shuffled page pool + block table."""
    batch, kv_heads, n_kv, _ = inputs["K"].shape
    pages = -(-n_kv // page_size)
    order = np.random.default_rng(seed + 7919).permutation(batch * pages)
    table = order.reshape(batch, 1, pages).astype(np.int32)
    for name in inputs:  # K, and V unless MLA's latent cache holds V inside K
        d = inputs[name].shape[-1]
        pool = np.zeros((1, kv_heads, batch * pages * page_size, d), dtype=storage)
        for b in range(batch):
            for p in range(pages):
                r0, r1 = p * page_size, min(n_kv, (p + 1) * page_size)
                at = int(table[b, 0, p]) * page_size
                pool[0, :, at:at + r1 - r0] = inputs[name][b, :, r0:r1]
        hbm.place(name, pool)
    hbm.place(TABLE, table)


def read_table(hbm: InstrumentedHBM, page_size: int | None, b: int, k0: int,
               k1: int) -> Array | None:
    """The block-table entries of the pages that rows k0..k1 of request b span (one read), or
    None for a contiguous cache."""
    if page_size is None:
        return None
    return hbm.read(TABLE, b, 0, k0 // page_size, (k1 - 1) // page_size + 1)


def read_rows(hbm: InstrumentedHBM, page_size: int | None, entries: Array | None, name: str,
              b: int, kv_head: int, k0: int, k1: int, cols: int | None = None) -> Array:
    """Rows k0..k1 of request b's K or V (their first `cols` columns when given): read directly
    from a contiguous cache, or gathered from the pages `entries` (read_table) name."""
    if page_size is None or entries is None:
        return hbm.read(name, b, kv_head, k0, k1, cols=cols)
    logical = np.arange(k0, k1)
    rows = (entries[logical // page_size - k0 // page_size].astype(np.int64) * page_size
            + logical % page_size)
    return hbm.gather(name, b, kv_head, k0, k1, rows, cols)
