"""MLA prefill's fused forward: Q·K over one head dim, V and O over another (our own Triton code).

DeepSeek-V3's prefill attends with decompressed per-head K and V: qk head dim 192 (128 "nope" +
64 rope columns), v head dim 128, 128 heads (config.json qk_nope_head_dim, qk_rope_head_dim,
v_head_dim, num_attention_heads). FA2's loop order (FA2 Alg. 1), one program per (query block,
batch·head):

    load Q_i (B_r × d_qk) once; O_i (B_r × d_v), ℓ_i, m_i on chip (fp32)
    for each key block j the rows see (causal: j ≤ the diagonal, none above it loaded):
        load K_j (B_c × d_qk); S = Q_i K_jᵀ · scale; online softmax; load V_j (B_c × d_v)
        O_i += P V_j
    write O_i (B_r × d_v) and L_i (fp32)

d_qk need not be a power of two: it is D_HI + D_LO, D_HI the largest power of two not above it
and D_LO the rest (0 or a power of two ≥ 16), so that 192 = 128 + 64 runs as two tensor-core dots
accumulated into one S (no padding to 256: the counted FLOPs are 2·B_r·B_c·d_qk a tile pair, as
iosim counts them). Any N: the last query block's rows and the last key block's keys past N are
masked (loaded as zeros, never stored); the key blocks before it carry no mask, so the hot loop
is the unmasked one, as in FA2's code. The grid and each program's tiles are exactly what
iosim's flash2 loop nest counts with `--d 192 --d-v 128 --block-q B_r --block-kv B_c`.

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
from iosim.calibrate.kernels_common import _iosim_softmax_start, _iosim_softmax_step
from iosim.record import Record


class PrefillConfig(Record):
    """The MLA prefill forward's tiles (BLOCK_M × BLOCK_N), warps and pipeline stages."""

    block_m: int = 128
    block_n: int = 64
    num_warps: int = 8
    num_stages: int = 2

    @property
    def label(self) -> str:
        """"128x64/w8/s2": the tiles, warps and stages."""
        return f"{self.block_m}x{self.block_n}/w{self.num_warps}/s{self.num_stages}"


def split_head_dim(d_qk: int) -> tuple[int, int]:
    """(D_HI, D_LO): d_qk = D_HI + D_LO, D_HI the largest power of two ≤ d_qk (16..256), D_LO 0 or
    a power of two ≥ 16 (tl.dot's smallest K); KernelInputError for any other d_qk."""
    hi = 1 << (d_qk.bit_length() - 1) if d_qk > 0 else 0
    lo = d_qk - hi
    if not 16 <= hi <= 256 or (lo and (lo < 16 or lo & (lo - 1))):
        raise KernelInputError(f"mla prefill: qk head dim {d_qk} is not a power of two in 16..256 "
                               "or one plus a smaller power of two ≥ 16 (e.g. 192 = 128 + 64)")
    return hi, lo


@triton.jit
def _iosim_mla_prefill_block(acc, l_i, m_i, q_hi, q_lo, k_base, v_base, stride_kn, stride_vn,
                             start_n, n_ctx, offs_m, offs_n, offs_hi, offs_lo, offs_v, qk_scale,
                             D_HI: tl.constexpr, D_LO: tl.constexpr, MASKED: tl.constexpr,
                             CAUSAL: tl.constexpr):
    """One key block at start_n: load K_j (its D_HI and D_LO columns), S = Q_i K_jᵀ (two dots
    into one accumulator), the online-softmax step, load V_j, O += P V_j. MASKED: keys past n_ctx
    (and, CAUSAL, above the diagonal) masked, their rows loaded as zeros."""
    keys = start_n + offs_n
    if MASKED:
        key_ok = keys < n_ctx
        k_hi = tl.load(k_base + keys[:, None] * stride_kn + offs_hi[None, :],
                       mask=key_ok[:, None], other=0.0)
    else:
        k_hi = tl.load(k_base + keys[:, None] * stride_kn + offs_hi[None, :])
    qk = tl.dot(q_hi, tl.trans(k_hi))
    if D_LO > 0:
        if MASKED:
            k_lo = tl.load(k_base + keys[:, None] * stride_kn + (D_HI + offs_lo)[None, :],
                           mask=key_ok[:, None], other=0.0)
        else:
            k_lo = tl.load(k_base + keys[:, None] * stride_kn + (D_HI + offs_lo)[None, :])
        qk = tl.dot(q_lo, tl.trans(k_lo), qk)
    qk = qk * qk_scale
    if MASKED:
        keep = key_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= keys[None, :])
        qk = qk + tl.where(keep, 0.0, -1.0e6)
        v = tl.load(v_base + keys[:, None] * stride_vn + offs_v[None, :], mask=key_ok[:, None],
                    other=0.0)
    else:
        v = tl.load(v_base + keys[:, None] * stride_vn + offs_v[None, :])
    m_new = tl.maximum(m_i, tl.max(qk, 1))
    return _iosim_softmax_step(acc, l_i, m_i, qk, m_new, v)


