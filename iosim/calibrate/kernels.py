"""The Triton kernels `iosim calibrate` times, in the style of Triton's tutorials (our own code).

    copy            y = x, one pass over memory: the streaming (elementwise) ceiling
    bmm             C[b] = A[b] @ B[b] (batched, strides given): the matmul ceiling, and the
                    standard path's S = QKᵀ (Alg. 0 line 1) and O = PV (Alg. 0 line 3)
    softmax_rows    P = softmax(scale · S) row by row (Alg. 0 line 2)
    attention_fwd   fused FlashAttention-2 forward (FA2 Alg. 1), explicit BLOCK_M × BLOCK_N,
                    causal or not; writes O and the natural-log logsumexp L (fp32)

Each private `_kernel` takes `tl.constexpr` tile sizes; each public wrapper checks its inputs
and launches it. Wrappers need sizes divisible by the blocks (the calibration shapes are), so
the kernels carry no bounds masks on their hot loops. Under `TRITON_INTERPRET=1` (set before
this module is imported) the same code runs on CPU tensors, which is how CI tests it.

torch and triton are imported here at module level: only `iosim.calibrate.run` imports this
module, and only after checking that both are installed.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

from iosim.calibrate.kernels_common import _iosim_attn_rows, _iosim_program_rows, _iosim_tile
from iosim.record import Record

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


class KernelInputError(ValueError):
    """Inputs a kernel wrapper cannot launch on (shape, dtype, divisibility)."""


# ---------------------------------------------------------------------------------------------
# copy: one read and one write of every element


@triton.jit
def _iosim_copy_kernel(src, dst, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    # read n elements; write n elements
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def copy(src: torch.Tensor, dst: torch.Tensor, *, block: int = 4096, num_warps: int = 8) -> None:
    """dst = src with the Triton copy kernel (the bandwidth ceiling); same shape and dtype, contiguous."""
    if src.shape != dst.shape or src.dtype != dst.dtype:
        raise KernelInputError(f"copy: src {tuple(src.shape)} {src.dtype} vs dst "
                               f"{tuple(dst.shape)} {dst.dtype}")
    if not (src.is_contiguous() and dst.is_contiguous()):
        raise KernelInputError("copy: src and dst must be contiguous")
    n = src.numel()
    _iosim_copy_kernel[(triton.cdiv(n, block),)](src, dst, n, BLOCK=block, num_warps=num_warps)


# ---------------------------------------------------------------------------------------------
# evict: read a buffer larger than L2 so that the next kernel starts with nothing useful in it
# (used between kernels under ncu; it writes one partial sum per program, nothing else)


@triton.jit
def _iosim_evict_kernel(src, out, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offsets, mask=offsets < n_elements, other=0.0)
    tl.store(out + pid, tl.sum(x.to(tl.float32), axis=0))


def evict_buffers(*, block: int = 8192) -> tuple[torch.Tensor, torch.Tensor]:
    """The buffer `evict` reads and its per-program partial sums, on the current CUDA device:
    8× the L2 (at least 512 MiB), so that one read leaves nothing of an earlier kernel in L2
    (the ncu protocol of calibrate/ncu.py, forward and backward)."""
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20))
    evict_bytes = max(512 << 20, 8 * l2)
    buffer = torch.randn(evict_bytes // 2, dtype=torch.float16, device="cuda")
    partials = torch.empty(buffer.numel() // block + 1, dtype=torch.float32, device="cuda")
    return buffer, partials


def evict(buffer: torch.Tensor, partials: torch.Tensor, *, block: int = 8192) -> None:
    """Read all of `buffer` (sized beyond L2, evict_buffers) so that the next kernel starts cold."""
    n = buffer.numel()
    programs = triton.cdiv(n, block)
    if partials.numel() < programs:
        raise KernelInputError(f"evict: partials needs {programs} elements")
    _iosim_evict_kernel[(programs,)](buffer, partials, n, BLOCK=block, num_warps=8)


# ---------------------------------------------------------------------------------------------
# fill: write-only streaming (the write-bandwidth ceiling)


@triton.jit
def _iosim_fill_kernel(dst, value, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    # write n elements, read nothing
    tl.store(dst + offsets, tl.full((BLOCK,), value, dst.dtype.element_ty),
             mask=offsets < n_elements)


def fill(dst: torch.Tensor, value: float, *, block: int = 4096, num_warps: int = 8) -> None:
    """dst = value everywhere, written only (the write-bandwidth ceiling)."""
    if not dst.is_contiguous():
        raise KernelInputError("fill: dst must be contiguous")
    n = dst.numel()
    _iosim_fill_kernel[(triton.cdiv(n, block),)](dst, value, n, BLOCK=block, num_warps=num_warps)


# ---------------------------------------------------------------------------------------------
# batched matmul


class MatmulConfig(Record):
    """The Triton matmul's tiles, group size and launch configuration."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3


