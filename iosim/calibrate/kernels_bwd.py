"""A fused FlashAttention-2 backward in Triton (our own code, in the style of kernels.py's forward).

Four kernels, launched in this order by `attention_bwd`:

    bwd_preprocess  D_i = rowsum(dO_i ∘ O_i)                      (FA2 Alg. 2 line 4)
                    one program per query block: read O_i, dO_i; write D_i (fp32)
    bwd_dkdv        one program owns K_j, V_j (a key block of one *query* head) and walks the
                    query blocks: load Q_i, dO_i, L_i, D_i; recompute P_ij = exp(S_ij − L_i);
                    dV_j += P_ijᵀ dO_i, dP_ij = dO_i V_jᵀ, dS_ij = P_ij ∘ (dP_ij − D_i),
                    dK_j += dS_ijᵀ Q_i; write dK_j, dV_j once  (FA2 Alg. 2 lines 6-18 but dQ)
    bwd_dq          one program owns Q_i, dO_i, L_i, D_i and walks the key blocks: load K_j, V_j;
                    recompute P_ij and dS_ij; dQ_i += dS_ij K_j; write dQ_i once
    bwd_sum_groups  GQA only: dK, dV of a KV head = Σ over its query heads of the per-query-head
                    dK, dV the dkdv kernel wrote (grads.py: FA2's dk_expanded, at::sum_out)

Why dQ in its own pass (rather than FA2's fp32 dQaccum updated with atomics from every key block):
no read-modify-write of a (N × d) fp32 accumulator per visited (i, j) pair, no zero-initialisation
and fp32 → fp16 conversion kernels, a deterministic result, and an access pattern (every program
streams K/V of its head, like the forward) that the L2 model already describes. The price is
recomputing S and dP in the dQ pass: 7 matmuls of 2·d FLOPs per score instead of 5 (Triton's
tutorial 06 pays the same). `iosim`'s loop nest for these kernels is algorithms/triton_bwd.py.

Any N: loads past the end of the sequence are masked and read as zero (the EVEN_N path has no
masks). Zero rows contribute nothing, so no extra `where` is needed: a query row past N has
Q = dO = 0 and D = L = 0, giving P = 1 but dV += Pᵀ·0, dS = 1·(0 − 0) = 0; a key row past N has
K = V = 0, so dP = 0 and dQ += dS·0 = 0 — and its dK, dV are never stored.

Causal: key block j is visited by the query blocks on or below the diagonal only (the band of
query blocks that straddles it masked, the rest not), and query block i by the key blocks on or
left of it, exactly the pairs blocks.py's visited_kv_blocks counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import triton
import triton.language as tl

from iosim.calibrate.kernels import LOG2E, KernelInputError
from iosim.calibrate.kernels_common import _iosim_program_rows, _iosim_tile
from iosim.record import Record


class BackwardConfig(Record):
    """Tiles of the two main kernels: dkdv owns block_n1 keys and steps block_m1 queries; dq
    owns block_m2 queries and steps block_n2 keys (block_n1 a multiple of block_m1, block_m2 of
    block_n2, so the causal diagonal band starts on a step)."""

    block_m1: int = 32
    block_n1: int = 128
    block_m2: int = 128
    block_n2: int = 32
    num_warps: int = 4
    num_stages: int = 3
    pre_block: int = 128

    @property
    def label(self) -> str:
        """The tiles of both kernels, warps and stages, as one label."""
        return (f"dkdv{self.block_m1}x{self.block_n1}/dq{self.block_m2}x{self.block_n2}"
                f"/w{self.num_warps}/s{self.num_stages}")


# ---------------------------------------------------------------------------------------------
# preprocess: D = rowsum(dO ∘ O)


@triton.jit
def _iosim_bwd_preprocess_kernel(o_ptr, do_ptr, delta_ptr, n_ctx, stride_h, stride_m,
                                 HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                                 EVEN_N: tl.constexpr):
    _, head, offs_m, offs_d = _iosim_program_rows(BLOCK_M, HEAD_DIM)
    offs = _iosim_tile(head, stride_h, offs_m, stride_m, offs_d)
    # FA2 Alg. 2 line 4: read O_i, dO_i; write D_i (fp32)
    if EVEN_N:
        o = tl.load(o_ptr + offs).to(tl.float32)
        do = tl.load(do_ptr + offs).to(tl.float32)
        tl.store(delta_ptr + head * n_ctx + offs_m, tl.sum(o * do, axis=1))
    else:
        rows = offs_m[:, None] < n_ctx
        o = tl.load(o_ptr + offs, mask=rows, other=0.0).to(tl.float32)
        do = tl.load(do_ptr + offs, mask=rows, other=0.0).to(tl.float32)
        tl.store(delta_ptr + head * n_ctx + offs_m, tl.sum(o * do, axis=1), mask=offs_m < n_ctx)


# ---------------------------------------------------------------------------------------------
# dK, dV: this program owns K_j, V_j


@triton.jit
def _iosim_bwd_dkdv_inner(dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, n_ctx, stride_m,
                          offs_n, offs_d, qk_scale, lo, hi, BLOCK_M1: tl.constexpr,
                          MASK: tl.constexpr, EVEN_N: tl.constexpr):
    for start_m in range(lo, hi, BLOCK_M1):
        start_m = tl.multiple_of(start_m, BLOCK_M1)
        offs_m = start_m + tl.arange(0, BLOCK_M1)
        # Q_i is loaded transposed (d × B_r): Sᵀ = K_j Q_iᵀ keeps the key rows in registers
        qT_ptrs = q_ptr + offs_m[None, :] * stride_m + offs_d[:, None]
        do_ptrs = do_ptr + offs_m[:, None] * stride_m + offs_d[None, :]
        # FA2 Alg. 2 line 9: load Q_i, L_i (then dO_i, D_i below)
        if EVEN_N:
            qT = tl.load(qT_ptrs)
            lse = tl.load(lse_ptr + offs_m)
        else:
            qT = tl.load(qT_ptrs, mask=offs_m[None, :] < n_ctx, other=0.0)
            lse = tl.load(lse_ptr + offs_m, mask=offs_m < n_ctx, other=0.0)
        # FA2 Alg. 2 lines 10-11: Sᵀ = K_j Q_iᵀ, Pᵀ = exp(Sᵀ − L_i) (log2 units: exp2)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT * qk_scale - (lse * 1.4426950408889634)[None, :])
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        if EVEN_N:
            do = tl.load(do_ptrs)
            delta = tl.load(delta_ptr + offs_m)
        else:
            do = tl.load(do_ptrs, mask=offs_m[:, None] < n_ctx, other=0.0)
            delta = tl.load(delta_ptr + offs_m, mask=offs_m < n_ctx, other=0.0)
        # FA2 Alg. 2 line 12: dV_j += P_ijᵀ dO_i
        dv += tl.dot(pT.to(do.dtype), do)
        # lines 13-14: dPᵀ = V_j dO_iᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − D_i)
        dpT = tl.dot(v, tl.trans(do))
        dsT = pT * (dpT - delta[None, :])
        # line 16: dK_j += dS_ijᵀ Q_i (the softmax scale applied once, at the end)
        dk += tl.dot(dsT.to(qT.dtype), tl.trans(qT))
    return dk, dv


@triton.jit
def _iosim_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
                           sm_scale, qk_scale, n_ctx, group, stride_qh, stride_qm, stride_kh,
                           stride_km, stride_dkh, stride_dkm, HEAD_DIM: tl.constexpr,
                           BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, CAUSAL: tl.constexpr,
                           EVEN_N: tl.constexpr):
    # grid (⌈N/B_c⌉, batch·query heads): the key blocks of one head are adjacent in launch order
    start_n, head, offs_n, offs_d = _iosim_program_rows(BLOCK_N1, HEAD_DIM)
    kv_head = head // group  # (batch, head) flattened batch-major: query head h reads KV head h // g
    kv_offs = _iosim_tile(kv_head, stride_kh, offs_n, stride_km, offs_d)
    # FA2 Alg. 2 line 6: load K_j, V_j once; dK_j, dV_j accumulate on chip (fp32)
    if EVEN_N:
        k = tl.load(k_ptr + kv_offs)
        v = tl.load(v_ptr + kv_offs)
    else:
        k = tl.load(k_ptr + kv_offs, mask=offs_n[:, None] < n_ctx, other=0.0)
        v = tl.load(v_ptr + kv_offs, mask=offs_n[:, None] < n_ctx, other=0.0)
    dk = tl.zeros((BLOCK_N1, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N1, HEAD_DIM), dtype=tl.float32)
    q_head = q_ptr + head * stride_qh
    do_head = do_ptr + head * stride_qh
    lse_head = lse_ptr + head * n_ctx
    delta_head = delta_ptr + head * n_ctx
    end = tl.cdiv(n_ctx, BLOCK_M1) * BLOCK_M1  # the last (possibly partial) query block
    if CAUSAL:
        # the query blocks that straddle the diagonal (masked), then those wholly below it;
        # query blocks above it see none of these keys and are never loaded
        band = tl.minimum(start_n + BLOCK_N1, end)
        dk, dv = _iosim_bwd_dkdv_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head,
                                       n_ctx, stride_qm, offs_n, offs_d, qk_scale, start_n, band,
                                       BLOCK_M1, True, EVEN_N)
        dk, dv = _iosim_bwd_dkdv_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head,
                                       n_ctx, stride_qm, offs_n, offs_d, qk_scale, band, end,
                                       BLOCK_M1, False, EVEN_N)
    else:
        dk, dv = _iosim_bwd_dkdv_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head,
                                       n_ctx, stride_qm, offs_n, offs_d, qk_scale, 0, end,
                                       BLOCK_M1, False, EVEN_N)
    # FA2 Alg. 2 line 18: write dK_j, dV_j (of this query head: summed over a GQA group later)
    out = head * stride_dkh + offs_n[:, None] * stride_dkm + offs_d[None, :]
    if EVEN_N:
        tl.store(dk_ptr + out, (dk * sm_scale).to(dk_ptr.dtype.element_ty))
        tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty))
    else:
        tl.store(dk_ptr + out, (dk * sm_scale).to(dk_ptr.dtype.element_ty),
                 mask=offs_n[:, None] < n_ctx)
        tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty), mask=offs_n[:, None] < n_ctx)


# ---------------------------------------------------------------------------------------------
# dQ: this program owns Q_i, dO_i, L_i, D_i


@triton.jit
def _iosim_bwd_dq_inner(dq, q, do, lse2, delta, k_ptr, v_ptr, n_ctx, stride_km, offs_m, offs_d,
                        qk_scale, lo, hi, BLOCK_N2: tl.constexpr, MASK: tl.constexpr,
                        EVEN_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N2):
        start_n = tl.multiple_of(start_n, BLOCK_N2)
        offs_n = start_n + tl.arange(0, BLOCK_N2)
        # K_j, V_j loaded transposed (d × B_c)
        kT_ptrs = k_ptr + offs_n[None, :] * stride_km + offs_d[:, None]
        vT_ptrs = v_ptr + offs_n[None, :] * stride_km + offs_d[:, None]
        # load K_j (then V_j below)
        if EVEN_N:  # noqa: SIM108  (a Triton constexpr branch)
            kT = tl.load(kT_ptrs)
        else:
            kT = tl.load(kT_ptrs, mask=offs_n[None, :] < n_ctx, other=0.0)
        # recompute S_ij = Q_i K_jᵀ, P_ij = exp(S_ij − L_i)
        p = tl.math.exp2(tl.dot(q, kT) * qk_scale - lse2[:, None])
        if MASK:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        if EVEN_N:  # noqa: SIM108  (a Triton constexpr branch)
            vT = tl.load(vT_ptrs)
        else:
            vT = tl.load(vT_ptrs, mask=offs_n[None, :] < n_ctx, other=0.0)
        # dP_ij = dO_i V_jᵀ, dS_ij = P_ij ∘ (dP_ij − D_i); FA2 Alg. 2 line 15: dQ_i += dS_ij K_j
        ds = p * (tl.dot(do, vT) - delta[:, None])
        dq += tl.dot(ds.to(kT.dtype), tl.trans(kT))
    return dq


@triton.jit
def _iosim_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, sm_scale,
                         qk_scale, n_ctx, group, stride_qh, stride_qm, stride_kh, stride_km,
                         HEAD_DIM: tl.constexpr, BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr,
                         CAUSAL: tl.constexpr, EVEN_N: tl.constexpr):
    # grid (⌈N/B_r⌉, batch·query heads), like the forward
    start_m, head, offs_m, offs_d = _iosim_program_rows(BLOCK_M2, HEAD_DIM)
    kv_head = head // group
    q_offs = _iosim_tile(head, stride_qh, offs_m, stride_qm, offs_d)
    # load Q_i, dO_i, L_i, D_i once; dQ_i accumulates on chip (fp32)
    if EVEN_N:
        q = tl.load(q_ptr + q_offs)
        do = tl.load(do_ptr + q_offs)
        lse2 = tl.load(lse_ptr + head * n_ctx + offs_m) * 1.4426950408889634
        delta = tl.load(delta_ptr + head * n_ctx + offs_m)
    else:
        rows = offs_m < n_ctx
        q = tl.load(q_ptr + q_offs, mask=rows[:, None], other=0.0)
        do = tl.load(do_ptr + q_offs, mask=rows[:, None], other=0.0)
        lse2 = tl.load(lse_ptr + head * n_ctx + offs_m, mask=rows, other=0.0) * 1.4426950408889634
        delta = tl.load(delta_ptr + head * n_ctx + offs_m, mask=rows, other=0.0)
    dq = tl.zeros((BLOCK_M2, HEAD_DIM), dtype=tl.float32)
    k_head = k_ptr + kv_head * stride_kh
    v_head = v_ptr + kv_head * stride_kh
    end = tl.cdiv(n_ctx, BLOCK_N2) * BLOCK_N2
    if CAUSAL:
        # key blocks wholly left of the diagonal (unmasked), then the band on it (masked)
        dq = _iosim_bwd_dq_inner(dq, q, do, lse2, delta, k_head, v_head, n_ctx, stride_km,
                                 offs_m, offs_d, qk_scale, 0, start_m, BLOCK_N2, False, EVEN_N)
        dq = _iosim_bwd_dq_inner(dq, q, do, lse2, delta, k_head, v_head, n_ctx, stride_km,
                                 offs_m, offs_d, qk_scale, start_m,
                                 tl.minimum(start_m + BLOCK_M2, end), BLOCK_N2, True, EVEN_N)
    else:
        dq = _iosim_bwd_dq_inner(dq, q, do, lse2, delta, k_head, v_head, n_ctx, stride_km,
                                 offs_m, offs_d, qk_scale, 0, end, BLOCK_N2, False, EVEN_N)
    # write dQ_i once, in the input dtype
    if EVEN_N:
        tl.store(dq_ptr + q_offs, (dq * sm_scale).to(dq_ptr.dtype.element_ty))
    else:
        tl.store(dq_ptr + q_offs, (dq * sm_scale).to(dq_ptr.dtype.element_ty),
                 mask=(offs_m < n_ctx)[:, None])


# ---------------------------------------------------------------------------------------------
# GQA: dK, dV of a KV head = the sum over its query heads


@triton.jit
def _iosim_bwd_sum_groups_kernel(dk_exp, dv_exp, dk, dv, head_elements, group,
                                 BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    kv_head = tl.program_id(1).to(tl.int64)
    mask = offs < head_elements
    acc_k = tl.zeros((BLOCK,), dtype=tl.float32)
    acc_v = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(0, group):
        src = (kv_head * group + r) * head_elements + offs
        # grads.py: read dK_expanded, dV_expanded of each query head of the group
        acc_k += tl.load(dk_exp + src, mask=mask, other=0.0).to(tl.float32)
        acc_v += tl.load(dv_exp + src, mask=mask, other=0.0).to(tl.float32)
    # write dK, dV once per KV head
    tl.store(dk + kv_head * head_elements + offs, acc_k.to(dk.dtype.element_ty), mask=mask)
    tl.store(dv + kv_head * head_elements + offs, acc_v.to(dv.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------------


def gradient_buffers(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None, group: int,
                     who: str) -> tuple[torch.Tensor, ...]:
    """dQ, dK, dV (`out`, checked, or new) and the per-query-head dK, dV a GQA group's sum
    kernel reduces (dK, dV themselves when group == 1)."""
    dq, dk, dv = out if out is not None else (torch.empty_like(q), torch.empty_like(k),
                                              torch.empty_like(v))
    if dq.shape != q.shape or dk.shape != k.shape or dv.shape != v.shape:
        raise KernelInputError(f"{who}: out must be (dq, dk, dv) shaped as q, k, v")
    dk_heads = torch.empty_like(q) if group > 1 else dk
    dv_heads = torch.empty_like(q) if group > 1 else dv
    return dq, dk, dv, dk_heads, dv_heads


def check_backward_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                          do: torch.Tensor, lse: torch.Tensor | None) -> int:
    """The GQA group size g = query heads / KV heads, or KernelInputError naming what is wrong."""
    if lse is None:
        raise KernelInputError("attention backward: the forward's logsumexp (lse) is missing; "
                               "run the forward with lse output and pass it")
    if any(t.dim() != 3 for t in (q, k, v, o, do)):
        raise KernelInputError("attention backward: q, k, v, o and do must be 3-D "
                               "(batch·heads, n, d)")
    heads, n, d = q.shape
    if not (q.shape == o.shape == do.shape) or k.shape != v.shape:
        raise KernelInputError(f"attention backward: q, o, do {tuple(q.shape)}, {tuple(o.shape)}, "
                               f"{tuple(do.shape)} and k, v {tuple(k.shape)}, {tuple(v.shape)} "
                               "must match in pairs")
    kv_heads = k.shape[0]
    if k.shape[1:] != (n, d):
        raise KernelInputError(f"attention backward: k {tuple(k.shape)} must have q's n = {n} and "
                               f"d = {d} (self-attention)")
    if kv_heads == 0 or heads % kv_heads:
        raise KernelInputError(f"attention backward: {heads} query heads are not a multiple of "
                               f"{kv_heads} KV heads")
    if d not in (16, 32, 64, 128):
        raise KernelInputError(f"attention backward: head dim {d} is not one of 16, 32, 64, 128")
    dtypes = {t.dtype for t in (q, k, v, o, do)}
    if len(dtypes) != 1 or q.dtype not in (torch.float16, torch.bfloat16):
        raise KernelInputError("attention backward: q, k, v, o, do must all be fp16 or all bf16")
    if tuple(lse.shape) != (heads, n) or lse.dtype != torch.float32 or not lse.is_contiguous():
        raise KernelInputError(f"attention backward: lse must be the forward's contiguous fp32 "
                               f"({heads}, {n}) logsumexp, not {tuple(lse.shape)} {lse.dtype}")
    if any(not t.is_contiguous() for t in (q, k, v, o, do)):
        raise KernelInputError("attention backward: q, k, v, o, do must be contiguous")
    return heads // kv_heads


def attention_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                  do: torch.Tensor, lse: torch.Tensor | None, *, causal: bool,
                  config: BackwardConfig = BackwardConfig(), sm_scale: float | None = None,
                  out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
                  between: Callable[[], None] | None = None,
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dQ, dK, dV) of o = softmax(q kᵀ · sm_scale [causal]) v, given dO and the forward's lse.

    q, o, do: (batch·heads, n, d); k, v: (batch·kv_heads, n, d), batch-major so that query head
    h reads KV head h // g; lse: (batch·heads, n) fp32, natural log (kernels.attention_fwd's).
    `out`: (dq, dk, dv) to write into (the checks pass NaN-poisoned ones); `between`: called
    between two launches (ncu's evict kernel, to count each kernel on its own).
    """
    group = check_backward_inputs(q, k, v, o, do, lse)
    assert lse is not None
    cfg = config
    if cfg.block_n1 % cfg.block_m1 or cfg.block_m2 % cfg.block_n2:
        raise KernelInputError(f"attention backward: {cfg.label}: block_n1 must be a multiple of "
                               "block_m1 and block_m2 of block_n2")
    heads, n, d = q.shape
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)
    even = n % cfg.pre_block == 0 and n % cfg.block_n1 == 0 and n % cfg.block_m2 == 0
    delta = torch.empty(heads, n, dtype=torch.float32, device=q.device)
    dq, dk, dv, dk_heads, dv_heads = gradient_buffers(q, k, v, out, group, "attention backward")
    pause = between or (lambda: None)
    _iosim_bwd_preprocess_kernel[(triton.cdiv(n, cfg.pre_block), heads)](
        o, do, delta, n, o.stride(0), o.stride(1), HEAD_DIM=d, BLOCK_M=cfg.pre_block,
        EVEN_N=even)
    pause()
    common = dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    _iosim_bwd_dkdv_kernel[(triton.cdiv(n, cfg.block_n1), heads)](
        q, k, v, do, lse, delta, dk_heads, dv_heads, scale, scale * LOG2E, n, group,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), dk_heads.stride(0),
        dk_heads.stride(1), HEAD_DIM=d, BLOCK_M1=cfg.block_m1, BLOCK_N1=cfg.block_n1,
        CAUSAL=causal, EVEN_N=even, **common)
    pause()
    _iosim_bwd_dq_kernel[(triton.cdiv(n, cfg.block_m2), heads)](
        q, k, v, do, lse, delta, dq, scale, scale * LOG2E, n, group, q.stride(0), q.stride(1),
        k.stride(0), k.stride(1), HEAD_DIM=d, BLOCK_M2=cfg.block_m2, BLOCK_N2=cfg.block_n2,
        CAUSAL=causal, EVEN_N=even, **common)
    if group == 1:
        return dq, dk, dv
    pause()
    block = 1024
    _iosim_bwd_sum_groups_kernel[(triton.cdiv(n * d, block), k.shape[0])](
        dk_heads, dv_heads, dk, dv, n * d, group, BLOCK=block, num_warps=4)
    return dq, dk, dv
