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
"""

from __future__ import annotations

from iosim.algorithms.base import Algorithm
from iosim.algorithms.loopnest import Access, FlopCount, Kernel
from iosim.algorithms.standard import SOFTMAX_FLOPS_PER_SCORE
from iosim.workload import Workload

FORWARD_FLOPS = (
    FlopCount("matmul", "score_d", 4, "S_ij = Q_i K_jᵀ and P̃_ij V_j: 2d each per score"),
    FlopCount("elementwise", "score", SOFTMAX_FLOPS_PER_SCORE,
              "online softmax: max, subtract, exp, sum, rescale (seed 000)"),
)


class Flash1(Algorithm):
    name = "flash1"
    title = "FlashAttention (Algorithm 1): K/V blocks outer, Q/O/l/m re-read every pass"
    tiled = True

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        init = Kernel("init", "init O, l, m", "elementwise", (
            Access("O", "write", "prologue", "q", "d", "Alg. 1 line 2: O = (0) in HBM", init=True),
            Access("l", "write", "prologue", "q", "1", "Alg. 1 line 2: l = (0) in HBM",
                   element="fp32", init=True),
            Access("m", "write", "prologue", "q", "1", "Alg. 1 line 2: m = (−∞) in HBM",
                   element="fp32", init=True),
        ))
        fused = Kernel("attn", "fused attention", "fused", (
            Access("K", "read", "outer", "kv", "d", "Alg. 1 line 6: load K_j"),
            Access("V", "read", "outer", "kv", "d", "Alg. 1 line 6: load V_j"),
            Access("Q", "read", "inner", "q", "d", "Alg. 1 line 8: load Q_i"),
            Access("O", "read", "inner", "q", "d", "Alg. 1 line 8: load O_i"),
            Access("l", "read", "inner", "q", "1", "Alg. 1 line 8: load l_i", element="fp32"),
            Access("m", "read", "inner", "q", "1", "Alg. 1 line 8: load m_i", element="fp32"),
            Access("O", "write", "inner", "q", "d", "Alg. 1 line 12: write O_i"),
            Access("l", "write", "inner", "q", "1", "Alg. 1 line 13: write l_i", element="fp32"),
            Access("m", "write", "inner", "q", "1", "Alg. 1 line 13: write m_i", element="fp32"),
        ), FORWARD_FLOPS, loop="kv")
        return init, fused
