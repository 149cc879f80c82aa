"""DRAM bytes of split-KV over a shared-prefix batch: the shared prefix comes from DRAM once.

Split-KV over each request's full KV (algorithms/segments.py) loads every request's copy of the
L prefix keys: B·L rows per KV head, which the exact count charges. But a shared-prefix cache
holds the prefix once — its pages are shared by every request's block table (vLLM's prefix
caching, SGLang's radix cache) — and programs that run together load the same rows, so all but
the first load hit L2. The DRAM estimate therefore charges the prefix once instead of B times,
for K and V of a ragged split-KV launch:

    DRAM(K) = L2-oblivious(K) − (B − 1) · L · d · kv_heads · bytes,  V likewise with d_v.

Where the prefix outgrows the L2 and the grid runs in many waves, later waves fetch it again:
the rule then undercounts (the H200 batch of 32 requests over a 16k prefix, 4,096 programs:
5.3× more DRAM bytes than the rule's). A wave-by-wave refinement fitted these same ten batches
worse (6 of 10 within ±10 %), so the simple rule stands until data apart from them judges one.
Issue 14's mla5 probed it under ncu (benchmarks/prefix_l2_probe_h200.py) and judged one on a
fresh probe (benchmarks/prefix_l2_judge.py: the prefix once per wave where its K and V exceed
half the L2): right for long key chunks, twice too many re-reads for short ones (6 of 7 fresh
points within ±10 % against 5 now, one +117 %), so not adopted (docs/variants-decoding.md).
Issue 14's var10 counts the later waves' re-reads over the launch order, the L2's partitions
and its soft cutoff (estimates/prefix_waves.py, applied after this rule by l2.py).

Measured on the H200 (tests/data/h200-variants.json, benchmarks/decode_choices_h200.py: ncu
DRAM bytes of a Triton split-KV kernel over a paged shared-prefix cache, 10 batches): the
L2-oblivious count was 1.07 to 32 times the DRAM bytes (median 2.2); this rule's estimate is
within ±10 % on 8 of the 10. The rule stands apart from the L2 model (l2.py, which leaves
split-KV at its L2-oblivious count): it is a property of the cache's layout, not of the tiles.

Cascade's prefix kernel (algorithms/cascade.py) reads the prefix once per query block of its
packed problem — ⌈B·g/B_r⌉ blocks per KV head (⌈B/B_r⌉ per head unpacked), which run together
over the same keys of each split — so DRAM sees it once there too:

    DRAM(K of cascade_prefix) = L2-oblivious(K) ÷ ⌈rows/B_r⌉,  V likewise;

its suffix kernel reads each request's own keys, which no other program reads: no rule. (Until
issue 14's var3 the split-KV rule above was applied to every ragged split kernel, cascade's
two included, which took B − 1 prefix copies off kernels that never read them: cascade's DRAM
estimate was 1 of 10 within ±10 %.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms.loopnest import Access, Kernel, tensor_bytes
from iosim.algorithms.packing import packed_problem, packs_heads
from iosim.algorithms.traffic import Term
from iosim.estimates.l2_model import DramTerm
from iosim.estimates.launch_order_dram import STATES_NOTE as LAUNCH_STATES_NOTE
from iosim.estimates.launch_order_dram import (
    STRADDLE_NOTE,
    RowBlockGrid,
    Writer,
    states_reread_share,
    straddle_rereads,
)
from iosim.inputs.ints import both, cdiv, either, imin, is_array, select
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import replace

NOTE = "shared prefix: its pages come from DRAM once, not once per request"
CASCADE_NOTE = "shared prefix: read by every query block of cascade's prefix kernel, from DRAM once"
SPLITKV_KERNEL = "splitkv_attn"
CASCADE_PREFIX_KERNEL = "cascade_prefix"


def cascade_prefix_blocks(workload: Workload, tiling: Tiling | None) -> int:
    """The query blocks of cascade's prefix kernel per (KV) head: ⌈B·g/B_r⌉ packed, else
    ⌈B/B_r⌉ (algorithms/cascade.py _problems)."""
    packed = packs_heads(1, workload.heads, workload.kv_heads)
    rows, _ = packed_problem(workload.batch, workload.heads, workload.kv_heads, packed)
    block_q = tiling.block_q if tiling is not None else rows
    return max(1, int(cdiv(int(rows), int(block_q))))


def prefix_once(terms: Sequence[DramTerm], kernels: Sequence[Kernel],
                workload: Workload, tiling: Tiling | None = None) -> tuple[DramTerm, ...]:
    """`terms` with the duplicate prefix reads taken off K and V: split-KV's B − 1 copies of
    the prefix, cascade's prefix kernel's reads by all but one of its query blocks (unchanged
    for any other workload or kernel)."""
    if workload.prefix_len is None or workload.batch < 2:
        return tuple(terms)
    width = {"K": workload.d, "V": workload.d_v}
    row = workload.prefix_len * workload.kv_heads * workload.element_bytes
    names = {k.name for k in kernels if k.segments and k.split}
    blocks = cascade_prefix_blocks(workload, tiling)
    out = []
    for t in terms:
        if t.tensor in width and t.op == "read":
            if t.kernel == SPLITKV_KERNEL and t.kernel in names:
                duplicate = (workload.batch - 1) * row * width[t.tensor]
                t = replace(t, bytes=max(0, t.bytes - duplicate), note=NOTE)
            elif t.kernel == CASCADE_PREFIX_KERNEL and blocks > 1:
                t = replace(t, bytes=-(-t.bytes // blocks), note=CASCADE_NOTE)
        out.append(t)
    return tuple(out)


ROW_BLOCK_KERNELS = frozenset({SPLITKV_KERNEL, "cascade_suffix"})
ROW_BLOCK_NOTE = ("read by each of the ⌈g/B_r⌉ row blocks of one request and KV head together, "
                  "from DRAM once")


def split_terms(kernel: Kernel, oblivious: Sequence[Term], workload: Workload,
                l2_bytes: float | None = None) -> list[DramTerm]:
    """A split-KV kernel (FA2's flash_fwd_splitkv_kernel): every program of a split reads
    its key chunk, but the programs sharing one chunk (a head's query blocks, adjacent in
    the grid; a group's query heads, packed into one tile when decoding) run together, so
    each chunk comes from DRAM once per KV head: K and V cost their compulsory bytes. ncu
    on the H200 (tests/data/h200-impl-launches-rw.csv, evicts around each call): decoding
    32/8 heads at 32,768 keys read 134.2 MB (K, V 134.2 MB); 8/1 heads x 4 at 131,072 keys
    134.3 MB (134.2 MB); chunked prefill 256 queries, 32/8 heads at 32,768 keys 156.5 MB
    (K, V 134.2 MB, Q 2.1 MB), where the L2-oblivious count charges 2.1 GB.

    A query block's tile Q_i is read by each of its splits; they are neighbours in one wave
    (FA2 splits only grids of under a wave), so where the whole kernel's compulsory bytes
    (`fits_in_l2`) fit in the L2, Q_i comes from DRAM once too: ncu on the H200 read
    exactly Q + K + V for the split-KV prefill calls of tiny grids (6 heads × 1,792, 2 × 4,608,
    1 × 10,240 causal: tests/data/h200-impl-dram3.csv, VALIDATION2 points 0-2), where the
    L2-oblivious count charged Q once per split. Otherwise the other tensors (Q, the partial
    outputs and statistics) keep their L2-oblivious count (`oblivious`: the kernel's
    L2-oblivious terms, in its accesses' order)."""
    fits = l2_bytes is not None and fits_in_l2(kernel, oblivious, workload, l2_bytes)
    charged = split_term_bytes(kernel, [t.bytes for t in oblivious], workload, l2_bytes, fits)
    out = []
    for access, term, dram in zip(kernel.accesses, oblivious, charged, strict=True):
        note = ("split-KV: each key chunk read once per KV head" if _key_chunk(kernel, access)
                else "split-KV: the splits of a query block read it together, and the kernel "
                "fits in L2: read once" if fits and _read_by_every_split(access)
                else "split-KV: the L2-oblivious count")
        out.append(DramTerm(kernel.name, access.tensor, access.op, dram, term.bytes, note))
    return out


def split_term_bytes(kernel: Kernel, oblivious: Sequence[Any], workload: Any,
                     l2_bytes: float | None, fits: Any = None) -> list[Any]:
    """The DRAM bytes split_terms charges each access of a split-KV kernel (in its accesses'
    order), from their L2-oblivious bytes `oblivious`: ints (one workload), or arrays over a
    sweep's points and split counts (analysis/split_choice_grid.py; `workload` then holds
    arrays) — the one rule for both. `fits`: fits_in_l2's answer where the caller has it."""
    if fits is None:
        fits = l2_bytes is not None and fits_in_l2(kernel, oblivious, workload, l2_bytes)
    out = []
    for access, moved in zip(kernel.accesses, oblivious, strict=True):
        if _key_chunk(kernel, access):
            out.append(imin(_rounded(tensor_bytes(access, workload, per_head=False)), moved))
        elif _read_by_every_split(access):
            once = imin(_rounded(tensor_bytes(access, workload, per_head=False)), moved)
            out.append(select(fits, once, moved))
        else:
            out.append(moved)
    return out


def _key_chunk(kernel: Kernel, access: Access) -> bool:
    """A read of the key axis's tiles (K_j, V_j, their block table and scales)."""
    return access.op == "read" and access.where == "inner" and access.rows != kernel.loop


def _read_by_every_split(access: Access) -> bool:
    """A read the splits of a query block share (Q_i), not a per-split partial."""
    return access.op == "read" and not access.per_split


def _rounded(size: Any) -> Any:
    """round(size): to an int, or an int array."""
    return np.rint(size).astype(np.int64) if is_array(size) else round(size)


def fits_in_l2(kernel: Kernel, oblivious: Sequence[Any], workload: Any,
               l2_bytes: float) -> Any:
    """Whether a split-KV kernel's compulsory bytes (each tensor it reads once, each it writes
    as written: its partial outputs per split) fit in the L2: then LRU evicts none of them
    while it runs, so its repeated reads and the combine's reads of its partial states hit.
    `oblivious`: the L2-oblivious Terms, or their bytes (ints or arrays: split_term_bytes)."""
    total: Any = 0
    for access, term in zip(kernel.accesses, oblivious, strict=True):
        moved = term.bytes if isinstance(term, Term) else term
        total = total + (moved if access.op == "write" else imin(
            moved, tensor_bytes(access, workload, per_head=False)))
    return total <= l2_bytes


def broadcast_rereads(kernel: Kernel, workload: Workload, l2_bytes: float) -> int:
    """Extra reads of a broadcast tensor (one copy, read by every (batch, head)) in a
    whole-tensor kernel that streams head by head: every head after the first finds it
    again unless the bytes one head's stream touches (each tensor's share of one head,
    the broadcast copy once) overflow the L2; then every head reads it from DRAM (LRU)."""
    heads = workload.batch * workload.heads
    per_head = sum({a.tensor: tensor_bytes(a, workload, per_head=True)
                    for a in kernel.accesses}.values())
    return 0 if per_head <= l2_bytes else heads - 1


def split_reads_once(kernel: Kernel, workload: Workload) -> bool:
    """Whether the L2 model charges `kernel`'s key-chunk reads once per KV head (l2.py's split
    rule: a split-KV kernel over one contiguous sequence per request, no mask): every program
    sharing a chunk runs beside the others, so the chunk comes from DRAM once."""
    return (kernel.split and not kernel.segments
            and not (workload.masked and kernel.loop is not None))


def row_blocks_once(terms: Sequence[DramTerm], kernels: Sequence[Kernel], workload: Workload,
                    tiling: Tiling | None, concurrent: int | None = None,
                    capacity: float | None = None) -> tuple[DramTerm, ...]:
    """`terms` with the K, V and block-table reads of a decoding kernel that packs the g query
    heads of a KV head (FA2's seqlenq_ngroups_swapped) charged once where g rows need more than
    one query tile: the ⌈g/B_r⌉ row blocks of one request, KV head and split are neighbours in
    the grid and read the same keys at about the same time, so all but the first hit in L2 (MQA
    over 16-row tiles, MLA's 128 heads over one latent head). Measured on the H200: MLA decode
    at 128 heads read the latent about once (reports/variants-h200.md), and so did MQA decode."""
    if tiling is None or workload.n != 1:
        return tuple(terms)
    g = workload.heads // workload.kv_heads
    blocks = int(cdiv(g, int(tiling.block_q))) if g > 1 else 1
    # a split kernel the L2 model already charges once per KV head (split_reads_once) has
    # no row blocks' copies left to take off
    packed = {k.name for k in kernels if k.name in ROW_BLOCK_KERNELS and k.pack_heads
              and not split_reads_once(k, workload)}
    if blocks <= 1:
        return tuple(terms)
    once = tuple(replace(t, bytes=-(-t.bytes // blocks), note=ROW_BLOCK_NOTE)
                 if t.kernel in packed and t.op == "read" and t.tensor in ("K", "V", "block_table")
                 else t for t in terms)
    split = next((k for k in kernels if k.name == SPLITKV_KERNEL and k.pack_heads), None)
    if concurrent is None or capacity is None or split is None or workload.prefix_len is not None:
        return once
    # the row blocks a wave boundary parts read their chunk again (launch_order_dram.py)
    kv = sum(t.bytes for t in once if t.kernel == SPLITKV_KERNEL and t.op == "read"
             and t.tensor in ("K", "V"))
    again = straddle_rereads(
        RowBlockGrid(requests=workload.batch, kv_heads=workload.kv_heads, row_blocks=blocks,
                     splits=int(tiling.splits or 1),
                     key_blocks=int(cdiv(workload.n_kv, int(tiling.block_kv)))),
        kv, concurrent, capacity)
    if again <= 0:
        return once
    return tuple(replace(t, bytes=t.bytes + round(again * t.bytes / kv), note=STRADDLE_NOTE)
                 if t.kernel == SPLITKV_KERNEL and t.op == "read" and t.tensor in ("K", "V")
                 else t for t in once)


PARTIAL_STATES = frozenset({"O_partial", "lse_partial", "O_prefix", "lse_prefix", "O_suffix",
                            "lse_suffix"})
"""The fp32 partial outputs and log-sum-exps that split-KV's split kernel (algorithms/splitkv.py)
and cascade's prefix and suffix kernels (algorithms/cascade.py) write and their combine or
merge kernel reads right after."""
STATES_NOTE = "partial states: read back from L2 by the next kernel (they fit in it)"
REREAD_NOTE = LAUNCH_STATES_NOTE


def states_from_l2(terms: Sequence[DramTerm], l2_bytes: float, workload: Workload,
                   grids: Sequence[tuple[str, int, int]] | None = None) -> tuple[DramTerm, ...]:
    """`terms` with the combine's (merge's) reads of the partial states charged no DRAM bytes
    where every state written fits in the L2: the split kernels' writes stay there (dirty) and
    the next kernel reads them there. Their writes still reach DRAM once, when evicted.
    Decoding steps (one query row per request), where the H200 records show it (the
    variants' decode and cascade points); a prefill only where the split kernel's DRAM bytes
    (all it reads and writes) fit in the L2 too: sdpa-flash's chunked prefill (256 query rows
    over 32,768 keys, 8.4 MB of states behind 134 MB of K, V) counted its combine's reads in
    DRAM (tests/data/h200-impl-launches-rw.csv), the split-KV prefill calls of tiny grids
    (5-11 MB of K, V and states) read none of them (tests/data/h200-impl-dram3.csv,
    VALIDATION2 points 0-2)."""
    written = sum(t.bytes for t in terms if t.tensor in PARTIAL_STATES and t.op == "write")
    if written and workload.n == 1 and grids is not None:
        # decoding: the share the stream after each state evicts (launch_order_dram.py)
        writers = [Writer(stream=sum(t.bytes for t in terms if t.kernel == name and t.op == "read"
                                     and t.tensor not in PARTIAL_STATES),
                          states=sum(t.bytes for t in terms if t.kernel == name and t.op == "write"
                                     and t.tensor in PARTIAL_STATES),
                          programs=programs, concurrent=concurrent)
                   for name, programs, concurrent in grids]
        share = states_reread_share([w for w in writers if w.states > 0], l2_bytes)
        return tuple(replace(t, bytes=round(t.oblivious_bytes * share), note=REREAD_NOTE)
                     if t.tensor in PARTIAL_STATES and t.op == "read" else t for t in terms)
    split = sum(t.bytes for t in terms if t.kernel == SPLITKV_KERNEL)
    if not states_stay_in_l2(written, split, l2_bytes, workload.n):
        return tuple(terms)
    return tuple(replace(t, bytes=0, note=STATES_NOTE)
                 if t.tensor in PARTIAL_STATES and t.op == "read" else t for t in terms)


def states_stay_in_l2(written: Any, split_bytes: Any, l2_bytes: float, n: Any) -> Any:
    """Whether states_from_l2 reads the partial states back from L2: the `written` bytes of
    them fit in it, and, beyond a decoding step (n query rows ≠ 1), the split kernel's DRAM
    bytes `split_bytes` too. Ints, or arrays (analysis/split_choice_grid.py)."""
    states = both(written > 0, written <= l2_bytes)
    return both(states, either(n == 1, both(split_bytes > 0, split_bytes <= l2_bytes)))
