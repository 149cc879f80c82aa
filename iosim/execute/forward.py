"""Forward executors: standard attention, FlashAttention (Algorithm 1), FlashAttention-2.

Each is the algorithm's loop nest written out by hand on real numbers — deliberately NOT derived
from the loop-nest descriptions in iosim/algorithms, so that its counts are an independent check
of them. Kernel and tensor names follow those descriptions so that counts compare term by term.

Conventions shared by all executors (and by iosim/execute/reference.py):
  - scores are τ·QKᵀ with τ = 1/√d; a causal mask is bottom-right aligned (query q sees keys
    k <= q + N_kv − N_q); a query row that sees no key at all outputs 0 (FlashAttention-2's
    convention; its logsumexp is +∞, as FA2's CUDA kernel writes).
  - GQA/MQA: query head h reads K and V of KV head h // (heads / kv_heads), once per query head.
  - dropout (when 'dropout' is listed as unfused): P ← P ∘ Z / (1 − p) with Z from
    numerics.dropout_keep, which standard attention materialises and the tiled kernels
    regenerate on chip (Alg. 2); the row sums l use P before dropout, as Alg. 2 does.
  - block-sparse (Workload.sparsity < 1): the tiled kernels skip the zero pairs of the mask
    (numerics.Problem.nonzero_blocks, on the grid of their blocks), as the paper's Algorithm 5;
    standard attention applies the same mask to S, fused into its softmax like the causal mask,
    so it computes the same function with dense traffic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.execute.fp8 import quantise, read_block_scale, read_descales, read_gemm_scales
from iosim.execute.numerics import dropout_keep
from iosim.execute.paged import read_rows, read_table
from iosim.execute.registry import Run, register

Array = np.ndarray[Any, Any]


def _dropped(run: Run, p: Array, b: int, h: int, q0: int, q1: int, k0: int, k1: int) -> Array:
    """P with dropout applied (the mask regenerated for exactly this block of scores)."""
    if not run.dropout:
        return p
    keep = dropout_keep(run.seed, run.problem, b, h, q0, q1, k0, k1, run.dropout_p)
    return np.where(keep, p / (1.0 - run.dropout_p), 0.0).astype(p.dtype)


def online_step(m_i: Array, l_i: Array, s: Array) -> tuple[Array, Array, Array, Array]:
    """FA2 Alg. 1 line 9 for one key block: (m_new, l_new, P̃, e^{m_i − m_new}).

    m_new = max(m_i, rowmax S), P̃ = exp(S − m_new), l_new = e^{m_i − m_new} l_i + rowsum(P̃);
    the caller does line 10, O_i ← diag(e^{m_i − m_new}) O_i + P̃ V_j (after dropout on P̃).
    """
    m_new = np.maximum(m_i, s.max(axis=1))
    base = _finite_or_zero(m_new)
    p = np.exp(s - base[:, None])
    alpha = np.exp(m_i - base)
    return m_new, alpha * l_i + p.sum(axis=1), p, alpha


def read_v(run: Run, b: int, kv_head: int, stop: int | None = None) -> Array:
    """All of V for one (batch, KV head) (its first `stop` rows: a ragged batch's request), as
    an unfused kernel reads it: from V, or, for MLA's latent cache, the first d_v columns of K
    (a read of those columns of K's rows)."""
    pr = run.problem
    if pr.latent_kv:
        return run.hbm.read("K", b, kv_head, 0, stop, cols=pr.dv)
    return run.hbm.read("V", b, kv_head, 0, stop)


def load_v_tile(run: Run, b: int, kv_head: int, k0: int, k1: int, k_tile: Array,
                entries: Array | None = None) -> Array:
    """V_j of a fused kernel (rows k0..k1), held in SRAM with K_j: read from V, or, for MLA's
    latent cache, the first d_v columns of the K_j tile already on chip (no HBM read, no
    second tile: FlashMLA multiplies P by that part of its K tile)."""
    pr, pc, sram = run.problem, run.precision, run.sram
    sram.hold("K_j", (k1 - k0) * pr.d, pc.storage_bytes)
    if pr.latent_kv:
        return k_tile[:, :pr.dv].astype(pc.storage)
    # through the block table's `entries` for a paged cache (execute/paged.py)
    v = read_rows(run.hbm, run.page_size, entries, "V", b, kv_head, k0, k1)
    sram.hold("V_j", (k1 - k0) * pr.dv, pc.storage_bytes)
    return v


def _finite_or_zero(x: Array) -> Array:
    """The max to subtract: a row that has seen no key yet (max −∞) subtracts 0 instead of −∞,
    so that exp(−∞ − (−∞)) never produces NaN."""
    return np.where(np.isfinite(x), x, 0.0).astype(x.dtype)


# ---------------------------------------------------------------------------------------------
# Standard attention: Algorithm 0 (one kernel per line), with the optional unfused kernels


@register("standard", "fwd")
def standard_forward(run: Run) -> None:
    """Algorithm 0 through the instrumented HBM: S = QKᵀ and P = softmax(S) written whole, then
    O = PV (with the unfused scale, mask and dropout passes the workload names)."""
    hbm, pr, pc = run.hbm, run.problem, run.precision
    n_q, n_kv = pr.n_q, pr.n_kv
    shape = (pr.batch, pr.heads, n_q, n_kv)
    hbm.allocate("S", shape, pc.storage)
    hbm.allocate("P", shape, pc.storage)
    hbm.allocate("O", (pr.batch, pr.heads, n_q, pr.dv), pc.storage)
    heads = [(b, h) for b in range(pr.batch) for h in range(pr.heads)]
    # the causal mask and a block-sparse mask (on the grid of the tiled kernels' blocks): standard
    # attention computes the same masked attention, densely
    allowed = pr.attention_mask(run.block_q, run.block_kv)
    scale_unfused, mask_unfused = "scale" in run.unfused, "mask" in run.unfused
    quantise(run)  # FP8: per-tensor factors, the GEMMs' (host side, uncounted)
    # a ragged batch (shared prefix): request b's rows of S, P, Z hold its own keys only
    width = {b: (run.kv_len(b) if run.kv_lens is not None else None) for b in range(pr.batch)}

    with hbm.kernel("qk"):  # Alg. 0 line 1: load Q, K by blocks, compute S = QKᵀ, write S
        for b, h in heads:
            q = hbm.read("Q", b, h)
            k = hbm.read("K", b, pr.kv_head(h), 0, run.kv_len(b))
            s = pc.matmul(q, k.T) * pc.compute(read_gemm_scales(run, b, pr.kv_head(h), "q", "k"))
            run.scores.hold(n_q, run.kv_len(b))
            # the scale τ rides on the matmul (cuBLAS alpha) unless it is its own kernel
            hbm.write("S", b, h, None, None, s if scale_unfused else s * pc.compute(pr.scale),
                      cols=width[b])
    if scale_unfused:
        with hbm.kernel("scale"):  # unfused scale kernel: read S, write S/√d
            for b, h in heads:
                s = hbm.read("S", b, h, cols=width[b]).astype(pc.compute)
                hbm.write("S", b, h, None, None, s * pc.compute(pr.scale), cols=width[b])
    if mask_unfused:
        with hbm.kernel("mask"):  # unfused mask kernel: read S, write mask(S)
            for b, h in heads:
                s = hbm.read("S", b, h, cols=width[b])
                hbm.write("S", b, h, None, None, np.where(allowed[..., :s.shape[-1]], s, -np.inf),
                          cols=width[b])
    with hbm.kernel("softmax"):  # Alg. 0 line 2: read S, compute P = softmax(S), write P
        for b, h in heads:
            s = hbm.read("S", b, h, cols=width[b]).astype(pc.compute)
            # the mask fused into the softmax (a no-op if done)
            s = np.where(allowed[..., :s.shape[-1]], s, -np.inf)
            m = _finite_or_zero(s.max(axis=1))
            e = np.exp(s - m[:, None])
            total = e.sum(axis=1)
            safe = np.where(total > 0, total, 1.0)
            hbm.write("P", b, h, None, None, e / safe[:, None], cols=width[b])
    dropout = "dropout" in run.unfused
    if dropout:
        # P itself stays for the backward's softmax (Alg. 3 line 3); the dropped P feeds O = PV
        hbm.allocate("P_drop", shape, pc.storage)
        hbm.allocate("Z", shape, np.uint8)
        with hbm.kernel("dropout"):  # unfused dropout: read P, write dropped P and the mask Z
            for b, h in heads:
                p = hbm.read("P", b, h, cols=width[b]).astype(pc.compute)
                keep = dropout_keep(run.seed, pr, b, h, 0, n_q, 0, p.shape[-1], run.dropout_p)
                scaled = p / pc.compute(1.0 - run.dropout_p) if run.dropout_p else p
                hbm.write("P_drop", b, h, None, None, np.where(keep, scaled, 0.0),
                          cols=width[b])
                hbm.write("Z", b, h, None, None, keep, cols=width[b])
    with hbm.kernel("pv"):  # Alg. 0 line 3: load P and V by blocks, compute O = PV, write O
        for b, h in heads:
            p = hbm.read("P_drop" if dropout else "P", b, h, cols=width[b])
            v = read_v(run, b, pr.kv_head(h), run.kv_len(b))
            dequant = pc.compute(read_gemm_scales(run, b, pr.kv_head(h), "v"))
            hbm.write("O", b, h, None, None, pc.matmul(p, v) * dequant)


# ---------------------------------------------------------------------------------------------
# FlashAttention, Algorithm 1: K/V blocks outer; O, l, m live in HBM and are re-read every pass


@register("flash1", "fwd")
def flash1_forward(run: Run) -> None:
    """Algorithm 1: K/V blocks outer, Q_i, O_i, l_i, m_i read and O_i, l_i, m_i written per block
    pair, the online softmax kept in l and m."""
    hbm, pr, pc, sram = run.hbm, run.problem, run.precision, run.sram
    d, dv, cdt = pr.d, pr.dv, pc.compute
    hbm.allocate("O", (pr.batch, pr.heads, pr.n_q, dv), pc.storage)
    hbm.allocate("l", (pr.batch, pr.heads, pr.n_q), pc.stats)
    hbm.allocate("m", (pr.batch, pr.heads, pr.n_q), pc.stats)
    heads = [(b, h) for b in range(pr.batch) for h in range(pr.heads)]
    row_blocks, kv_blocks = pr.row_blocks(run.block_q), pr.kv_blocks(run.block_kv)
    computed = pr.nonzero_blocks(run.block_q, run.block_kv)
    quantise(run, pr)  # FP8: the factors, on this kernel's tiles (host side, uncounted)

    with hbm.kernel("init"):  # Alg. 1 line 2: initialise O = (0), l = (0), m = (−∞) in HBM
        for b, h in heads:
            hbm.write("O", b, h, None, None, 0.0, init=True)
            hbm.write("l", b, h, None, None, 0.0, init=True)
            hbm.write("m", b, h, None, None, -np.inf, init=True)

    with hbm.kernel("attn"):
        for b, h in heads:
            qs, ks, vs = read_descales(run, b, pr.kv_head(h))  # FP8: the program's factors
            for j, (k0, k1) in enumerate(kv_blocks):  # Alg. 1 line 5
                # line 6: load K_j, V_j from HBM to on-chip SRAM
                k = hbm.read("K", b, pr.kv_head(h), k0, k1).astype(cdt)
                k_scale = read_block_scale(run, "K_scale", b, pr.kv_head(h), j)
                v = load_v_tile(run, b, pr.kv_head(h), k0, k1, k)
                v_scale = k_scale if pr.latent_kv else read_block_scale(
                    run, "V_scale", b, pr.kv_head(h), j)
                for i, (q0, q1) in enumerate(row_blocks):  # line 7
                    if not computed[i, j]:
                        # causal: the block lies wholly above the diagonal; block-sparse (Alg. 5):
                        # a zero block of the mask is skipped
                        continue
                    # line 8: load Q_i, O_i, l_i, m_i from HBM to on-chip SRAM
                    q = hbm.read("Q", b, h, q0, q1)
                    q_scale = qs * read_block_scale(run, "Q_scale", b, h, i)
                    o = hbm.read("O", b, h, q0, q1).astype(cdt)
                    l_i = hbm.read("l", b, h, q0, q1).astype(cdt)
                    m_i = hbm.read("m", b, h, q0, q1).astype(cdt)
                    rows = q1 - q0
                    sram.hold("Q_i", rows * d, pc.storage_bytes)
                    sram.hold("O_i", rows * dv, pc.storage_bytes)
                    sram.hold("l_i", rows, pc.stats_bytes)
                    sram.hold("m_i", rows, pc.stats_bytes)
                    # line 9: S_ij = τ Q_i K_jᵀ (on chip), masked; FP8: dequantised
                    s = pc.matmul(q, k.T) * cdt(pr.scale * q_scale * ks * k_scale)
                    run.scores.hold(rows, k1 - k0)
                    s = np.where(pr.causal_allowed(q0, q1, k0, k1), s, -np.inf)
                    # line 10: m̃_ij = rowmax(S_ij), P̃_ij = exp(S_ij − m̃_ij), l̃_ij = rowsum(P̃_ij)
                    m_tilde = s.max(axis=1)
                    p = np.exp(s - _finite_or_zero(m_tilde)[:, None])
                    l_tilde = p.sum(axis=1)
                    # line 11: m_new = max(m_i, m̃_ij), l_new = e^{m_i − m_new} l_i + e^{m̃ − m_new} l̃
                    m_new = np.maximum(m_i, m_tilde)
                    base = _finite_or_zero(m_new)
                    alpha, beta = np.exp(m_i - base), np.exp(m_tilde - base)
                    l_new = alpha * l_i + beta * l_tilde
                    # line 12: O_i ← diag(l_new)⁻¹ (diag(l_i) e^{m_i − m_new} O_i + e^{m̃ − m_new} P̃ V_j)
                    pv = pc.matmul(_dropped(run, p, b, h, q0, q1, k0, k1), v) * cdt(vs * v_scale)
                    numerator = (alpha * l_i)[:, None] * o + beta[:, None] * pv
                    safe = np.where(l_new > 0, l_new, 1.0)
                    hbm.write("O", b, h, q0, q1, numerator / safe[:, None])
                    # line 13: write l_i ← l_new, m_i ← m_new
                    hbm.write("l", b, h, q0, q1, l_new)
                    hbm.write("m", b, h, q0, q1, m_new)
                    sram.drop("Q_i", "O_i", "l_i", "m_i")
                sram.drop("K_j", "V_j")


# ---------------------------------------------------------------------------------------------
# FlashAttention-2, Algorithm 1: Q blocks outer; O, l, m on chip; O and L written once


@register("flash2", "fwd")
def flash2_forward(run: Run) -> None:
    """FlashAttention-2's forward: Q blocks outer, K_j, V_j streamed, O_i and the logsumexp L_i
    written once per query block."""
    hbm, pr, pc, sram = run.hbm, run.problem, run.precision, run.sram
    d, dv, cdt = pr.d, pr.dv, pc.compute
    hbm.allocate("O", (pr.batch, pr.heads, pr.n_q, dv), pc.storage)
    hbm.allocate("L", (pr.batch, pr.heads, pr.n_q), pc.stats)
    heads = [(b, h) for b in range(pr.batch) for h in range(pr.heads)]
    row_blocks, kv_blocks = pr.row_blocks(run.block_q), pr.kv_blocks(run.block_kv)
    computed = pr.nonzero_blocks(run.block_q, run.block_kv)
    quantise(run, pr)  # FP8: the factors, on this kernel's tiles (host side, uncounted)

    with hbm.kernel("attn"):
        for b, h in heads:
            for i, (q0, q1) in enumerate(row_blocks):  # FA2 Alg. 1 line 3
                rows = q1 - q0
                q = hbm.read("Q", b, h, q0, q1)  # line 4: load Q_i
                qs, ks, vs = read_descales(run, b, pr.kv_head(h))  # FP8: FA3's mainloop start
                qs *= read_block_scale(run, "Q_scale", b, h, i)
                # line 5: O_i = (0), l_i = (0), m_i = (−∞) on chip; the accumulator is kept in
                # the compute dtype but charged to the SRAM at O's width, as the working set does
                acc = np.zeros((rows, dv), dtype=cdt)
                l_i = np.zeros(rows, dtype=cdt)
                m_i = np.full(rows, -np.inf, dtype=cdt)
                sram.hold("Q_i", rows * d, pc.storage_bytes)
                sram.hold("O_i", rows * dv, pc.storage_bytes)
                sram.hold("l_i", rows, pc.stats_bytes)
                sram.hold("m_i", rows, pc.stats_bytes)
                for j, (k0, k1) in enumerate(kv_blocks):  # line 6
                    if not pr.block_visited(q0, q1, k0, k1):
                        continue  # causal: above the diagonal; a window or another sequence
                    if not computed[i, j]:
                        continue  # block-sparse: a zero block of the mask is skipped
                    # line 7: load K_j, V_j (through the block table of a paged cache)
                    entries = read_table(hbm, run.page_size, b, k0, k1)
                    k = read_rows(hbm, run.page_size, entries, "K", b, pr.kv_head(h), k0,
                                  k1).astype(cdt)
                    k_scale = read_block_scale(run, "K_scale", b, pr.kv_head(h), j)
                    v = load_v_tile(run, b, pr.kv_head(h), k0, k1, k, entries)
                    v_scale = k_scale if pr.latent_kv else read_block_scale(
                        run, "V_scale", b, pr.kv_head(h), j)
                    # line 8: S_ij = τ Q_i K_jᵀ, masked; FP8: dequantised
                    s = pc.matmul(q, k.T) * cdt(pr.scale * qs * ks * k_scale)
                    run.scores.hold(rows, k1 - k0)
                    s = np.where(pr.causal_allowed(q0, q1, k0, k1), s, -np.inf)
                    m_i, l_i, p, alpha = online_step(m_i, l_i, s)  # line 9
                    # line 10: O_i ← diag(e^{m_i − m_new}) O_i + P̃ V_j (un-normalised)
                    acc = alpha[:, None] * acc + pc.matmul(
                        _dropped(run, p, b, h, q0, q1, k0, k1), v) * cdt(vs * v_scale)
                    sram.drop("K_j", "V_j")
                # line 12: O_i ← diag(l_i)⁻¹ O_i; line 13: L_i = m_i + log(l_i)
                seen = l_i > 0
                out = acc / np.where(seen, l_i, 1.0)[:, None]
                lse = np.where(seen, _finite_or_zero(m_i) + np.log(np.where(seen, l_i, 1.0)), np.inf)
                hbm.write("O", b, h, q0, q1, out)  # line 14: write O_i
                hbm.write("L", b, h, q0, q1, lse)  # line 15: write L_i
                sram.drop("Q_i", "O_i", "l_i", "m_i")
