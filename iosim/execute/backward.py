"""Backward executors: standard attention (Algorithm 3), FlashAttention (Algorithm 4) and
FlashAttention-2 (as its CUDA code runs it), and the GQA/MQA dK/dV group sum.

Like forward.py, each is written by hand from the papers' loops and the FlashAttention-2 sources,
NOT from the loop-nest descriptions in iosim/algorithms: its counts check theirs. Kernel and
tensor names follow those descriptions (dK_expanded/dV_expanded under GQA, grads.py) so that
counts compare term by term. Each finds in HBM what its forward left there (O and l, m for
flash1, O and L for flash2; P, and P_drop and Z under unfused dropout, for standard) and dO.

The gradient (reference.py has it as formulas), with τ = 1/√d and dropout Z/(1 − p):
    dV = P_dropᵀ dO,  dP = (dO Vᵀ)∘Z/(1 − p),  dS = P∘(dP − rowsum(P∘dP)),
    dQ = τ dS K,  dK = τ dSᵀ Q
The tiled kernels recompute P from the forward's statistics, regenerate their tile of the
dropout mask (Alg. 4 line 14) and use D_i = rowsum(dO_i∘O_i), which equals rowsum(P∘dP).
Block-sparse: the tiled kernels skip the zero pairs of the mask; standard applies it to dS when
its mask kernel is unfused (the zero blocks' P is 0, so dS is 0 there anyway).

Precision: gradients of the inputs (dQ, dK, dV) and standard's dP, dS are stored in the storage
dtype; the tiles' accumulators (dK_j, dV_j on chip) are in the compute dtype; FlashAttention-2's
D and dQaccum are fp32 (the statistics dtype), as in its code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.execute.numerics import Problem, dropout_keep
from iosim.execute.registry import Run, register

Array = np.ndarray[Any, Any]


def _grad_names(pr: Problem) -> tuple[str, str]:
    """Where a backward kernel writes dK, dV: per query head (then summed) under GQA/MQA."""
    return ("dK_expanded", "dV_expanded") if pr.group > 1 else ("dK", "dV")


def _allocate_grads(run: Run) -> tuple[str, str]:
    pr, pc, hbm = run.problem, run.precision, run.hbm
    dk, dv = _grad_names(pr)
    heads = pr.heads if pr.group > 1 else pr.kv_heads
    hbm.allocate("dQ", (pr.batch, pr.heads, pr.n_q, pr.d), pc.storage)
    hbm.allocate(dk, (pr.batch, heads, pr.n_kv, pr.d), pc.storage)
    hbm.allocate(dv, (pr.batch, heads, pr.n_kv, pr.dv), pc.storage)
    return dk, dv


def _grad_head(pr: Problem, head: int) -> int:
    """The head a backward kernel's dK/dV of query head `head` go to: its own under GQA (the
    expanded buffers), else the KV head (which is the same number)."""
    return head if pr.group > 1 else pr.kv_head(head)


def _key_block_start(run: Run, b: int, h: int, k0: int, k1: int
                     ) -> tuple[Array, Array, Array, Array]:
    """A K/V-outer backward's key block j = keys [k0, k1) of query head h brought on chip: K_j,
    V_j read from HBM (its KV head), dK_j = dV_j = 0 in the compute dtype, the four held in
    SRAM. Returns (K_j, V_j, dK_j, dV_j)."""
    hbm, pr, pc, sram = run.hbm, run.problem, run.precision, run.sram
    cols = k1 - k0
    k = hbm.read("K", b, pr.kv_head(h), k0, k1)
    v = hbm.read("V", b, pr.kv_head(h), k0, k1)
    dk = np.zeros((cols, pr.d), dtype=pc.compute)
    dv = np.zeros((cols, pr.dv), dtype=pc.compute)
    for name, width in (("K_j", pr.d), ("V_j", pr.dv), ("dK_j", pr.d), ("dV_j", pr.dv)):
        sram.hold(name, cols * width, pc.storage_bytes)
    return k, v, dk, dv


def _key_block_end(run: Run, names: tuple[str, str], b: int, h: int, k0: int, k1: int,
                   dk: Array, dv: Array) -> None:
    """Write key block j's dK_j, dV_j to HBM once (`names`: _allocate_grads's, the expanded
    buffers under GQA) and free the block's SRAM."""
    run.hbm.write(names[0], b, _grad_head(run.problem, h), k0, k1, dk)
    run.hbm.write(names[1], b, _grad_head(run.problem, h), k0, k1, dv)
    run.sram.drop("K_j", "V_j", "dK_j", "dV_j")


