"""MLA absorbed decoding and an FP8 forward for the issue-14 measurements (our own Triton code).

    mla_split   program (split k, request b · row block): the row block's query rows of the
                absorbed query (heads × (512 latent + 64 rope) columns) against request b's latent
                cache, one "KV head" of d = 576 read by every query head:
                  for each key block j of split k (paged, P tokens a page):
                      load C_j = latent[j, :576] once; S = Q_nope C_j[:, :512]ᵀ + Q_rope C_j[:, 512:]ᵀ
                      online softmax; O += P · C_j[:, :512]   (V is the first d_v = 512 columns
                      of the latent row: no second read)
                writes O_partial[k] (fp32, 512 per row) and lse_partial[k]; the combine is
                kernels_variants.decode_combine
    attn_scaled fused forward (FA2 loop order) with per-tensor descales read from HBM, as
                FlashAttention-3's FP8 forward takes them (q_descale, k_descale, v_descale):
                S = (Q Kᵀ) · q_descale · k_descale · scale; P cast to the input dtype (FP8 e4m3 for
                FP8 inputs) for P·V; O = acc / l · v_descale written in fp16. V is stored
                transposed (d, n) per head, the layout Hopper's FP8 tensor-core instruction wants
                for its second operand (Triton's fused-attention tutorial does the same). Its key
                loop is the forward's (kernels_common._iosim_attn_rows): causal, the key blocks
                below the diagonal unmasked, the diagonal band masked, none above it loaded.

torch and triton are imported at module level; only the device scripts and the interpreter tests
import this module.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from iosim.calibrate.kernels import LOG2E, KernelInputError
from iosim.calibrate.kernels_common import (
    _iosim_attn_rows,
    _iosim_key_rows,
    _iosim_program_rows,
    _iosim_softmax_start,
    _iosim_softmax_step,
    _iosim_split_keys,
    _iosim_split_result,
    _iosim_tile,
)
from iosim.calibrate.kernels_variants import KVCache, chunk_for, decode_combine
from iosim.record import Record

D_LATENT = 512
"""DeepSeek-V3 config.json kv_lora_rank (the latent, and V's head dim d_v, when absorbed)."""
D_ROPE = 64
"""DeepSeek-V3 config.json qk_rope_head_dim."""
MLA_SCALE = (128 + 64) ** -0.5
"""DeepSeek-V3's softmax scale before YaRN's mscale: (qk_nope_head_dim + qk_rope_head_dim)^-1/2."""


class MlaConfig(Record):
    """The MLA split kernel's tiles: BLOCK_R query heads × BLOCK_N latent rows."""
    block_r: int = 32
    block_n: int = 32
    num_warps: int = 4
    num_stages: int = 2


@triton.jit
def _iosim_mla_split_kernel(
    q_ptr, c_ptr, table_ptr, lens_ptr, o_ptr, lse_ptr,
    heads, chunk, row_blocks, stride_qb, stride_qh, stride_cp, stride_cn, stride_tb,
    stride_os, stride_ob, stride_oh, stride_ls, stride_lb, qk_scale,
    PAGE: tl.constexpr, DL: tl.constexpr, DR: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    split = tl.program_id(0)
    b = (tl.program_id(1) // row_blocks).to(tl.int64)
    rows = (tl.program_id(1) % row_blocks) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < heads
    offs_l = tl.arange(0, DL)
    offs_r = tl.arange(0, DR)
    offs_n = tl.arange(0, BLOCK_N)
    lo, hi = _iosim_split_keys(lens_ptr, b, split, chunk)
    acc, l_i, m_i = _iosim_softmax_start(BLOCK_R, DL)
    if lo < hi:
        q_rows = q_ptr + b * stride_qb + rows[:, None] * stride_qh
        # load Q_i (latent and rope columns), once per split
        q_lat = tl.load(q_rows + offs_l[None, :], mask=row_ok[:, None], other=0.0)
        q_rope = tl.load(q_rows + DL + offs_r[None, :], mask=row_ok[:, None], other=0.0)
        for start in range(lo, hi, BLOCK_N):
            keys = start + offs_n
            key_ok = keys < hi
            row_off = _iosim_key_rows(table_ptr, stride_tb, b, keys, key_ok, stride_cp,
                                      stride_cn, PAGE)
            # load the latent rows C_j once: K is all 576 columns, V the first 512
            c_lat = tl.load(c_ptr + row_off[:, None] + offs_l[None, :], mask=key_ok[:, None],
                            other=0.0)
            c_rope = tl.load(c_ptr + row_off[:, None] + DL + offs_r[None, :],
                             mask=key_ok[:, None], other=0.0)
            qk = tl.dot(q_lat, tl.trans(c_lat))
            qk = tl.dot(q_rope, tl.trans(c_rope), qk) * qk_scale
            qk = tl.where(key_ok[None, :], qk, -float("inf"))
            acc, l_i, m_i = _iosim_softmax_step(acc, l_i, m_i, qk, tl.maximum(m_i, tl.max(qk, 1)),
                                                c_lat)
    out, lse = _iosim_split_result(acc, l_i, m_i)
    s = split.to(tl.int64)
    tl.store(o_ptr + s * stride_os + b * stride_ob + rows[:, None] * stride_oh + offs_l[None, :],
             out, mask=row_ok[:, None])
    tl.store(lse_ptr + s * stride_ls + b * stride_lb + rows, lse, mask=row_ok)


class MlaBuffers(Record, frozen=False):
    """O (batch, heads, 512), L, and every split's fp32 partials of one MLA step."""
    o: torch.Tensor
    lse: torch.Tensor
    o_part: torch.Tensor
    lse_part: torch.Tensor


def mla_buffers(q: torch.Tensor, splits: int) -> MlaBuffers:
    """Outputs and partial buffers for `splits` splits of q's batch and heads."""
    batch, heads, _ = q.shape
    dev = q.device
    return MlaBuffers(torch.empty(batch, heads, D_LATENT, dtype=q.dtype, device=dev),
                      torch.empty(batch, heads, dtype=torch.float32, device=dev),
                      torch.empty(splits, batch, heads, D_LATENT, dtype=torch.float32, device=dev),
                      torch.empty(splits, batch, heads, dtype=torch.float32, device=dev))


def mla_decode(q: torch.Tensor, cache: KVCache, out: MlaBuffers, *, splits: int,
               config: MlaConfig = MlaConfig(), sm_scale: float = MLA_SCALE) -> list[str]:
    """Absorbed MLA decoding: q (batch, heads, 576); cache.k the paged latent cache
    (pages, P, 1, 576) (cache.v unused: V is its first 512 columns). The split kernel, then the
    combine (always: the split kernel writes fp32 partials)."""
    batch, heads, d = q.shape
    if d != D_LATENT + D_ROPE or cache.k.shape[-1] != d or cache.table is None:
        raise KernelInputError(f"mla: q and a paged latent cache of {D_LATENT + D_ROPE} columns")
    if cache.sequences != batch or out.o_part.shape[0] < splits:
        raise KernelInputError("mla: one cache sequence per request; partials for every split")
    row_blocks = triton.cdiv(heads, config.block_r)
    chunk = chunk_for(cache.max_len, splits, config.block_n)
    o_part, lse_part = out.o_part[:splits], out.lse_part[:splits]
    _iosim_mla_split_kernel[(splits, batch * row_blocks)](
        q, cache.k, cache.table, cache.lens, o_part, lse_part,
        heads, chunk, row_blocks, q.stride(0), q.stride(1), cache.k.stride(0), cache.k.stride(1),
        cache.table.stride(0), o_part.stride(0), o_part.stride(1), o_part.stride(2),
        lse_part.stride(0), lse_part.stride(1), sm_scale * LOG2E,
        PAGE=cache.page_size, DL=D_LATENT, DR=D_ROPE, BLOCK_R=config.block_r,
        BLOCK_N=config.block_n, num_warps=config.num_warps, num_stages=config.num_stages)
    decode_combine(o_part, lse_part, out.o, out.lse)
    return ["_iosim_mla_split_kernel", "_iosim_decode_combine_kernel"]


def reference_mla(q: torch.Tensor, latents: list[torch.Tensor], sm_scale: float = MLA_SCALE
                  ) -> torch.Tensor:
    """float64 O (batch, heads, 512): softmax(q Cᵀ · scale) C[:, :512] per request."""
    outs = []
    for b, c in enumerate(latents):
        s = q[b].double() @ c.double().T * sm_scale
        outs.append(torch.softmax(s, -1) @ c[:, :D_LATENT].double())
    return torch.stack(outs)


# ---------------------------------------------------------------------------------------------
# fused forward with per-tensor descales (FP8 e4m3 inputs, or fp16 with the same code)


class ScaledConfig(Record):
    """The scaled forward's tiles (BLOCK_M × BLOCK_N), warps and pipeline stages."""
    block_m: int = 128
    block_n: int = 64
    num_warps: int = 8
    num_stages: int = 3


@triton.jit
def _iosim_attn_scaled_kernel(
    q_ptr, k_ptr, vt_ptr, o_ptr, descale_ptr, n_ctx, qk_scale,
    stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vd, stride_oh, stride_om,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    start_m, head, offs_m, offs_d = _iosim_program_rows(BLOCK_M, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    # the three per-tensor descales, read from HBM (FA3's q_descale, k_descale, v_descale)
    q_descale = tl.load(descale_ptr)
    k_descale = tl.load(descale_ptr + 1)
    v_descale = tl.load(descale_ptr + 2)
    q = tl.load(q_ptr + _iosim_tile(head, stride_qh, offs_m, stride_qm, offs_d))
    k_ptrs = k_ptr + _iosim_tile(head, stride_kh, offs_n, stride_kn, offs_d)
    # Vᵀ's (d × BLOCK_N) blocks: key j's column is j, so V's row stride is 1
    vt_ptrs = vt_ptr + _iosim_tile(head, stride_vh, offs_d, stride_vd, offs_n)
    acc, l_i, _ = _iosim_attn_rows(q, k_ptrs, vt_ptrs, stride_kn, 1, start_m, n_ctx, offs_m,
                                   offs_n, qk_scale * q_descale * k_descale, BLOCK_M, BLOCK_N,
                                   HEAD_DIM, CAUSAL, True)
    acc = acc / l_i[:, None] * v_descale
    tl.store(o_ptr + _iosim_tile(head, stride_oh, offs_m, stride_om, offs_d),
             acc.to(o_ptr.dtype.element_ty))


def attention_scaled(q: torch.Tensor, k: torch.Tensor, v_t: torch.Tensor, o: torch.Tensor,
                     descales: torch.Tensor, *, causal: bool,
                     config: ScaledConfig = ScaledConfig()) -> list[str]:
    """o = softmax(q kᵀ · dq · dk / √d [causal]) v · dv per head; q, k (heads, n, d), v_t (heads,
    d, n) with rows contiguous, descales fp32 [dq, dk, dv] on the device."""
    heads, n, d = q.shape
    if k.shape != q.shape or v_t.shape != (heads, d, n) or o.shape != q.shape:
        raise KernelInputError("scaled attention: q, k (heads, n, d), v_t (heads, d, n)")
    if n % config.block_m or n % config.block_n or config.block_m % config.block_n:
        raise KernelInputError(f"scaled attention: n = {n} must be a multiple of the blocks")
    if descales.numel() != 3 or descales.dtype != torch.float32:
        raise KernelInputError("scaled attention: descales are three fp32 numbers")
    _iosim_attn_scaled_kernel[(n // config.block_m, heads)](
        q, k, v_t, o, descales, n, LOG2E / math.sqrt(d),
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v_t.stride(0), v_t.stride(1),
        o.stride(0), o.stride(1), HEAD_DIM=d, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        CAUSAL=causal, num_warps=config.num_warps, num_stages=config.num_stages)
    return ["_iosim_attn_scaled_kernel"]


@triton.jit
def _iosim_block_scaled_inner(acc, l_i, m_i, q, k_ptrs, vt_ptrs, ks_ptr, vs_ptr, stride_kn, lo,
                              hi, offs_m, offs_n, qk_scale, BLOCK_N: tl.constexpr,
                              DIAGONAL: tl.constexpr):
    """Key blocks [lo, hi) with FA3 §3.3 block quantization: K_j's and V_j's fp32 scales read
    from HBM with their tiles; S = Q K_jᵀ · qk_scale · k_scale_j (qk_scale carries Q_i's scale),
    O += (P V_j) · v_scale_j (V_j's scale applies to its whole B_c × d block, so to P V_j)."""
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_ptrs + start_n * stride_kn)
        # FA3 §3.3: one fp32 scale per B_c × d block of K, read with K_j
        k_scale = tl.load(ks_ptr + start_n // BLOCK_N)
        qk = tl.dot(q, tl.trans(k)) * (qk_scale * k_scale)
        if DIAGONAL:
            qk = qk + tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), 0.0, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        v = tl.trans(tl.load(vt_ptrs + start_n))
        # and one per B_c × d block of V, read with V_j
        v_scale = tl.load(vs_ptr + start_n // BLOCK_N)
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v) * v_scale
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _iosim_attn_block_scaled_kernel(
    q_ptr, k_ptr, vt_ptr, o_ptr, qs_ptr, ks_ptr, vs_ptr, n_ctx, qk_scale,
    stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vd, stride_oh, stride_om,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    start_m, head, offs_m, offs_d = _iosim_program_rows(BLOCK_M, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    # FA3 §3.3: Q_i's fp32 scale (one per B_r × d block of Q), read once by its program
    q_scale = tl.load(qs_ptr + head * (n_ctx // BLOCK_M) + start_m // BLOCK_M)
    q = tl.load(q_ptr + _iosim_tile(head, stride_qh, offs_m, stride_qm, offs_d))
    k_ptrs = k_ptr + _iosim_tile(head, stride_kh, offs_n, stride_kn, offs_d)
    vt_ptrs = vt_ptr + _iosim_tile(head, stride_vh, offs_d, stride_vd, offs_n)
    ks = ks_ptr + head * (n_ctx // BLOCK_N)
    vs = vs_ptr + head * (n_ctx // BLOCK_N)
    scale = qk_scale * q_scale
    acc, l_i, m_i = _iosim_softmax_start(BLOCK_M, HEAD_DIM)
    if CAUSAL:
        acc, l_i, m_i = _iosim_block_scaled_inner(acc, l_i, m_i, q, k_ptrs, vt_ptrs, ks, vs,
                                                  stride_kn, 0, start_m, offs_m, offs_n, scale,
                                                  BLOCK_N, False)
        acc, l_i, m_i = _iosim_block_scaled_inner(acc, l_i, m_i, q, k_ptrs, vt_ptrs, ks, vs,
                                                  stride_kn, start_m, start_m + BLOCK_M, offs_m,
                                                  offs_n, scale, BLOCK_N, True)
    else:
        acc, l_i, m_i = _iosim_block_scaled_inner(acc, l_i, m_i, q, k_ptrs, vt_ptrs, ks, vs,
                                                  stride_kn, 0, n_ctx, offs_m, offs_n, scale,
                                                  BLOCK_N, False)
    acc = acc / l_i[:, None]
    tl.store(o_ptr + _iosim_tile(head, stride_oh, offs_m, stride_om, offs_d),
             acc.to(o_ptr.dtype.element_ty))


def attention_block_scaled(q: torch.Tensor, k: torch.Tensor, v_t: torch.Tensor, o: torch.Tensor,
                           scales: tuple[torch.Tensor, torch.Tensor, torch.Tensor], *,
                           causal: bool, config: ScaledConfig = ScaledConfig()) -> list[str]:
    """attention_scaled with FA3 §3.3's block quantization: `scales` = fp32 (heads, n/BLOCK_M)
    of Q's row blocks and (heads, n/BLOCK_N) of K's and of V's key blocks, read from HBM."""
    heads, n, d = q.shape
    if k.shape != q.shape or v_t.shape != (heads, d, n) or o.shape != q.shape:
        raise KernelInputError("block-scaled attention: q, k (heads, n, d), v_t (heads, d, n)")
    if n % config.block_m or n % config.block_n or config.block_m % config.block_n:
        raise KernelInputError(f"block-scaled attention: n = {n} must be a multiple of the "
                               f"blocks")
    sq, sk, sv = scales
    want = ((heads, n // config.block_m), (heads, n // config.block_n),
            (heads, n // config.block_n))
    if tuple(tuple(t.shape) for t in scales) != want or any(
            t.dtype != torch.float32 or not t.is_contiguous() for t in scales):
        raise KernelInputError("block-scaled attention: scales are contiguous fp32 (heads, "
                               "n/BLOCK_M), (heads, n/BLOCK_N), (heads, n/BLOCK_N)")
    _iosim_attn_block_scaled_kernel[(n // config.block_m, heads)](
        q, k, v_t, o, sq, sk, sv, n, LOG2E / math.sqrt(d),
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v_t.stride(0), v_t.stride(1),
        o.stride(0), o.stride(1), HEAD_DIM=d, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        CAUSAL=causal, num_warps=config.num_warps, num_stages=config.num_stages)
    return ["_iosim_attn_block_scaled_kernel"]


def quantize_blocks(x: torch.Tensor, dtype: torch.dtype, block: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """x (heads, n, d) / s per block of `block` rows in `dtype`, with the fp32 scales s (heads,
    n / block) = each block's amax / the format's max (FA3 §3.3 block quantization)."""
    heads, n, d = x.shape
    top = torch.finfo(dtype).max
    blocks = x.reshape(heads, n // block, block * d)
    s = (blocks.abs().amax(-1) / top).clamp_min(torch.finfo(torch.float32).tiny)
    q = (blocks / s[..., None]).reshape(heads, n, d).to(dtype)
    return q, s.to(torch.float32).contiguous()


def reference_block_scaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           scales: tuple[torch.Tensor, ...], blocks: tuple[int, int],
                           causal: bool) -> torch.Tensor:
    """float64 attention of block-dequantized inputs (heads, n, d): Q's rows in blocks of
    blocks[0], K's and V's in blocks of blocks[1]."""
    sizes = (blocks[0], blocks[1], blocks[1])
    qd, kd, vd = (t.double() * s.double().repeat_interleave(b, dim=1)[..., None]
                  for t, s, b in zip((q, k, v), scales, sizes, strict=True))
    s = qd @ kd.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    return torch.softmax(s, -1) @ vd


def quantize(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, float]:
    """x / s in `dtype` with the per-tensor scale s = amax / the format's max (fp16: s = 1)."""
    if dtype == torch.float16:
        return x.to(dtype), 1.0
    top = torch.finfo(dtype).max
    s = float(x.abs().max()) / top
    return (x / s).to(dtype), s


def reference_scaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scales: tuple[float, ...],
                     causal: bool) -> torch.Tensor:
    """float64 attention of the dequantized inputs (heads, n, d)."""
    qd, kd, vd = (t.double() * s for t, s in zip((q, k, v), scales, strict=True))
    s = qd @ kd.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    return torch.softmax(s, -1) @ vd
