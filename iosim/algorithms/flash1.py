"""FlashAttention (Dao et al. 2022), Algorithm 1: key/value blocks in the outer loop.

  1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d).
  2: Initialize O = (0), l = (0), m = (−∞) in HBM.
  5: for 1 ≤ j ≤ T_c:
  6:   Load K_j, V_j from HBM to on-chip SRAM.
  7:   for 1 ≤ i ≤ T_r:
  8:     Load Q_i, O_i, l_i, m_i from HBM to on-chip SRAM.
  9-11:  S_ij = Q_i K_jᵀ, rowmax, P̃_ij = exp(S_ij − m̃_ij), rowsum, m_i^new, l_i^new (on chip)
  12:    Write O_i ← diag(l_i^new)⁻¹(diag(l_i) e^{m_i − m_i^new} O_i + e^{m̃_ij − m_i^new} P̃_ij V_j).
  13:    Write l_i ← l_i^new, m_i ← m_i^new.
Per head: 2Nd + T_c(3Nd + 4N) elements (reads 2Nd + T_c(2Nd + 2N), writes T_c(Nd + 2N)), plus
the line-2 initialisation Nd + 2N, reported as its own kernel. l and m are fp32 (4 bytes).
A causal mask skips the pairs above the diagonal (blocks.py); K_j, V_j are still loaded once.
FlashAttention-1's CUDA kernels launch one program per (batch, head) (FA2 paper §3.2:
"FlashAttention parallelizes over batch size and number of heads").

Algorithm 4 (backward), with the block sizes of Algorithm 1 (line 2: the same B_r, B_c; iosim
uses the same Tiling for both passes):
  5: Initialize dQ = (0), dK = (0), dV = (0) in HBM.
  6: for 1 ≤ j ≤ T_c:
  7:   Load K_j, V_j from HBM to on-chip SRAM.
  8:   Initialize dK_j = (0), dV_j = (0) on SRAM.
  9:   for 1 ≤ i ≤ T_r:
  10:    Load Q_i, O_i, dO_i, dQ_i, l_i, m_i from HBM to on-chip SRAM.
  11-20: S_ij, P_ij = diag(l_i)⁻¹exp(S_ij − m_i), (dropout mask regenerated from R),
         dV_j += P_ijᵀdO_i, dP_ij = dO_i V_jᵀ, D_i = rowsum(dO_i∘O_i), dS_ij = P_ij∘(dP_ij − D_i)
  21:    Write dQ_i ← dQ_i + τ dS_ij K_j to HBM.
  22:    dK_j ← dK_j + τ dS_ijᵀ Q_i (on chip).
  24:  Write dK_j, dV_j to HBM.
Per head: 4Nd + T_c(5Nd + 2N) elements (reads 2Nd + T_c(4Nd + 2N), writes 2Nd + T_c·Nd), plus
the line-5 initialisation 3Nd, its own kernel (init). dQ stays in the input dtype, as written
(FA1's CUDA code accumulates in an fp32 `dq_tmp` when the sequence exceeds one block).
"""

from __future__ import annotations

from iosim.algorithms.base import Algorithm
from iosim.algorithms.fp8 import program_scales, tile_scale
from iosim.algorithms.grads import dkv_names, sum_dkdv
from iosim.algorithms.loopnest import Access, FlopCount, Kernel, v_tile
from iosim.algorithms.paging import refuse_paged
from iosim.algorithms.segments import refuse_shared_prefix
from iosim.algorithms.standard import SOFTMAX_FLOPS_PER_SCORE
from iosim.inputs.workload import Workload

FORWARD_FLOPS = (
    FlopCount("matmul", "score_d", 2, "S_ij = Q_i K_jᵀ: 2d per score"),
    FlopCount("matmul", "score_dv", 2, "P̃_ij V_j: 2d_v per score"),
    FlopCount("elementwise", "score", SOFTMAX_FLOPS_PER_SCORE,
              "online softmax: max, subtract, exp, sum, rescale (seed 000)"),
)

BACKWARD_FLOPS = (
    FlopCount("matmul", "score_d", 6, "recompute S = QKᵀ, dQ += dS K, dK += dSᵀQ: 2d each per "
              "score (FA2 §4.1: bwd = 2.5 × fwd)"),
    FlopCount("matmul", "score_dv", 4, "dV += PᵀdO, dP = dO Vᵀ: 2d_v each per score"),
    FlopCount("elementwise", "score", 5, "P = exp(S − m)/l: 3; dS = P∘(dP − D): 2"),
    FlopCount("elementwise", "pair_q_dv", 2, "Alg. 4 line 19: D_i = rowsum(dO_i∘O_i), every pass"),
)