def _dropout_factor(run: Run, b: int, h: int, q0: int, q1: int, k0: int, k1: int,
                    dtype: Any) -> Array | None:
    """Z/(1 − p) for one block of scores, regenerated from the seed (None without dropout)."""
    if not run.dropout:
        return None
    keep = dropout_keep(run.seed, run.problem, b, h, q0, q1, k0, k1, run.dropout_p)
    factor: Array = np.where(keep, 1.0 / (1.0 - run.dropout_p), 0.0).astype(dtype)
    return factor


def group_sum(run: Run) -> None:
    """flash_api.cpp `mha_bwd` under GQA/MQA: dK, dV = the sums of dK/dV_expanded over the query
    heads of each KV head (at::sum_out), one kernel after the backward."""
    pr, pc, hbm = run.problem, run.precision, run.hbm
    if pr.group == 1:
        return
    hbm.allocate("dK", (pr.batch, pr.kv_heads, pr.n_kv, pr.d), pc.storage)
    hbm.allocate("dV", (pr.batch, pr.kv_heads, pr.n_kv, pr.dv), pc.storage)
    with hbm.kernel("bwd_sum_dkdv"):
        for b in range(pr.batch):
            for kv in range(pr.kv_heads):
                dk = np.zeros((pr.n_kv, pr.d), dtype=pc.compute)
                dv = np.zeros((pr.n_kv, pr.dv), dtype=pc.compute)
                for h in range(kv * pr.group, (kv + 1) * pr.group):  # read every share ...
                    dk += hbm.read("dK_expanded", b, h).astype(pc.compute)
                    dv += hbm.read("dV_expanded", b, h).astype(pc.compute)
                hbm.write("dK", b, kv, None, None, dk)  # ... then write the KV head's sum
                hbm.write("dV", b, kv, None, None, dv)


# ---------------------------------------------------------------------------------------------
# Standard attention: Algorithm 3, one kernel per line, with the unfused kernels' backward kernels