@triton.jit
def _iosim_mla_prefill_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, qk_scale, n_ctx,
    stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vn, stride_oh, stride_om,
    D_HI: tl.constexpr, D_LO: tl.constexpr, D_V: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    # grid (⌈n_ctx / BLOCK_M⌉, batch·heads): query blocks of one head adjacent in launch order
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_hi = tl.arange(0, D_HI)
    offs_lo = tl.arange(0, D_LO if D_LO > 0 else 16)
    offs_v = tl.arange(0, D_V)
    row_ok = offs_m < n_ctx
    q_rows = q_ptr + head * stride_qh + offs_m[:, None] * stride_qm
    # FA2 Alg. 1 line 4: load Q_i once (its rows past n_ctx as zeros)
    q_hi = tl.load(q_rows + offs_hi[None, :], mask=row_ok[:, None], other=0.0)
    if D_LO > 0:  # noqa: SIM108 (a constexpr branch: Triton compiles only the taken side)
        q_lo = tl.load(q_rows + D_HI + offs_lo[None, :], mask=row_ok[:, None], other=0.0)
    else:
        q_lo = q_hi
    k_base = k_ptr + head * stride_kh
    v_base = v_ptr + head * stride_vh
    acc, l_i, m_i = _iosim_softmax_start(BLOCK_M, D_V)
    # FA2 Alg. 1 lines 6-11: the key blocks wholly inside [0, n_ctx) (and, causal, wholly below
    # this block's diagonal) unmasked; then the rest masked: the diagonal band (causal) or the
    # last, partial key block
    if CAUSAL:
        full_end = start_m
        last = tl.minimum(start_m + BLOCK_M, n_ctx)
    else:
        full_end = (n_ctx // BLOCK_N) * BLOCK_N
        last = n_ctx
    for start_n in range(0, full_end, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        acc, l_i, m_i = _iosim_mla_prefill_block(
            acc, l_i, m_i, q_hi, q_lo, k_base, v_base, stride_kn, stride_vn, start_n, n_ctx,
            offs_m, offs_n, offs_hi, offs_lo, offs_v, qk_scale, D_HI, D_LO, False, CAUSAL)
    for start_n in range(full_end, last, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        acc, l_i, m_i = _iosim_mla_prefill_block(
            acc, l_i, m_i, q_hi, q_lo, k_base, v_base, stride_kn, stride_vn, start_n, n_ctx,
            offs_m, offs_n, offs_hi, offs_lo, offs_v, qk_scale, D_HI, D_LO, True, CAUSAL)
    # FA2 Alg. 1 lines 12-15: O_i = diag(ℓ_i)⁻¹ O_i, L_i = m_i + log ℓ_i; write O_i and L_i
    acc = acc / l_i[:, None]
    tl.store(lse_ptr + head * n_ctx + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453,
             mask=row_ok)
    tl.store(o_ptr + head * stride_oh + offs_m[:, None] * stride_om + offs_v[None, :],
             acc.to(o_ptr.dtype.element_ty), mask=row_ok[:, None])


def prefill_grid(n: int, heads: int, config: PrefillConfig) -> tuple[int, int]:
    """The launch grid: (⌈n / BLOCK_M⌉ query blocks, batch·heads)."""
    return triton.cdiv(n, config.block_m), heads


def mla_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                lse: torch.Tensor, *, causal: bool, config: PrefillConfig | None = None,
                sm_scale: float | None = None) -> list[str]:
    """o = softmax(q kᵀ · sm_scale [causal]) v and lse = its natural-log logsumexp, per head.

    q, k: (heads, n, d_qk); v, o: (heads, n, d_v), rows contiguous (heads may be batch·heads);
    lse: contiguous fp32 (heads, n). sm_scale defaults to d_qk^-1/2. Any n ≥ 1."""
    if q.dim() != 3 or k.shape != q.shape or v.dim() != 3 or o.shape != v.shape:
        raise KernelInputError("mla prefill: q, k (heads, n, d_qk) and v, o (heads, n, d_v)")
    heads, n, d_qk = q.shape
    d_v = v.shape[2]
    if v.shape[:2] != (heads, n):
        raise KernelInputError(f"mla prefill: v {tuple(v.shape)} does not match q {tuple(q.shape)}")
    if q.dtype not in (torch.float16, torch.bfloat16) or any(
            t.dtype != q.dtype for t in (k, v, o)):
        raise KernelInputError("mla prefill: q, k, v and o are one dtype, fp16 or bf16")
    if tuple(lse.shape) != (heads, n) or lse.dtype != torch.float32 or not lse.is_contiguous():
        raise KernelInputError(f"mla prefill: lse must be a contiguous fp32 ({heads}, {n}) tensor")
    if any(t.stride(2) != 1 for t in (q, k, v, o)):
        raise KernelInputError("mla prefill: the head dimension must be contiguous")
    d_hi, d_lo = split_head_dim(d_qk)
    config = config or PrefillConfig()
    if d_v not in (16, 32, 64, 128, 256):
        raise KernelInputError(f"mla prefill: v head dim {d_v} is not one of 16, 32, 64, 128, 256")
    if config.block_m % config.block_n:
        raise KernelInputError(f"mla prefill: BLOCK_M = {config.block_m} must be a multiple of "
                               f"BLOCK_N = {config.block_n} (the causal diagonal band)")
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d_qk)
    _iosim_mla_prefill_kernel[prefill_grid(n, heads, config)](
        q, k, v, o, lse, scale * LOG2E, n,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        o.stride(0), o.stride(1),
        D_HI=d_hi, D_LO=d_lo, D_V=d_v, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        CAUSAL=causal, num_warps=config.num_warps, num_stages=config.num_stages)
    return ["_iosim_mla_prefill_kernel"]


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
              sm_scale: float | None = None) -> Any:
    """fp32 attention (heads, n, d_v) of (heads, n, d_qk) q, k and (heads, n, d_v) v."""
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    s = q.float() @ k.float().transpose(-1, -2) * scale
    if causal:
        n = q.shape[1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    return torch.softmax(s, -1) @ v.float()
