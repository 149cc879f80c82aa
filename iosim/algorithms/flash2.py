"""FlashAttention-2 (Dao 2023), Algorithm 1: query blocks in the outer loop.

  4: for 1 ≤ i ≤ T_r: Load Q_i from HBM to on-chip SRAM; O_i, l_i, m_i live on chip.
  6:   for 1 ≤ j ≤ T_c: Load K_j, V_j from HBM to on-chip SRAM.
  8-10:  S_ij, m_i, P̃_ij, l_i, O_i updated on chip (O un-scaled until the end).
  12-15: O_i ← diag(l_i)⁻¹ O_i; L_i = m_i + log(l_i); write O_i and L_i to HBM.
Per head: 2Nd + 2Nd·T_r elements + N fp32 logsumexp values (reads Nd + 2Nd·T_r, writes Nd + N).
With a causal mask row block i only loads the key blocks on or below the diagonal (§3.1.1).
"""

from __future__ import annotations

from iosim.algorithms.base import Algorithm
from iosim.algorithms.flash1 import FORWARD_FLOPS
from iosim.algorithms.loopnest import Access, Kernel
from iosim.workload import Workload


class Flash2(Algorithm):
    name = "flash2"
    title = "FlashAttention-2: Q blocks outer, K/V re-read per query block, O and L written once"
    tiled = True
    outer = "q"

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        return (Kernel("attn", "fused attention", "fused", (
            Access("Q", "read", "outer", "q", "d", "FA2 Alg. 1 line 4: load Q_i"),
            Access("K", "read", "inner", "kv", "d", "FA2 Alg. 1 line 6: load K_j"),
            Access("V", "read", "inner", "kv", "d", "FA2 Alg. 1 line 6: load V_j"),
            Access("O", "write", "outer_end", "q", "d", "FA2 Alg. 1 line 14: write O_i"),
            Access("L", "write", "outer_end", "q", "1", "FA2 Alg. 1 line 15: write L_i (logsumexp)",
                   element="fp32"),
        ), FORWARD_FLOPS, loop="q"),)