@register("standard", "bwd")
def standard_backward(run: Run) -> None:
    """Algorithm 3 (standard attention's backward) through the instrumented HBM: dP, dS written
    and read back whole; writes dQ, dK, dV."""
    hbm, pr, pc = run.hbm, run.problem, run.precision
    n_q, n_kv, cdt = pr.n_q, pr.n_kv, pc.compute
    shape = (pr.batch, pr.heads, n_q, n_kv)
    heads = [(b, h) for b in range(pr.batch) for h in range(pr.heads)]
    dropout = "dropout" in run.unfused
    scale_unfused = "scale" in run.unfused
    dk, dv = _allocate_grads(run)
    hbm.allocate("dP", shape, pc.storage)
    hbm.allocate("dS", shape, pc.storage)

    with hbm.kernel("bwd_dv"):  # Alg. 3 line 1: load P, dO by blocks, dV = PᵀdO, write dV
        for b, h in heads:
            p = hbm.read("P_drop" if dropout else "P", b, h)  # the P that multiplied V
            d_out = hbm.read("dO", b, h)
            hbm.write(dv, b, _grad_head(pr, h), None, None, pc.matmul(p.T, d_out))
    with hbm.kernel("bwd_dp"):  # line 2: load dO, V by blocks, dP = dO Vᵀ, write dP
        for b, h in heads:
            d_out = hbm.read("dO", b, h)
            v = hbm.read("V", b, pr.kv_head(h))
            hbm.write("dP", b, h, None, None, pc.matmul(d_out, v.T))
    if dropout:
        with hbm.kernel("bwd_dropout"):  # backward of dropout: dP ← dP∘Z/(1 − p), Z re-read
            for b, h in heads:
                dp = hbm.read("dP", b, h).astype(cdt)
                keep = hbm.read("Z", b, h).astype(bool)
                scaled = dp / cdt(1.0 - run.dropout_p) if run.dropout_p else dp
                hbm.write("dP", b, h, None, None, np.where(keep, scaled, 0.0))
    with hbm.kernel("bwd_softmax"):  # line 3: read P, dP, dS = P∘(dP − rowsum(P∘dP)), write dS
        for b, h in heads:
            p = hbm.read("P", b, h).astype(cdt)
            dp = hbm.read("dP", b, h).astype(cdt)
            row = (p * dp).sum(axis=1)
            hbm.write("dS", b, h, None, None, p * (dp - row[:, None]))
    if "mask" in run.unfused:
        allowed = pr.attention_mask(run.block_q, run.block_kv)
        with hbm.kernel("bwd_mask"):  # backward of the mask kernel: masked scores get no gradient
            for b, h in heads:
                ds = hbm.read("dS", b, h)
                hbm.write("dS", b, h, None, None, np.where(allowed, ds, 0.0))
    if scale_unfused:
        with hbm.kernel("bwd_scale"):  # backward of S ← S/√d: dS ← dS/√d
            for b, h in heads:
                ds = hbm.read("dS", b, h).astype(cdt)
                hbm.write("dS", b, h, None, None, ds * cdt(pr.scale))
    # τ rides on the dQ and dK matmuls (cuBLAS alpha) unless the scale kernel applied it
    tau = cdt(1.0) if scale_unfused else cdt(pr.scale)
    with hbm.kernel("bwd_dq"):  # line 4: load dS, K by blocks, dQ = dS K, write dQ
        for b, h in heads:
            ds = hbm.read("dS", b, h)
            k = hbm.read("K", b, pr.kv_head(h))
            hbm.write("dQ", b, h, None, None, pc.matmul(ds, k) * tau)
    with hbm.kernel("bwd_dk"):  # line 5: load dS, Q by blocks, dK = dSᵀQ, write dK
        for b, h in heads:
            ds = hbm.read("dS", b, h)
            q = hbm.read("Q", b, h)
            hbm.write(dk, b, _grad_head(pr, h), None, None, pc.matmul(ds.T, q) * tau)
    group_sum(run)


# ---------------------------------------------------------------------------------------------
# FlashAttention, Algorithm 4: K/V outer; Q_i, O_i, dO_i, dQ_i, l_i, m_i re-read every pass