@triton.jit
def _iosim_bmm_kernel(
    a, b, c, M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # Grouped ordering (tutorial 03): GROUP_M row blocks share their B tiles while in L2.
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    blocks_m = M // BLOCK_M
    blocks_n = N // BLOCK_N
    per_group = GROUP_M * blocks_n
    group = pid // per_group
    first_m = group * GROUP_M
    group_size = min(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_size
    pid_n = (pid % per_group) // group_size

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a + batch * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b + batch * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        # read a BLOCK_M × BLOCK_K tile of A and a BLOCK_K × BLOCK_N tile of B
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    # write one BLOCK_M × BLOCK_N tile of C
    tl.store(c_ptrs, acc.to(c.dtype.element_ty))


def bmm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
        config: MatmulConfig = MatmulConfig()) -> Any:
    """c[i] = a[i] @ b[i] for 3-D tensors of any strides (b may be a transposed view)."""
    if a.dim() != 3 or b.dim() != 3 or c.dim() != 3:
        raise KernelInputError("bmm: a, b and c must be 3-D (batch, rows, cols)")
    batch, m, k = a.shape
    if b.shape[0] != batch or b.shape[1] != k or tuple(c.shape) != (batch, m, b.shape[2]):
        raise KernelInputError(f"bmm: shapes {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(c.shape)}")
    n = b.shape[2]
    for name, size, block in (("M", m, config.block_m), ("N", n, config.block_n),
                              ("K", k, config.block_k)):
        if size % block:
            raise KernelInputError(f"bmm: {name} = {size} is not a multiple of its block {block}")
    grid = ((m // config.block_m) * (n // config.block_n), batch)
    return _iosim_bmm_kernel[grid](
        a, b, c, m, n, k,
        a.stride(0), a.stride(1), a.stride(2),
        b.stride(0), b.stride(1), b.stride(2),
        c.stride(0), c.stride(1), c.stride(2),
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        GROUP_M=config.group_m, num_warps=config.num_warps, num_stages=config.num_stages,
    )


# ---------------------------------------------------------------------------------------------
# S = QKᵀ one row strip per program: Q_i stays on chip, K_j streams through (software-pipelined),
# S_ij is stored as soon as it is computed, so loads of K and stores of S overlap


@triton.jit
def _iosim_qk_rows_kernel(q_ptr, k_ptr, s_ptr, n_kv, stride_qh, stride_qm, stride_kh, stride_kn,
                          stride_sh, stride_sm, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr):
    _, head, offs_m, offs_d = _iosim_program_rows(BLOCK_M, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    # Alg. 0 line 1: load Q by blocks (this program's rows, once)
    q = tl.load(q_ptr + _iosim_tile(head, stride_qh, offs_m, stride_qm, offs_d))
    k_ptrs = k_ptr + _iosim_tile(head, stride_kh, offs_n, stride_kn, offs_d)
    s_ptrs = s_ptr + _iosim_tile(head, stride_sh, offs_m, stride_sm, offs_n)
    for start_n in range(0, n_kv, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        # Alg. 0 line 1: load K by blocks; compute S = QKᵀ; write S to HBM
        k = tl.load(k_ptrs + start_n * stride_kn)
        tl.store(s_ptrs + start_n, tl.dot(q, tl.trans(k)).to(s_ptr.dtype.element_ty))


class RowsConfig(Record):
    """The row-strip QKᵀ kernel's tiles and launch configuration."""

    block_m: int = 128
    block_n: int = 128
    num_warps: int = 8
    num_stages: int = 3


def qk_rows(q: torch.Tensor, k: torch.Tensor, s: torch.Tensor,
            config: RowsConfig = RowsConfig()) -> Any:
    """s[h] = q[h] @ k[h]ᵀ for (heads, n, d) q, k with contiguous rows and (heads, n, n_kv) s."""
    heads, n, d = q.shape
    n_kv = k.shape[1]
    if k.shape[0] != heads or k.shape[2] != d or tuple(s.shape) != (heads, n, n_kv):
        raise KernelInputError(f"qk_rows: shapes {tuple(q.shape)}, {tuple(k.shape)} -> {tuple(s.shape)}")
    if q.stride(2) != 1 or k.stride(2) != 1 or s.stride(2) != 1:
        raise KernelInputError("qk_rows: rows must be contiguous")
    if n % config.block_m or n_kv % config.block_n:
        raise KernelInputError(f"qk_rows: n = {n}, n_kv = {n_kv} must be multiples of "
                               f"{config.block_m}, {config.block_n}")
    return _iosim_qk_rows_kernel[(n // config.block_m, heads)](
        q, k, s, n_kv, q.stride(0), q.stride(1), k.stride(0), k.stride(1), s.stride(0),
        s.stride(1), HEAD_DIM=d, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        num_warps=config.num_warps, num_stages=config.num_stages)


# ---------------------------------------------------------------------------------------------
# row softmax


@triton.jit
def _iosim_softmax_kernel(s, p, n_cols, stride_s, stride_p, scale_log2, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # read one row of S (n_cols elements)
    x = tl.load(s + row * stride_s + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x * scale_log2
    e = tl.math.exp2(x - tl.max(x, axis=0))
    # write one row of P
    tl.store(p + row * stride_p + cols, (e / tl.sum(e, axis=0)).to(p.dtype.element_ty), mask=mask)


def softmax_warps(n_cols: int) -> int:
    """Warps per row: enough threads that each holds at most 32 fp32 values of the row."""
    return max(4, min(16, int(triton.next_power_of_2(n_cols)) // 1024))


def softmax_rows(s: torch.Tensor, p: torch.Tensor, scale: float) -> None:
    """p = softmax(scale · s) along the last axis of (rows, n_cols) views."""
    if s.shape != p.shape or s.dim() != 2:
        raise KernelInputError(f"softmax: s {tuple(s.shape)} and p {tuple(p.shape)} must be equal 2-D")
    if s.stride(1) != 1 or p.stride(1) != 1:
        raise KernelInputError("softmax: rows must be contiguous")
    rows, n_cols = s.shape
    _iosim_softmax_kernel[(rows,)](s, p, n_cols, s.stride(0), p.stride(0), scale * LOG2E,
                                   BLOCK=triton.next_power_of_2(n_cols),
                                   num_warps=softmax_warps(n_cols))


# ---------------------------------------------------------------------------------------------
# fused attention forward (FlashAttention-2 loop order: this program owns Q_i)


class AttentionConfig(Record):
    """The fused forward's tiles (BLOCK_M × BLOCK_N) and launch configuration."""

    block_m: int = 128
    block_n: int = 64
    num_warps: int = 8
    num_stages: int = 3

    @property
    def label(self) -> str:
        """"128x64/w8/s3": the tiles, warps and stages."""
        return f"{self.block_m}x{self.block_n}/w{self.num_warps}/s{self.num_stages}"


@triton.jit
def _iosim_attn_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, qk_scale, n_ctx,
    stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vn, stride_oh, stride_om,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    # grid (n_ctx / BLOCK_M, batch·heads): query blocks of one head are adjacent in launch order
    start_m, head, offs_m, offs_d = _iosim_program_rows(BLOCK_M, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    # FA2 Alg. 1 line 4: load Q_i once; O_i, l_i, m_i stay on chip
    q = tl.load(q_ptr + _iosim_tile(head, stride_qh, offs_m, stride_qm, offs_d))
    k_ptrs = k_ptr + _iosim_tile(head, stride_kh, offs_n, stride_kn, offs_d)
    v_ptrs = v_ptr + _iosim_tile(head, stride_vh, offs_n, stride_vn, offs_d)
    acc, l_i, m_i = _iosim_attn_rows(q, k_ptrs, v_ptrs, stride_kn, stride_vn, start_m, n_ctx,
                                     offs_m, offs_n, qk_scale, BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL,
                                     False)
    # FA2 Alg. 1 lines 12-15: O_i = diag(l_i)⁻¹ O_i, L_i = m_i + log l_i; write O_i and L_i
    acc = acc / l_i[:, None]
    tl.store(lse_ptr + head * n_ctx + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453)
    tl.store(o_ptr + _iosim_tile(head, stride_oh, offs_m, stride_om, offs_d),
             acc.to(o_ptr.dtype.element_ty))


def attention_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                  lse: torch.Tensor, *, causal: bool, config: AttentionConfig = AttentionConfig(),
                  sm_scale: float | None = None) -> Any:
    """o = softmax(q kᵀ · sm_scale [causal]) v and lse = its natural-log logsumexp, per head.

    q, k, v, o: (heads, n, d) with contiguous rows (heads may be batch·heads); lse: (heads, n) fp32.
    """
    if not (q.shape == k.shape == v.shape == o.shape) or q.dim() != 3:
        raise KernelInputError("attention: q, k, v and o must have one (heads, n, d) shape")
    heads, n, d = q.shape
    if tuple(lse.shape) != (heads, n) or lse.dtype != torch.float32 or not lse.is_contiguous():
        raise KernelInputError(f"attention: lse must be a contiguous fp32 ({heads}, {n}) tensor")
    if any(t.stride(2) != 1 for t in (q, k, v, o)):
        raise KernelInputError("attention: the head dimension must be contiguous")
    if d not in (16, 32, 64, 128, 256):
        raise KernelInputError(f"attention: head dim {d} is not one of 16, 32, 64, 128, 256")
    if n % config.block_m or n % config.block_n or config.block_m % config.block_n:
        raise KernelInputError(f"attention: n = {n} must be a multiple of BLOCK_M = "
                               f"{config.block_m} and BLOCK_N = {config.block_n}, and BLOCK_M of "
                               "BLOCK_N")
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)
    grid = (n // config.block_m, heads)
    return _iosim_attn_fwd_kernel[grid](
        q, k, v, o, lse, scale * LOG2E, n,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        o.stride(0), o.stride(1),
        HEAD_DIM=d, BLOCK_M=config.block_m, BLOCK_N=config.block_n, CAUSAL=causal,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
