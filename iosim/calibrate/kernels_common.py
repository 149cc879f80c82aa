"""What iosim's Triton attention kernels share, written once as @triton.jit helpers.

Triton inlines a jit function called from a jit function, so these cost nothing at run time;
they exist so that each rule (a program's place in the grid, a tile's offsets, the online
softmax of FA2 Alg. 1, a split's key range and its result, a paged cache's row offsets) has one
home that every kernel of kernels.py, kernels_bwd.py, kernels_variants.py and kernels_mla_fp8.py
calls.

Scores are in log2 units throughout (the caller's qk_scale carries log2 e), so that exp2, the
fast instruction, is the exponential; the natural-log logsumexp is ln 2 · (m + log2 ℓ).
Constants inside jit functions are literals: Triton reads no module global that is not a
`tl.constexpr`.

torch is not imported here; triton is, at module level (only the kernel modules import this).
Under `TRITON_INTERPRET=1` importing this module mends Triton 3.6's interpreter for NumPy 2.4
(triton_interpreter.py), before any kernel here or in a module importing it runs on the CPU.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl

from iosim.calibrate.triton_interpreter import patch_interpreter

if os.environ.get("TRITON_INTERPRET") == "1":
    patch_interpreter()

# ---------------------------------------------------------------------------------------------
# a program's place in the grid, and its tiles' offsets


@triton.jit
def _iosim_program_rows(BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr):
    """This program's place in the (row blocks, batch·heads) grid that every attention kernel
    here launches: its first row, its head (int64, so that a head's offset past 2³¹ elements does
    not wrap), the offsets of its BLOCK rows and of the head dim."""
    start = tl.program_id(0) * BLOCK
    head = tl.program_id(1).to(tl.int64)
    return start, head, start + tl.arange(0, BLOCK), tl.arange(0, HEAD_DIM)


@triton.jit
def _iosim_tile(head, stride_h, rows, stride_rows, cols):
    """Element offsets of the (rows × cols) tile of one head of a (heads, N, width) tensor whose
    rows are contiguous: head · stride_h + row · stride_rows + col."""
    return head * stride_h + rows[:, None] * stride_rows + cols[None, :]


# ---------------------------------------------------------------------------------------------
# the online softmax (FA2 Alg. 1): its state, one key block, a split's result


@triton.jit
def _iosim_softmax_start(ROWS: tl.constexpr, D: tl.constexpr):
    """The online softmax's state before the first key block (FA2 Alg. 1 line 5), on chip and
    fp32: the output accumulator O = 0 (ROWS × D), the row sums ℓ = 0 and the row maxima m = −∞."""
    acc = tl.zeros((ROWS, D), dtype=tl.float32)
    l_i = tl.zeros((ROWS,), dtype=tl.float32)
    m_i = tl.full((ROWS,), -float("inf"), dtype=tl.float32)
    return acc, l_i, m_i


@triton.jit
def _iosim_softmax_step(acc, l_i, m_i, qk, m_new, v):
    """One key block of the online softmax (FA2 Alg. 1 lines 9-10): given the block's scores qk
    (log2 units, masked entries already very negative) and the new row maxima m_new, P = 2^(qk −
    m_new); ℓ and O are rescaled by 2^(m − m_new); ℓ += rowsum P; O += P V (P cast to V's dtype).
    Returns (O, ℓ, m_new)."""
    p = tl.math.exp2(qk - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def _iosim_split_keys(lens_ptr, seq, split, chunk):
    """Keys [lo, hi) of split `split` of sequence `seq`: `chunk` keys a split (chunk_for), cut at
    the sequence's length, read from lens_ptr (one int32 per sequence). lo ≥ hi: an empty split."""
    lo = split * chunk
    hi = tl.minimum(lo + chunk, tl.load(lens_ptr + seq))
    return lo, hi


@triton.jit
def _iosim_split_result(acc, l_i, m_i):
    """A split's partial output O = acc / ℓ (fp32) and natural-log logsumexp L = ln 2 · (m +
    log2 ℓ) per row; a row that saw no key (ℓ = 0: an empty split) gets O = 0 and L = −∞, so that
    the combine gives it weight e^(−∞) = 0 with no NaN."""
    seen = l_i > 0
    l_safe = tl.where(seen, l_i, 1.0)
    out = tl.where(seen[:, None], acc / l_safe[:, None], 0.0)
    lse = tl.where(seen, (m_i + tl.math.log2(l_safe)) * 0.6931471805599453, -float("inf"))
    return out, lse


# ---------------------------------------------------------------------------------------------
# a KV cache's key rows: paged through a block table, or contiguous


@triton.jit
def _iosim_key_rows(table_ptr, stride_tb, seq, keys, key_ok, stride_kp, stride_kn,
                    PAGE: tl.constexpr):
    """Element offset (int64) of each key's row in a KV cache, before the head and column
    offsets. PAGE > 0: paged as vLLM's (pages, PAGE, ...), the key's page read from the block
    table (one int32 per key row here, masked by key_ok), row = page · stride_kp + (key mod
    PAGE) · stride_kn; PAGE = 0: contiguous (sequences, n_kv, ...), seq · stride_kp + key ·
    stride_kn."""
    if PAGE > 0:
        page = tl.load(table_ptr + seq * stride_tb + keys // PAGE, mask=key_ok, other=0)
        row_off = page.to(tl.int64) * stride_kp + (keys % PAGE) * stride_kn
    else:
        row_off = seq.to(tl.int64) * stride_kp + keys.to(tl.int64) * stride_kn
    return row_off


# ---------------------------------------------------------------------------------------------
# the fused forward's key loop (FA2 loop order: this program owns Q_i), causal or not


@triton.jit
def _iosim_attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, lo, hi,
                      offs_m, offs_n, qk_scale, BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr,
                      V_T: tl.constexpr):
    """Key blocks [lo, hi) of the fused forward: load K_j, S = Q Kᵀ · qk_scale (masked above the
    diagonal where DIAGONAL), load V_j, one online-softmax step. V_T: v_ptrs address V stored
    transposed (d, n) per head (stride_vn = 1): its (d × BLOCK_N) block is transposed on chip."""
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        # FA2 Alg. 1 line 7: load K_j (and V_j below)
        k = tl.load(k_ptrs + start_n * stride_kn)
        qk = tl.dot(q, tl.trans(k))
        if DIAGONAL:
            keep = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(keep, 0.0, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(qk, 1))
        else:
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale
        v = tl.load(v_ptrs + start_n * stride_vn)
        if V_T:
            v = tl.trans(v)
        acc, l_i, m_i = _iosim_softmax_step(acc, l_i, m_i, qk, m_new, v)
    return acc, l_i, m_i


@triton.jit
def _iosim_attn_rows(q, k_ptrs, v_ptrs, stride_kn, stride_vn, start_m, n_ctx, offs_m, offs_n,
                     qk_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, V_T: tl.constexpr):
    """The online softmax of this program's BLOCK_M query rows over every key block they see:
    causal, the key blocks wholly below the diagonal unmasked, then the diagonal band masked,
    blocks above it never loaded (FA2 §3.1.1; BLOCK_M a multiple of BLOCK_N); else all n_ctx
    keys. Returns (O unnormalised, ℓ, m), fp32."""
    acc, l_i, m_i = _iosim_softmax_start(BLOCK_M, HEAD_DIM)
    if CAUSAL:
        acc, l_i, m_i = _iosim_attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                          0, start_m, offs_m, offs_n, qk_scale, BLOCK_N, False,
                                          V_T)
        acc, l_i, m_i = _iosim_attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                          start_m, start_m + BLOCK_M, offs_m, offs_n, qk_scale,
                                          BLOCK_N, True, V_T)
    else:
        acc, l_i, m_i = _iosim_attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                          0, n_ctx, offs_m, offs_n, qk_scale, BLOCK_N, False, V_T)
    return acc, l_i, m_i