@register("flash1", "bwd")
def flash1_backward(run: Run) -> None:
    """Algorithm 4 (FlashAttention's backward): K/V blocks outer, Q_i, O_i, dO_i, dQ_i, l_i, m_i
    re-read per K/V block, dQ_i rewritten in HBM, dK_j, dV_j written once."""
    hbm, pr, pc, sram = run.hbm, run.problem, run.precision, run.sram
    d, cdt, tau = pr.d, pc.compute, pc.compute(pr.scale)
    block_q, block_kv = run.backward_blocks  # Alg. 4 line 2: Algorithm 1's block sizes
    row_blocks, kv_blocks = pr.row_blocks(block_q), pr.kv_blocks(block_kv)
    computed = pr.nonzero_blocks(block_q, block_kv)
    heads = [(b, h) for b in range(pr.batch) for h in range(pr.heads)]
    dk_name, dv_name = _allocate_grads(run)

    with hbm.kernel("bwd_init"):  # Alg. 4 line 5: initialise dQ = (0), dK = (0), dV = (0) in HBM
        for b, h in heads:
            hbm.write("dQ", b, h, None, None, 0.0, init=True)
            hbm.write(dk_name, b, _grad_head(pr, h), None, None, 0.0, init=True)
            hbm.write(dv_name, b, _grad_head(pr, h), None, None, 0.0, init=True)

    with hbm.kernel("bwd_attn"):
        for b, h in heads:
            for j, (k0, k1) in enumerate(kv_blocks):  # line 6
                cols = k1 - k0
                # line 7: load K_j, V_j from HBM to on-chip SRAM; line 8: initialise dK_j = (0),
                # dV_j = (0) on SRAM
                k, v, dk, dv = _key_block_start(run, b, h, k0, k1)
                for i, (q0, q1) in enumerate(row_blocks):  # line 9
                    if not computed[i, j]:
                        continue  # causal skip, or a zero block of a block-sparse mask
                    rows = q1 - q0
                    # line 10: load Q_i, O_i, dO_i, dQ_i, l_i, m_i from HBM to on-chip SRAM
                    q = hbm.read("Q", b, h, q0, q1)
                    o = hbm.read("O", b, h, q0, q1).astype(cdt)
                    d_out = hbm.read("dO", b, h, q0, q1)
                    dq = hbm.read("dQ", b, h, q0, q1).astype(cdt)
                    l_i = hbm.read("l", b, h, q0, q1).astype(cdt)
                    m_i = hbm.read("m", b, h, q0, q1).astype(cdt)
                    for name, width in (("Q_i", d), ("O_i", pr.dv), ("dO_i", pr.dv), ("dQ_i", d)):
                        sram.hold(name, rows * width, pc.storage_bytes)
                    sram.hold("l_i", rows, pc.stats_bytes)
                    sram.hold("m_i", rows, pc.stats_bytes)
                    # line 11: S_ij = τ Q_i K_jᵀ (masked)
                    s = pc.matmul(q, k.T) * tau
                    run.scores.hold(rows, cols)
                    s = np.where(pr.causal_allowed(q0, q1, k0, k1), s, -np.inf)
                    # line 13: P_ij = diag(l_i)⁻¹ exp(S_ij − m_i); a row that has seen no key
                    # (l_i = 0, m_i = −∞) has P = 0
                    seen = l_i > 0
                    m_safe = np.where(np.isfinite(m_i), m_i, 0.0).astype(cdt)
                    p = np.exp(s - m_safe[:, None]) / np.where(seen, l_i, 1.0)[:, None]
                    p = np.where(seen[:, None], p, 0.0).astype(cdt)
                    # line 14-15: regenerate the dropout mask, P_dropped = P∘Z/(1 − p)
                    factor = _dropout_factor(run, b, h, q0, q1, k0, k1, cdt)
                    p_drop = p if factor is None else p * factor
                    # line 16: dV_j ← dV_j + (P_dropped)ᵀ dO_i
                    dv += pc.matmul(p_drop.T, d_out)
                    # line 17-18: dP_dropped = dO_i V_jᵀ, dP_ij = dP_dropped∘Z/(1 − p)
                    dp = pc.matmul(d_out, v.T)
                    if factor is not None:
                        dp = dp * factor
                    # line 19: D_i = rowsum(dO_i∘O_i); line 20: dS_ij = P_ij∘(dP_ij − D_i)
                    big_d = (d_out.astype(cdt) * o).sum(axis=1)
                    ds = p * (dp - big_d[:, None])
                    # line 21: write dQ_i ← dQ_i + τ dS_ij K_j to HBM
                    hbm.write("dQ", b, h, q0, q1, dq + pc.matmul(ds, k) * tau)
                    # line 22: dK_j ← dK_j + τ dS_ijᵀ Q_i (on chip)
                    dk += pc.matmul(ds.T, q) * tau
                    sram.drop("Q_i", "O_i", "dO_i", "dQ_i", "l_i", "m_i")
                # line 24: write dK_j, dV_j to HBM
                _key_block_end(run, (dk_name, dv_name), b, h, k0, k1, dk, dv)
    group_sum(run)


# ---------------------------------------------------------------------------------------------
# FlashAttention-2's backward as its CUDA code runs it (flash_bwd_launch_template.h
# run_flash_bwd_seqk_parallel): the D pre-pass, the K/V-outer main kernel, the dQ conversion