class Flash1(Algorithm):
    """FlashAttention's Algorithm 1 (forward) and Algorithm 4 (backward): K/V blocks in the outer
    loop, so Q_i, O_i, l_i, m_i are re-read (and O_i, l_i, m_i rewritten) at every K/V block."""

    name = "flash1"
    title = "FlashAttention (Algorithm 1): K/V blocks outer, Q/O/l/m re-read every pass"
    tiled = True
    kernel_axes = frozenset({"pass_", "heads", "kv_heads", "latent_kv", "dtype", "fp8_scales",
                             "page_size", "prefix_len"})
    """GQA adds the dK/dV group sums; MLA's latent cache has no V to load; FP8 adds scales; a
    paged cache or a shared prefix is read (or refused)."""

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        """Alg. 1's kernels: the initialisation of O, l, m and the fused K/V-outer kernel."""
        refuse_shared_prefix(self.name, workload)
        refuse_paged(self.name, workload, why="its K/V-outer loop reads a contiguous K, V")
        init = Kernel("init", "init O, l, m", "elementwise", (
            Access("O", "write", "prologue", "q", "dv", "Alg. 1 line 2: O = (0) in HBM", init=True,
                   element="out"),
            Access("l", "write", "prologue", "q", "1", "Alg. 1 line 2: l = (0) in HBM",
                   element="fp32", init=True),
            Access("m", "write", "prologue", "q", "1", "Alg. 1 line 2: m = (−∞) in HBM",
                   element="fp32", init=True),
        ))
        fused = Kernel("attn", "fused attention", "fused", (
            *program_scales(workload, "prologue", "kv"),
            Access("K", "read", "outer", "kv", "d", "Alg. 1 line 6: load K_j"),
            *tile_scale(workload, "K", "outer", "kv"),
            *v_tile(workload, Access("V", "read", "outer", "kv", "dv", "Alg. 1 line 6: load V_j")),
            *tile_scale(workload, "V", "outer", "kv"),
            Access("Q", "read", "inner", "q", "d", "Alg. 1 line 8: load Q_i"),
            *tile_scale(workload, "Q", "inner", "q"),
            Access("O", "read", "inner", "q", "dv", "Alg. 1 line 8: load O_i", element="out"),
            Access("l", "read", "inner", "q", "1", "Alg. 1 line 8: load l_i", element="fp32"),
            Access("m", "read", "inner", "q", "1", "Alg. 1 line 8: load m_i", element="fp32"),
            Access("O", "write", "inner", "q", "dv", "Alg. 1 line 12: write O_i", element="out"),
            Access("l", "write", "inner", "q", "1", "Alg. 1 line 13: write l_i", element="fp32"),
            Access("m", "write", "inner", "q", "1", "Alg. 1 line 13: write m_i", element="fp32"),
        ), FORWARD_FLOPS, loop="kv", grid="heads")
        return init, fused

    def backward(self, workload: Workload) -> tuple[Kernel, ...]:
        """Alg. 4's kernels: the initialisation of dQ, dK, dV and the fused backward (plus
        GQA's dK/dV group sums)."""
        refuse_paged(self.name, workload, why="a backward pass does not run over a KV cache")
        dk, dv = dkv_names(workload)
        init = Kernel("bwd_init", "init dQ, dK, dV", "elementwise", (
            Access("dQ", "write", "prologue", "q", "d", "Alg. 4 line 5: dQ = (0) in HBM", init=True),
            Access(dk, "write", "prologue", "kv", "d", "Alg. 4 line 5: dK = (0) in HBM", init=True),
            Access(dv, "write", "prologue", "kv", "dv", "Alg. 4 line 5: dV = (0) in HBM", init=True),
        ))
        fused = Kernel("bwd_attn", "fused backward", "fused", (
            Access("K", "read", "outer", "kv", "d", "Alg. 4 line 7: load K_j"),
            Access("V", "read", "outer", "kv", "dv", "Alg. 4 line 7: load V_j"),
            Access("Q", "read", "inner", "q", "d", "Alg. 4 line 10: load Q_i"),
            Access("O", "read", "inner", "q", "dv", "Alg. 4 line 10: load O_i"),
            Access("dO", "read", "inner", "q", "dv", "Alg. 4 line 10: load dO_i"),
            Access("dQ", "read", "inner", "q", "d", "Alg. 4 line 10: load dQ_i"),
            Access("l", "read", "inner", "q", "1", "Alg. 4 line 10: load l_i", element="fp32"),
            Access("m", "read", "inner", "q", "1", "Alg. 4 line 10: load m_i", element="fp32"),
            Access("dQ", "write", "inner", "q", "d", "Alg. 4 line 21: write dQ_i"),
            Access(dk, "write", "outer_end", "kv", "d", "Alg. 4 line 24: write dK_j"),
            Access(dv, "write", "outer_end", "kv", "dv", "Alg. 4 line 24: write dV_j"),
        ), BACKWARD_FLOPS, loop="kv", grid="heads", blocks="backward")
        return (init, fused, *sum_dkdv(workload))
