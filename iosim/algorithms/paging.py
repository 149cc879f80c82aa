"""Paged KV cache: the block-table entries a kernel reads, summed exactly over its programs.

A paged cache (vLLM PagedAttention, FlashInfer, FlashAttention-2 `flash_attn_with_kvcache(...,
block_table=...)`) stores each request's keys and values in pages of P tokens anywhere in a pool;
an int32 block table [batch, ⌈N_kv/P⌉] names the page holding each run of P tokens. iosim's rule
(what a tiled kernel over a paged cache does, FA2 flash_fwd_kernel.h: before each K/V tile it
reads `block_table[n_block * kBlockN / page_block_size]` and moves its pointers to that page):

    each K/V tile of rows [s, e) reads the block-table entries of the pages it spans,
        ⌊(e − 1)/P⌋ − ⌊s/P⌋ + 1 of them, one int32 each, shared by its K and V loads.

So a tile of B_c rows over pages smaller than it reads ⌈B_c/P⌉ entries (one more where it
straddles a page boundary), pages larger than a tile are re-read by every tile inside them, and
the partial last page costs one entry like any other. The K and V bytes are the same as for a
contiguous cache: a tile gathers its rows page by page, but reads each row once.

Closed form over a run of key blocks [a, b) of one program (b > a): the pages its tiles span are
    (b − a) + ⌊(e_{b−1} − 1)/P⌋ − ⌊a·B_c/P⌋ − (⌊(b − 1)·B_c/L⌋ − ⌊a·B_c/L⌋),
e_{b−1} = min(b·B_c, N_kv) and L = lcm(B_c, P): the page boundaries strictly inside the run, less
those that fall on a tile boundary (multiples of L), each add one entry. Programs are summed
with numpy over (row block, split) pairs; a sweep evaluates each point in turn.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from iosim.algorithms.blocks import cdiv, visited_kv_blocks
from iosim.algorithms.loopnest import Access
from iosim.errors import IosimError, arg
from iosim.inputs.ints import Int, is_array
from iosim.inputs.workload import Workload

PAGED_CITE = ("FA2 flash_fwd_kernel.h: block_table[n_block·kBlockN / page_block_size] before "
              "each K/V tile (one int32 per page it spans)")

TABLE_TENSOR = "block_table"
"""The block table's name in the counts (one int32 per page of each request)."""


def tile_pages(start: Int, stop: Int, page_size: Int) -> Int:
    """Pages that rows [start, stop) of a request's KV cache span (stop > start)."""
    return (stop - 1) // page_size - start // page_size + 1


def run_pages(first: Any, stop: Any, block_kv: int, n_kv: int, page_size: int) -> Any:
    """Σ over key blocks j in [first, stop) of the pages tile j spans (0 where stop <= first);
    numpy arrays of runs, or ints."""
    a, b = np.asarray(first, dtype=np.int64), np.asarray(stop, dtype=np.int64)
    lcm = math.lcm(block_kv, page_size)
    last = np.minimum(b * block_kv, n_kv)
    pages = ((b - a) + (last - 1) // page_size - (a * block_kv) // page_size
             - ((b - 1) * block_kv // lcm - (a * block_kv) // lcm))
    return np.where(b > a, pages, 0)


def page_entries(n_q: Int, n_kv: Int, block_q: Int, block_kv: Int, causal: Any, splits: Int,
                 page_size: Int, *, split: bool) -> Int:
    """Block-table entries one (batch, head) of a query-outer kernel reads: Σ over its programs
    (row block i, split k) of the pages of the key blocks it visits, [k·nb, min((k+1)·nb, n_i))
    (nb = ⌈T_c/splits⌉; without splitting, [0, n_i))."""
    if is_array(n_q, n_kv, block_q, block_kv, causal, splits, page_size):
        each = np.vectorize(lambda *v: _entries(*(int(x) for x in v[:-1]), split=bool(v[-1])),
                            otypes=[np.int64])
        return each(n_q, n_kv, block_q, block_kv, causal, splits, page_size, split)
    return _entries(int(n_q), int(n_kv), int(block_q), int(block_kv), int(bool(causal)),
                    int(splits), int(page_size), split=split)


def _entries(n_q: int, n_kv: int, block_q: int, block_kv: int, causal: int, splits: int,
             page_size: int, *, split: bool) -> int:
    if page_size <= 0:
        return 0
    t_c = cdiv(n_kv, block_kv)
    n_i = np.asarray(visited_kv_blocks(n_q, n_kv, block_q, block_kv, bool(causal)),
                     dtype=np.int64)
    if not split or splits <= 1:
        return int(run_pages(0, n_i, block_kv, n_kv, page_size).sum())
    nb = cdiv(t_c, splits)
    lo = (np.arange(splits, dtype=np.int64) * nb)[None, :]
    hi = np.minimum(lo + nb, n_i[:, None])
    return int(run_pages(np.broadcast_to(lo, hi.shape), hi, block_kv, n_kv, page_size).sum())


def block_table_read(workload: Workload, cite: str) -> tuple[Access, ...]:
    """The block-table access of a paged workload's K/V tile loads (before them), else none."""
    if workload.page_size is None:
        return ()
    return (Access(TABLE_TENSOR, "read", "inner", "kv", "1", cite, element="i32",
                   per_page=True),)


def refuse_paged(algorithm: str, workload: Workload, *, why: str) -> None:
    """Raises for a paged workload that `algorithm` does not model (`why`: what to use)."""
    if workload.page_size is not None:
        raise IosimError(f"{algorithm} does not read a paged KV cache ({why}); drop "
                         f"{arg('page_size')} or use flash2 or splitkv", param="page_size")