@register("flash2", "bwd")
def flash2_backward(run: Run) -> None:
    """FlashAttention-2's backward: a D = rowsum(dO∘O) pass, then K/V blocks outer with dQ
    accumulated in HBM (FA2's dQaccum) and dK_j, dV_j written once."""
    hbm, pr, pc, sram = run.hbm, run.problem, run.precision, run.sram
    d, cdt, tau = pr.d, pc.compute, pc.compute(pr.scale)
    block_q, block_kv = run.backward_blocks  # the backward's own tiles
    row_blocks, kv_blocks = pr.row_blocks(block_q), pr.kv_blocks(block_kv)
    computed = pr.nonzero_blocks(block_q, block_kv)
    heads = [(b, h) for b in range(pr.batch) for h in range(pr.heads)]
    dk_name, dv_name = _allocate_grads(run)
    hbm.allocate("D", (pr.batch, pr.heads, pr.n_q), pc.stats)
    hbm.allocate("dQaccum", (pr.batch, pr.heads, pr.n_q, d), pc.stats)

    # flash_bwd_preprocess_kernel.h compute_dot_do_o: D = rowsum(dO∘O) (FA2 Alg. 2 line 4), and
    # Clear_dQaccum: the fp32 dQ accumulator zeroed in HBM (Alg. 2 line 3)
    with hbm.kernel("bwd_dot_do_o"):
        for b, h in heads:
            d_out = hbm.read("dO", b, h).astype(cdt)
            o = hbm.read("O", b, h).astype(cdt)
            hbm.write("D", b, h, None, None, (d_out * o).sum(axis=1))
            hbm.write("dQaccum", b, h, None, None, 0.0, init=True)

    with hbm.kernel("bwd_attn"):  # one program per key block (grid (num_n_block, b, h))
        for b, h in heads:
            for j, (k0, k1) in enumerate(kv_blocks):
                cols = k1 - k0
                # Alg. 2 line 6: load K_j, V_j; line 7: dK_j = (0), dV_j = (0) on chip
                k, v, dk, dv = _key_block_start(run, b, h, k0, k1)
                for i, (q0, q1) in enumerate(row_blocks):  # line 8
                    if not computed[i, j]:
                        continue  # causal skip, or a zero block of a block-sparse mask
                    rows = q1 - q0
                    # line 9: load Q_i, dO_i, (dQ_i,) L_i, D_i — not O_i: D_i holds what the
                    # backward needs of it (the code never loads O here)
                    q = hbm.read("Q", b, h, q0, q1)
                    d_out = hbm.read("dO", b, h, q0, q1)
                    dq = hbm.read("dQaccum", b, h, q0, q1).astype(cdt)
                    lse = hbm.read("L", b, h, q0, q1).astype(cdt)
                    big_d = hbm.read("D", b, h, q0, q1).astype(cdt)
                    sram.hold("Q_i", rows * d, pc.storage_bytes)
                    sram.hold("dO_i", rows * pr.dv, pc.storage_bytes)
                    sram.hold("dQ_i", rows * d, pc.stats_bytes)  # fp32 dq_accum
                    sram.hold("L_i", rows, pc.stats_bytes)
                    sram.hold("D_i", rows, pc.stats_bytes)
                    # line 10-11: S_ij = τ Q_i K_jᵀ (masked), P_ij = exp(S_ij − L_i); a row that
                    # sees no key has L = +∞, so P = 0
                    s = pc.matmul(q, k.T) * tau
                    run.scores.hold(rows, cols)
                    s = np.where(pr.causal_allowed(q0, q1, k0, k1), s, -np.inf)
                    p = np.exp(s - lse[:, None]).astype(cdt)
                    factor = _dropout_factor(run, b, h, q0, q1, k0, k1, cdt)
                    p_drop = p if factor is None else p * factor
                    dv += pc.matmul(p_drop.T, d_out)  # line 12: dV_j ← dV_j + P_ijᵀ dO_i
                    dp = pc.matmul(d_out, v.T)  # line 13: dP_ij = dO_i V_jᵀ
                    if factor is not None:
                        dp = dp * factor
                    ds = p * (dp - big_d[:, None])  # line 14: dS_ij = P_ij∘(dP_ij − D_i)
                    # line 15: dQ_i ← dQ_i + dS_ij K_j, an fp32 atomicAdd into dq_accum (the
                    # softmax scale is applied once, by convert_dQ)
                    hbm.write("dQaccum", b, h, q0, q1, dq + pc.matmul(ds, k))
                    dk += pc.matmul(ds.T, q) * tau  # line 16: dK_j ← dK_j + dS_ijᵀ Q_i
                    sram.drop("Q_i", "dO_i", "dQ_i", "L_i", "D_i")
                # line 18: write dK_j, dV_j
                _key_block_end(run, (dk_name, dv_name), b, h, k0, k1, dk, dv)

    with hbm.kernel("bwd_convert_dq"):  # convert_dQ: dQ = τ·dQaccum in the input dtype
        for b, h in heads:
            dq = hbm.read("dQaccum", b, h).astype(cdt)
            hbm.write("dQ", b, h, None, None, dq * tau)
    group_sum(run)
