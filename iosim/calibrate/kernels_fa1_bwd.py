"""FlashAttention's Algorithm 4 (the FA1 paper's backward) as printed, in Triton (our own code).

Two kernels (three under GQA), launched in this order by `flash1_bwd`, each exactly one kernel of
iosim's `flash1` backward loop nest (algorithms/flash1.py):

    fa1_bwd_init    Alg. 4 line 5: dQ = (0), dK = (0), dV = (0) in HBM   (loop nest: bwd_init)
    fa1_bwd         one program per (batch, head), walking the key blocks j outer (line 6) and the
                    query blocks i inner (line 9)                           (loop nest: bwd_attn)
                      line 7:  load K_j, V_j;  line 8: dK_j = dV_j = 0 on chip (fp32)
                      line 10: load Q_i, O_i, dO_i, dQ_i, l_i, m_i
                      lines 11-20: S_ij = τ Q_i K_jᵀ, P_ij = diag(l_i)⁻¹ exp(S_ij − m_i),
                               dV_j += P_ijᵀ dO_i, dP_ij = dO_i V_jᵀ, D_i = rowsum(dO_i ∘ O_i)
                               (recomputed at every j, as printed), dS_ij = P_ij ∘ (dP_ij − D_i)
                      line 21: write dQ_i ← dQ_i + τ dS_ij K_j to HBM (in the input dtype: the
                               read-modify-write of every pass, as the loop nest counts it)
                      line 22: dK_j += τ dS_ijᵀ Q_i (on chip)
                      line 24: write dK_j, dV_j
    bwd_sum_groups  GQA only: kernels_bwd's group sum (grads.py: FA2's dk_expanded, at::sum_out)

No dropout (the loop nest's flash1 has none either). Causal: key block j is walked by the query
blocks that hold a row at or after its first key, from ⌊j·B_c/B_r⌋ on (blocks.py's visited pairs),
every visited tile masked elementwise. Any N: loads past the end read zeros (l_i reads 1), which
contribute nothing (kernels_bwd.py's argument: zero Q, dO rows give dS = 0; zero K, V rows give
dQ += dS·0), and stores past the end are masked.

The FA1 paper's block sizes B_c = ⌈M/4d⌉, B_r = min(B_c, d) are not powers of two, which Triton's
tiles must be: `Fa1Tiles` holds the tiles that run, and iosim is compared with the same blocks
(`--block-q B_r --block-kv B_c`).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from iosim.calibrate.kernels import KernelInputError
from iosim.calibrate.kernels_bwd import (
    _iosim_bwd_sum_groups_kernel,
    check_backward_inputs,
    gradient_buffers,
)
from iosim.record import Record


class Fa1Tiles(Record):
    """B_r × B_c of Algorithm 4, warps and pipeline stages of its one program per head."""

    block_r: int = 64
    block_c: int = 64
    num_warps: int = 4
    num_stages: int = 1


@triton.jit
def _iosim_fa1_bwd_init_kernel(dq, dk, dv, n_q, n_kv, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    zero = tl.zeros((BLOCK,), dtype=dq.dtype.element_ty)
    # Alg. 4 line 5: dQ = (0), dK = (0), dV = (0) in HBM
    tl.store(dq + offs, zero, mask=offs < n_q)
    tl.store(dk + offs, zero, mask=offs < n_kv)
    tl.store(dv + offs, zero, mask=offs < n_kv)


@triton.jit
def _iosim_fa1_bwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, dq_ptr, dk_ptr, dv_ptr, l_ptr,
                          m_ptr, sm_scale, n_ctx, group, stride_qh, stride_kh,
                          HEAD_DIM: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                          CAUSAL: tl.constexpr):
    head = tl.program_id(0).to(tl.int64)  # one program per (batch, head), batch-major
    kv_head = head // group
    offs_d = tl.arange(0, HEAD_DIM)
    q_head = head * stride_qh
    kv_base = kv_head * stride_kh
    out_base = head * stride_qh  # dK, dV of this query head (n·d per head, as Q's)
    for start_n in range(0, n_ctx, BLOCK_C):  # Alg. 4 line 6: for 1 ≤ j ≤ T_c
        offs_n = start_n + tl.arange(0, BLOCK_C)
        keys = offs_n[:, None] < n_ctx
        kv_offs = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        # line 7: load K_j, V_j; line 8: dK_j = dV_j = 0 on chip
        k = tl.load(k_ptr + kv_base + kv_offs, mask=keys, other=0.0)
        v = tl.load(v_ptr + kv_base + kv_offs, mask=keys, other=0.0)
        dk = tl.zeros((BLOCK_C, HEAD_DIM), dtype=tl.float32)
        dv = tl.zeros((BLOCK_C, HEAD_DIM), dtype=tl.float32)
        lo = 0
        if CAUSAL:
            lo = (start_n // BLOCK_R) * BLOCK_R  # the first query block with a row ≥ key start_n
        for start_m in range(lo, n_ctx, BLOCK_R):  # line 9: for 1 ≤ i ≤ T_r
            offs_m = start_m + tl.arange(0, BLOCK_R)
            rows = offs_m < n_ctx
            q_offs = q_head + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
            # line 10: load Q_i, O_i, dO_i, dQ_i, l_i, m_i
            q = tl.load(q_ptr + q_offs, mask=rows[:, None], other=0.0)
            o = tl.load(o_ptr + q_offs, mask=rows[:, None], other=0.0)
            do = tl.load(do_ptr + q_offs, mask=rows[:, None], other=0.0)
            dq = tl.load(dq_ptr + q_offs, mask=rows[:, None], other=0.0)
            li = tl.load(l_ptr + head * n_ctx + offs_m, mask=rows, other=1.0)
            mi = tl.load(m_ptr + head * n_ctx + offs_m, mask=rows, other=0.0)
            # line 11: S_ij = τ Q_i K_jᵀ; line 13: P_ij = diag(l_i)⁻¹ exp(S_ij − m_i)
            s = tl.dot(q, tl.trans(k)) * sm_scale
            p = tl.exp(s - mi[:, None]) / li[:, None]
            if CAUSAL:
                p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
            # line 16: dV_j += P_ijᵀ dO_i
            dv += tl.dot(tl.trans(p.to(do.dtype)), do)
            # line 17: dP_ij = dO_i V_jᵀ; line 19: D_i = rowsum(dO_i ∘ O_i)
            dp = tl.dot(do, tl.trans(v))
            d_i = tl.sum(do.to(tl.float32) * o.to(tl.float32), axis=1)
            # line 20: dS_ij = P_ij ∘ (dP_ij − D_i)
            ds = p * (dp - d_i[:, None])
            # line 21: write dQ_i ← dQ_i + τ dS_ij K_j to HBM (input dtype)
            dq_new = dq.to(tl.float32) + tl.dot(ds.to(k.dtype), k) * sm_scale
            tl.store(dq_ptr + q_offs, dq_new.to(dq_ptr.dtype.element_ty), mask=rows[:, None])
            # the next key block's pass reads dQ_i back, possibly in other threads of the program
            tl.debug_barrier()
            # line 22: dK_j += τ dS_ijᵀ Q_i (on chip)
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q)
        # line 24: write dK_j, dV_j (of this query head: summed over a GQA group afterwards)
        out = out_base + kv_offs
        tl.store(dk_ptr + out, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=keys)
        tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty), mask=keys)


def flash1_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
               do: torch.Tensor, row_sum: torch.Tensor | None, row_max: torch.Tensor | None, *,
               causal: bool, tiles: Fa1Tiles | None = None, sm_scale: float | None = None,
               out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dQ, dK, dV) by Algorithm 4, given the forward's O and its row statistics l (sum) and m
    (max), both fp32 (batch·heads, n): P = exp(S − m)/l. Shapes as kernels_bwd.attention_bwd's
    (q, o, do: (batch·heads, n, d); k, v: (batch·kv_heads, n, d), batch-major)."""
    l, m = row_sum, row_max  # noqa: E741  (Alg. 4's names)
    if l is None or m is None:
        raise KernelInputError("flash1 backward: the forward's row statistics l and m are "
                               "missing; pass both (fp32, (batch·heads, n))")
    group = check_backward_inputs(q, k, v, o, do, m)
    if tuple(l.shape) != tuple(m.shape) or l.dtype != torch.float32 or not l.is_contiguous():
        raise KernelInputError(f"flash1 backward: l must be contiguous fp32 {tuple(m.shape)}, "
                               f"not {tuple(l.shape)} {l.dtype}")
    t = tiles or Fa1Tiles()
    if any(b < 16 or b & (b - 1) for b in (t.block_r, t.block_c)):
        raise KernelInputError(f"flash1 backward: B_r = {t.block_r}, B_c = {t.block_c} must be "
                               "powers of two of at least 16 (Triton tiles)")
    heads, n, d = q.shape
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)
    dq, dk, dv, dk_heads, dv_heads = gradient_buffers(q, k, v, out, group, "flash1 backward")
    block = 1024
    _iosim_fa1_bwd_init_kernel[(triton.cdiv(max(dq.numel(), dk_heads.numel()), block),)](
        dq, dk_heads, dv_heads, dq.numel(), dk_heads.numel(), BLOCK=block, num_warps=4)
    _iosim_fa1_bwd_kernel[(heads,)](
        q, k, v, o, do, dq, dk_heads, dv_heads, l, m, scale, n, group, q.stride(0), k.stride(0),
        HEAD_DIM=d, BLOCK_R=t.block_r, BLOCK_C=t.block_c, CAUSAL=causal,
        num_warps=t.num_warps, num_stages=t.num_stages)
    if group > 1:
        _iosim_bwd_sum_groups_kernel[(triton.cdiv(n * d, block), k.shape[0])](
            dk_heads, dv_heads, dk, dv, n * d, group, BLOCK=block, num_warps=4)
    return dq, dk, dv
