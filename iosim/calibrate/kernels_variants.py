"""Decoding kernels for the issue-14 measurements: split-KV over a paged or contiguous KV cache,
the logsumexp combine, and cascade (shared-prefix) attention built from the two (our own code).

    decode_split    program (split k, KV head h, sequence s · row block):
                      load the row block's query rows Q (the g query heads of KV head h, or for a
                      shared prefix every request's g heads: rows = batch · g)
                      for each key block j of split k (keys [k·chunk, min((k+1)·chunk, L_s))):
                          paged: page = block_table[s, key // P]; row = page·P + key mod P
                          load K_j, V_j (BLOCK_N rows of head h); online softmax (FA2 Alg. 1)
                      one split in all: write O (input dtype) and L (fp32) directly
                      else: write O_partial[k] (fp32) and lse_partial[k] (fp32); a split with no
                      key writes 0 and −∞ without loading K or V
    decode_combine  program per query row: read every split's lse, then every split's O_partial,
                    write O = Σ_k e^{lse_k − L} O_k and L = log Σ_k e^{lse_k}
    cascade         prefix pass (decode_split over the shared prefix with rows = batch · g),
                    suffix pass (decode_split over each request's own suffix pages), both into one
                    O_partial buffer, then one decode_combine over all their splits

Layouts: Q (batch, kv_heads, g, d); KV cache paged as vLLM's (pages, P, kv_heads, d), contiguous
as (batch, n_kv, kv_heads, d); block table int32 (sequences, pages per sequence). The chunk of
keys per split is a whole number of key blocks, ⌈⌈L_max/BLOCK_N⌉/splits⌉ · BLOCK_N, as FA2's
`n_blocks_per_split`; split counts that leave the last splits empty still launch them.

torch and triton are imported at module level; only the device scripts and the interpreter tests
import this module.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

from iosim.calibrate.kernels import LOG2E, KernelInputError
from iosim.calibrate.kernels_common import (
    _iosim_key_rows,
    _iosim_softmax_start,
    _iosim_softmax_step,
    _iosim_split_keys,
    _iosim_split_result,
)
from iosim.record import Record


class DecodeConfig(Record):
    """The split kernel's tiles: BLOCK_R query rows (padded to at least 16 for tl.dot) and
    BLOCK_N keys per step."""

    block_r: int = 16
    block_n: int = 64
    num_warps: int = 4
    num_stages: int = 2


@triton.jit
def _iosim_decode_split_kernel(
    q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, o_ptr, lse_ptr,
    rows_per_seq, group, chunk, split_base, row_blocks,
    stride_qb, stride_qh, stride_qg,
    stride_kp, stride_kn, stride_kh,
    stride_tb,
    stride_os, stride_ob, stride_oh, stride_og,
    stride_ls, stride_lb, stride_lh,
    qk_scale,
    PAGE: tl.constexpr, D: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
):
    split = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    seq = tl.program_id(2) // row_blocks
    row_block = tl.program_id(2) % row_blocks
    rows = row_block * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < rows_per_seq
    # a row of sequence `seq` is query head g of request b (a shared prefix: every request's rows)
    b = (seq * (rows_per_seq // group) + rows // group).to(tl.int64)
    g = rows % group
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    lo, hi = _iosim_split_keys(lens_ptr, seq, split, chunk)
    acc, l_i, m_i = _iosim_softmax_start(BLOCK_R, D)
    if lo < hi:
        # FA2 Alg. 1 line 4: load Q_i (once per split)
        q = tl.load(q_ptr + b[:, None] * stride_qb + head * stride_qh + g[:, None] * stride_qg
                    + offs_d[None, :], mask=row_ok[:, None], other=0.0)
        for start in range(lo, hi, BLOCK_N):
            keys = start + offs_n
            key_ok = keys < hi
            # paged: the block table, one int32 per page the tile touches (per key row here)
            row_off = _iosim_key_rows(table_ptr, stride_tb, seq, keys, key_ok, stride_kp,
                                      stride_kn, PAGE)
            kv_off = row_off[:, None] + head * stride_kh + offs_d[None, :]
            # FA2 Alg. 1 line 7: load K_j, V_j of this split
            k = tl.load(k_ptr + kv_off, mask=key_ok[:, None], other=0.0)
            qk = tl.dot(q, tl.trans(k)) * qk_scale
            qk = tl.where(key_ok[None, :], qk, -float("inf"))
            v = tl.load(v_ptr + kv_off, mask=key_ok[:, None], other=0.0)
            acc, l_i, m_i = _iosim_softmax_step(acc, l_i, m_i, qk, tl.maximum(m_i, tl.max(qk, 1)),
                                                v)
    out, lse = _iosim_split_result(acc, l_i, m_i)
    s = (split_base + split).to(tl.int64)
    o_off = s * stride_os + b * stride_ob + head * stride_oh + g * stride_og
    tl.store(o_ptr + o_off[:, None] + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=row_ok[:, None])
    tl.store(lse_ptr + s * stride_ls + b * stride_lb + head * stride_lh + g, lse, mask=row_ok)


@triton.jit
def _iosim_decode_combine_kernel(o_part, lse_part, o_ptr, lse_ptr, splits, rows,
                                 D: tl.constexpr, BLOCK_S: tl.constexpr, STEP: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    # combine: read every split's log-sum-exp
    lse = tl.load(lse_part + offs_s * rows + r, mask=offs_s < splits, other=-float("inf"))
    m = tl.max(lse, 0)
    total = tl.sum(tl.exp(lse - m), 0)
    final = m + tl.log(total)
    offs_d = tl.arange(0, D)
    acc = tl.zeros((D,), dtype=tl.float32)
    for s0 in range(0, splits, STEP):
        ks = s0 + tl.arange(0, STEP)
        ok = ks < splits
        w = tl.exp(tl.load(lse_part + ks * rows + r, mask=ok, other=-float("inf")) - final)
        # combine: read every split's partial output
        part = tl.load(o_part + (ks[:, None] * rows + r) * D + offs_d[None, :], mask=ok[:, None],
                       other=0.0)
        acc += tl.sum(part * w[:, None], 0)
    tl.store(o_ptr + r * D + offs_d, acc.to(o_ptr.dtype.element_ty))
    tl.store(lse_ptr + r, final)


def chunk_for(max_len: int, splits: int, block_n: int) -> int:
    """Keys per split: ⌈⌈L/BLOCK_N⌉/splits⌉ whole key blocks (FA2's n_blocks_per_split)."""
    blocks = -(-max_len // block_n)
    return -(-blocks // splits) * block_n


class KVCache(Record, frozen=False):
    """K and V of `sequences` sequences: paged (page_size P, a block table) or contiguous."""

    k: torch.Tensor
    v: torch.Tensor
    lens: torch.Tensor
    """int32 (sequences,): each sequence's key count."""
    max_len: int
    """The longest sequence, a Python int: a launch must not read it from the device (CUDA-graph
    capture forbids the synchronisation)."""
    table: torch.Tensor | None = None
    """int32 (sequences, pages per sequence); None: contiguous (sequences, n_kv, kv_heads, d)."""
    page_size: int = 0

    @property
    def sequences(self) -> int:
        """How many sequences (requests, or the one shared prefix) the cache holds."""
        return int(self.lens.numel())

    def key_rows(self, s: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence s's K and V as (L_s, kv_heads, d) (a copy when paged): for references."""
        n = int(self.lens[s].item())
        if self.table is None:
            return self.k[s, :n], self.v[s, :n]
        pages = self.table[s, :triton.cdiv(n, self.page_size)].long()
        k = self.k[pages].reshape(-1, *self.k.shape[2:])[:n]
        v = self.v[pages].reshape(-1, *self.v.shape[2:])[:n]
        return k, v


def _check_decode(q: torch.Tensor, cache: KVCache, rows_per_seq: int) -> tuple[int, int, int, int]:
    if q.dim() != 4 or q.stride(3) != 1:
        raise KernelInputError("decode: q must be (batch, kv_heads, g, d) with d contiguous")
    batch, kv_heads, group, d = q.shape
    if cache.k.shape != cache.v.shape or cache.k.stride() != cache.v.stride():
        raise KernelInputError("decode: K and V caches must have one shape and layout")
    if cache.k.shape[-2:] != (kv_heads, d):
        raise KernelInputError(f"decode: cache rows {tuple(cache.k.shape[-2:])} != (kv_heads, d) "
                               f"= {(kv_heads, d)}")
    if d not in (16, 32, 64, 128, 256):
        raise KernelInputError(f"decode: head dim {d} is not a power of two in 16..256")
    if rows_per_seq % group or batch * group != cache.sequences * rows_per_seq:
        raise KernelInputError(f"decode: {cache.sequences} sequences of {rows_per_seq} rows do "
                               f"not cover batch {batch} × g {group}")
    return batch, kv_heads, group, d


def decode_split(q: torch.Tensor, cache: KVCache, o: torch.Tensor, lse: torch.Tensor, *,
                 splits: int, split_base: int = 0, rows_per_seq: int | None = None,
                 config: DecodeConfig = DecodeConfig(), sm_scale: float | None = None) -> Any:
    """The split kernel. o/lse are O (batch, kv_heads, g, d) and L (batch, kv_heads, g) when o has
    four dimensions (one split: written directly), else the partial buffers (S, batch, kv_heads,
    g, d) fp32 and (S, batch, kv_heads, g) fp32, this launch writing splits split_base.. ."""
    group = q.shape[2]
    rows = group if rows_per_seq is None else rows_per_seq
    _, kv_heads, group, d = _check_decode(q, cache, rows)
    final = o.dim() == 4
    if final and splits != 1:
        raise KernelInputError("decode: writing O directly needs splits = 1")
    if not final and (o.dim() != 5 or o.dtype != torch.float32 or lse.dim() != 4
                      or split_base + splits > o.shape[0]):
        raise KernelInputError("decode: partial buffers must be fp32 (S, batch, kv_heads, g, d) "
                               "and (S, batch, kv_heads, g) with room for the splits")
    if not o.is_contiguous() or not lse.is_contiguous() or lse.dtype != torch.float32:
        raise KernelInputError("decode: o and lse must be contiguous, lse fp32")
    block_r = max(16, min(config.block_r, triton.next_power_of_2(rows)))
    row_blocks = triton.cdiv(rows, block_r)
    chunk = chunk_for(cache.max_len, splits, config.block_n)
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)
    os_, ls_ = (0, 0) if final else (o.stride(0), lse.stride(0))
    ob, oh, og = o.stride()[-4:-1]
    lb, lh = lse.stride()[-3:-1]
    table = cache.table if cache.table is not None else cache.lens
    stride_tb = cache.table.stride(0) if cache.table is not None else 0
    stride_kp = cache.k.stride(0)
    grid = (splits, kv_heads, cache.sequences * row_blocks)
    return _iosim_decode_split_kernel[grid](
        q, cache.k, cache.v, table, cache.lens, o, lse,
        rows, group, chunk, split_base, row_blocks,
        q.stride(0), q.stride(1), q.stride(2),
        stride_kp, cache.k.stride(1), cache.k.stride(2),
        stride_tb, os_, ob, oh, og, ls_, lb, lh,
        scale * LOG2E,
        PAGE=cache.page_size if cache.table is not None else 0, D=d, BLOCK_R=block_r,
        BLOCK_N=config.block_n, num_warps=config.num_warps, num_stages=config.num_stages,
    )


def decode_combine(o_part: torch.Tensor, lse_part: torch.Tensor, o: torch.Tensor,
                   lse: torch.Tensor) -> Any:
    """O and L from S splits' partial outputs (S, ..., d) and log-sum-exps (S, ...)."""
    splits, d = o_part.shape[0], o_part.shape[-1]
    rows = o.numel() // d
    if (o_part.numel() != splits * rows * d or lse_part.numel() != splits * rows
            or lse.numel() != rows or not all(t.is_contiguous() for t in (o_part, lse_part, o, lse))):
        raise KernelInputError("combine: buffers must be contiguous (S, rows, d), (S, rows), "
                               "(rows, d), (rows)")
    step = 16
    return _iosim_decode_combine_kernel[(rows,)](
        o_part, lse_part, o, lse, splits, rows, D=d,
        BLOCK_S=max(step, triton.next_power_of_2(splits)), STEP=step, num_warps=4)


class DecodeBuffers(Record, frozen=False):
    """Outputs of one decode step, allocated once so that a CUDA graph can replay it."""

    o: torch.Tensor
    lse: torch.Tensor
    o_part: torch.Tensor
    lse_part: torch.Tensor


def decode_buffers(q: torch.Tensor, total_splits: int) -> DecodeBuffers:
    """O, L and the partial buffers of one decode step with room for `total_splits`."""
    batch, kv_heads, group, d = q.shape
    s = max(total_splits, 1)
    return DecodeBuffers(
        torch.empty_like(q), torch.empty(batch, kv_heads, group, dtype=torch.float32, device=q.device),
        torch.empty(s, batch, kv_heads, group, d, dtype=torch.float32, device=q.device),
        torch.empty(s, batch, kv_heads, group, dtype=torch.float32, device=q.device))


def split_kv(q: torch.Tensor, cache: KVCache, out: DecodeBuffers, *, splits: int,
             config: DecodeConfig = DecodeConfig()) -> list[str]:
    """Plain split-KV decoding: the split kernel, then the combine when splits > 1. Returns the
    kernels launched, in order."""
    if splits == 1:
        decode_split(q, cache, out.o, out.lse, splits=1, config=config)
        return ["_iosim_decode_split_kernel"]
    decode_split(q, cache, out.o_part, out.lse_part, splits=splits, config=config)
    decode_combine(out.o_part[:splits], out.lse_part[:splits], out.o, out.lse)
    return ["_iosim_decode_split_kernel", "_iosim_decode_combine_kernel"]


def cascade(q: torch.Tensor, prefix: KVCache, suffix: KVCache, out: DecodeBuffers, *,
            prefix_splits: int, suffix_splits: int, prefix_config: DecodeConfig = DecodeConfig(64),
            config: DecodeConfig = DecodeConfig()) -> list[str]:
    """Cascade attention: the shared prefix once for every request's queries (rows = batch · g),
    each request's suffix, one combine over both passes' splits."""
    batch, _, group, _ = q.shape
    if prefix.sequences != 1 or suffix.sequences != batch:
        raise KernelInputError("cascade: one prefix sequence and one suffix per request")
    decode_split(q, prefix, out.o_part, out.lse_part, splits=prefix_splits,
                 rows_per_seq=batch * group, config=prefix_config)
    decode_split(q, suffix, out.o_part, out.lse_part, splits=suffix_splits,
                 split_base=prefix_splits, config=config)
    total = prefix_splits + suffix_splits
    decode_combine(out.o_part[:total], out.lse_part[:total], out.o, out.lse)
    return ["_iosim_decode_split_kernel"] * 2 + ["_iosim_decode_combine_kernel"]


# ---------------------------------------------------------------------------------------------
# building caches (random pages, as a serving stack's allocator leaves them)


def paged_cache(keys: list[torch.Tensor], values: list[torch.Tensor], page_size: int, *,
                shared_pages: int = 0, generator: torch.Generator | None = None) -> KVCache:
    """A paged cache holding each sequence's (L_s, kv_heads, d) K and V, pages in random order.
    The first `shared_pages` pages of every sequence are one set of pages (a shared prefix as
    prefix caching stores it): they are taken from sequence 0 and must be equal across them."""
    if page_size < 1:
        raise KernelInputError(f"page size {page_size} must be a positive integer")
    kv_heads, d = keys[0].shape[1:]
    counts = [triton.cdiv(k.shape[0], page_size) for k in keys]
    own = [c - (shared_pages if i else 0) for i, c in enumerate(counts)]
    total = sum(own)
    device, dtype = keys[0].device, keys[0].dtype
    # the generator's device draws the permutation (a CUDA generator cannot draw on the CPU)
    order = torch.randperm(total, generator=generator,
                           device=generator.device if generator is not None else "cpu").to(device)
    kc = torch.zeros(total, page_size, kv_heads, d, dtype=dtype, device=device)
    vc = torch.zeros_like(kc)
    table = torch.zeros(len(keys), max(counts), dtype=torch.int32, device=device)
    next_page = 0
    for i, (k, v) in enumerate(zip(keys, values, strict=True)):
        start_page = shared_pages if i else 0
        n_own = counts[i] - start_page
        pages = order[next_page:next_page + n_own]
        next_page += n_own
        if i:
            table[i, :shared_pages] = table[0, :shared_pages]
        table[i, start_page:counts[i]] = pages.to(torch.int32)
        rows = k.shape[0] - start_page * page_size
        pad = n_own * page_size - rows
        kp = torch.nn.functional.pad(k[start_page * page_size:], (0, 0, 0, 0, 0, pad))
        vp = torch.nn.functional.pad(v[start_page * page_size:], (0, 0, 0, 0, 0, pad))
        kc[pages] = kp.reshape(n_own, page_size, kv_heads, d)
        vc[pages] = vp.reshape(n_own, page_size, kv_heads, d)
    lens = torch.tensor([k.shape[0] for k in keys], dtype=torch.int32, device=device)
    return KVCache(kc, vc, lens, max(k.shape[0] for k in keys), table, page_size)


def contiguous_cache(keys: list[torch.Tensor], values: list[torch.Tensor]) -> KVCache:
    """Sequences in one (sequences, max L, kv_heads, d) tensor each for K and V."""
    n = max(k.shape[0] for k in keys)
    kv_heads, d = keys[0].shape[1:]
    kc = torch.zeros(len(keys), n, kv_heads, d, dtype=keys[0].dtype, device=keys[0].device)
    vc = torch.zeros_like(kc)
    for i, (k, v) in enumerate(zip(keys, values, strict=True)):
        kc[i, :k.shape[0]] = k
        vc[i, :v.shape[0]] = v
    lens = torch.tensor([k.shape[0] for k in keys], dtype=torch.int32, device=keys[0].device)
    return KVCache(kc, vc, lens, n)


def reference_decode(q: torch.Tensor, keys: list[torch.Tensor], values: list[torch.Tensor]
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 O (batch, kv_heads, g, d) and L (batch, kv_heads, g) of one query row per head."""
    d = q.shape[-1]
    outs, lses = [], []
    for b, (k, v) in enumerate(zip(keys, values, strict=True)):
        s = torch.einsum("hgd,nhd->hgn", q[b].double(), k.double()) / math.sqrt(d)
        outs.append(torch.einsum("hgn,nhd->hgd", torch.softmax(s, -1), v.double()))
        lses.append(torch.logsumexp(s, -1))
    return torch.stack(outs), torch.stack(lses)
