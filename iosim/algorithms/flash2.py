"""FlashAttention-2 (Dao 2023), Algorithm 1: query blocks in the outer loop.

  4: for 1 ≤ i ≤ T_r: Load Q_i from HBM to on-chip SRAM; O_i, l_i, m_i live on chip.
  6-7: for 1 ≤ j ≤ T_c: Load K_j, V_j from HBM to on-chip SRAM.
  8-10:  S_ij, m_i, P̃_ij, l_i, O_i updated on chip (O un-scaled until the end).
  12-15: O_i ← diag(l_i)⁻¹ O_i; L_i = m_i + log(l_i); write O_i and L_i to HBM.
Per head: 2Nd + 2Nd·T_r elements + N fp32 logsumexp values (reads Nd + 2Nd·T_r, writes Nd + N).
With a causal mask row block i only loads the key blocks on or below the diagonal (§3.1.1).
One program per query block of each (batch, head): grid (num_m_block, b, h), flash_fwd_launch_template.h.

Backward, as FlashAttention-2's CUDA code runs it (flash_bwd_launch_template.h
`run_flash_bwd_seqk_parallel`: three kernels), against the paper's Algorithm 2:
  dot_do_o (flash_bwd_preprocess_kernel.h `compute_dot_do_o`): D = rowsum(dO∘O) (Alg. 2 line 4:
      read dO, O, write D) and the zeroing of the fp32 dQaccum (Alg. 2 line 3: "Initialize
      dQ = (0) in HBM"; `Clear_dQaccum`), one program per query block.
  main kernel, one program per key block (grid (num_n_block, b, h)), K/V outer:
    6:   Load K_j, V_j.
    9:     for each query block i: Load Q_i, dO_i, dQ_i, L_i, D_i — Alg. 2 line 9 also loads
           O_i, but D_i already holds the only thing O is needed for, and the code never loads O
           here: iosim follows the code (one Nd per pass fewer than the literal algorithm).
    15:    dQ_i ← dQ_i + dS_ij K_j, "write back to HBM": dQ is accumulated in fp32 (dq_accum, an
           atomicAdd, i.e. a read-modify-write of 4-byte elements in L2), counted as an fp32 read
           and an fp32 write per visited pair.
    18:  Write dK_j, dV_j (per query head into dk/dv_expanded under GQA, then summed: grads.py).
  convert_dQ: read dQaccum (fp32), write dQ in the input dtype.
Block sizes: the FA2 paper gives no block formula, so by default flash2 tiles as FlashAttention-2's
code does per head dim (configs/impls/sdpa-flash.yaml: flash_fwd_launch_template.h and
flash_bwd_launch_template.h, e.g. 128 × 128 forward at d = 64, 128 × 64 at d = 128 on sm80/sm90),
or as the --impl's table says. `--tiles alg1` keeps the Alg. 1-derived rule: for the forward's
Q-outer loop B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d); for the backward's K/V-outer loop B_c = ⌈M/4d⌉,
B_r = min(⌈M/4d⌉, d). Explicit --block-q/--block-kv hold for both passes.
Per head, with T_c = ⌈N/B_c⌉ of the backward's B_c:
  elements: 8Nd + N + T_c(4Nd + 2N), plus the Nd-element dQaccum initialisation;
  bytes (2-byte dtype, fp32 L, D, dQaccum): 18Nd + 4N + T_c(12Nd + 8N), plus 4Nd init.
"""

from __future__ import annotations

import numpy as np

from iosim.algorithms.base import Algorithm
from iosim.algorithms.flash1 import FORWARD_FLOPS
from iosim.algorithms.fp8 import block_scale_flops, program_scales, tile_scale
from iosim.algorithms.grads import dkv_names, sum_dkdv
from iosim.algorithms.loopnest import Access, FlopCount, Kernel, v_tile
from iosim.algorithms.paging import PAGED_CITE, block_table_read, refuse_paged
from iosim.algorithms.segments import refuse_shared_prefix
from iosim.estimates.occupancy import programs_per_sm
from iosim.inputs.code_tiles import CodeTiles, implementation_or_default, lookup
from iosim.inputs.implementations import SharedMemory, TileRow
from iosim.inputs.ints import select
from iosim.inputs.tiling import (
    ASSUMED_WARPS,
    Tiles,
    Tiling,
    TilingInputs,
    default_blocks,
    default_rule,
    working_set_bytes,
)
from iosim.inputs.workload import Workload
from iosim.record import replace

_PRE = "flash_bwd_preprocess_kernel.h compute_dot_do_o"
BACKWARD_FLOPS = (
    FlopCount("matmul", "score_d", 6, "recompute S = QKᵀ, dQ += dS K, dK += dSᵀQ: 2d each per "
              "score (FA2 §4.1: bwd = 2.5 × fwd)"),
    FlopCount("matmul", "score_dv", 4, "dV += PᵀdO, dP = dO Vᵀ: 2d_v each per score"),
    FlopCount("elementwise", "score", 4, "P = exp(S − L): 2; dS = P∘(dP − D): 2"),
)


class Flash2(Algorithm):
    """FlashAttention-2: Q blocks in the outer loop, K/V streamed per query block, O_i and L_i
    written once; its backward is FA2's dK/dV-outer kernel with dQ read-modify-written."""

    name = "flash2"
    title = "FlashAttention-2: Q blocks outer, K/V re-read per query block, O and L written once"
    tiled = True
    outer = "q"
    kernel_axes = frozenset({"pass_", "heads", "kv_heads", "latent_kv", "dtype", "fp8_scales",
                             "page_size", "prefix_len"})
    """GQA adds the dK/dV group sums; MLA's latent cache has no V to load; FP8 adds scales; a
    paged cache or a shared prefix is read (or refused)."""

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        """FA2 Alg. 1's one fused Q-outer kernel."""
        refuse_shared_prefix(self.name, workload)
        return (Kernel("attn", "fused attention", "fused", (
            Access("Q", "read", "outer", "q", "d", "FA2 Alg. 1 line 4: load Q_i"),
            *program_scales(workload, "outer", "q"),
            *block_table_read(workload, PAGED_CITE),
            Access("K", "read", "inner", "kv", "d", "FA2 Alg. 1 line 7: load K_j"),
            *tile_scale(workload, "K", "inner", "kv"),
            *v_tile(workload, Access("V", "read", "inner", "kv", "dv",
                                     "FA2 Alg. 1 line 7: load V_j")),
            *tile_scale(workload, "V", "inner", "kv"),
            Access("O", "write", "outer_end", "q", "dv", "FA2 Alg. 1 line 14: write O_i",
                   element="out"),
            Access("L", "write", "outer_end", "q", "1", "FA2 Alg. 1 line 15: write L_i (logsumexp)",
                   element="fp32"),
        ), FORWARD_FLOPS + block_scale_flops(workload), loop="q", grid="blocks"),)

    def backward(self, workload: Workload) -> tuple[Kernel, ...]:
        """FA2's three backward kernels (dot_do_o, the K/V-outer main kernel, convert_dQ) and
        GQA's group sums."""
        refuse_paged(self.name, workload, why="a backward pass does not run over a KV cache")
        dk, dv = dkv_names(workload)
        pre = Kernel("bwd_dot_do_o", "D = rowsum(dO∘O)", "elementwise", (
            Access("dO", "read", "prologue", "q", "dv", f"FA2 Alg. 2 line 4 ({_PRE}): read dO"),
            Access("O", "read", "prologue", "q", "dv", f"FA2 Alg. 2 line 4 ({_PRE}): read O"),
            Access("D", "write", "prologue", "q", "1", f"FA2 Alg. 2 line 4 ({_PRE}): write D",
                   element="fp32"),
            Access("dQaccum", "write", "prologue", "q", "d",
                   f"FA2 Alg. 2 line 3: dQ = (0) in HBM ({_PRE}: Clear_dQaccum, fp32)",
                   element="fp32", init=True),
        ), (FlopCount("elementwise", "q_dv", 2, "dO∘O and its row sum"),))
        main = Kernel("bwd_attn", "fused backward", "fused", (
            Access("K", "read", "outer", "kv", "d", "FA2 Alg. 2 line 6: load K_j"),
            Access("V", "read", "outer", "kv", "dv", "FA2 Alg. 2 line 6: load V_j"),
            Access("Q", "read", "inner", "q", "d", "FA2 Alg. 2 line 9: load Q_i"),
            Access("dO", "read", "inner", "q", "dv", "FA2 Alg. 2 line 9: load dO_i"),
            Access("dQaccum", "read", "inner", "q", "d",
                   "FA2 Alg. 2 line 15: load dQ_i (fp32 dq_accum, atomicAdd)", element="fp32"),
            Access("L", "read", "inner", "q", "1", "FA2 Alg. 2 line 9: load L_i", element="fp32"),
            Access("D", "read", "inner", "q", "1", "FA2 Alg. 2 line 9: load D_i", element="fp32"),
            Access("dQaccum", "write", "inner", "q", "d",
                   "FA2 Alg. 2 line 15: write dQ_i back (fp32 dq_accum, atomicAdd)",
                   element="fp32"),
            Access(dk, "write", "outer_end", "kv", "d", "FA2 Alg. 2 line 18: write dK_j"),
            Access(dv, "write", "outer_end", "kv", "dv", "FA2 Alg. 2 line 18: write dV_j"),
        ), BACKWARD_FLOPS, loop="kv", grid="blocks", blocks="backward", inner_descending=True)
        # flash_bwd_kernel.h compute_dq_dk_dv_1colblock: `for (; m_block >= m_block_min;
        # --m_block)`, the query blocks from the last down
        convert = Kernel("bwd_convert_dq", "dQ = fp16(dQaccum)", "elementwise", (
            Access("dQaccum", "read", "prologue", "q", "d",
                   "flash_bwd_preprocess_kernel.h convert_dQ: read dq_accum (fp32)",
                   element="fp32"),
            Access("dQ", "write", "prologue", "q", "d",
                   "flash_bwd_preprocess_kernel.h convert_dQ: write dQ in the input dtype"),
        ), (FlopCount("elementwise", "q_d", 1, "scale by the softmax scale"),))
        return (pre, main, convert, *sum_dkdv(workload))

    def code_tiles(self, inputs: TilingInputs) -> CodeTiles | None:
        """FlashAttention-2's forward tiles per head dim (the implementation's table; by default
        sdpa-flash's, i.e. flash_fwd_launch_template.h), unless --tiles alg1."""
        if inputs.tile_rule == "alg1":
            return None
        impl = implementation_or_default(inputs.impl)
        return _lookup(impl.forward_tiles, impl.shared_memory, inputs)

    def choose_tiles(self, tiles: Tiles, inputs: TilingInputs) -> Tiles:
        """The backward's blocks: the implementation's backward tile table (FA2's
        flash_bwd_launch_template.h by default), or with --tiles alg1 Alg. 1 line 1's rule for
        the backward's own (K/V-outer) loop (B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d)). Block sizes
        the user gives hold for both passes. Ints or arrays.
        """
        p = inputs
        alg_q, alg_kv = default_blocks(p.sram_bytes, p.d, p.element_bytes, "kv", p.dv)
        alg_per_sm = programs_per_sm(p.limits, shared_bytes=working_set_bytes(
            alg_q, alg_kv, p.d, p.element_bytes, d_v=p.dv), warps=ASSUMED_WARPS)
        bwd_q, bwd_kv, bwd_per_sm = alg_q, alg_kv, alg_per_sm
        if p.tile_rule != "alg1":
            impl = implementation_or_default(p.impl)
            if impl.backward_tiles:
                code = _lookup(impl.backward_tiles, impl.backward_shared_memory, p)
                per_sm = programs_per_sm(p.limits, shared_bytes=code.shared_bytes,
                                         warps=code.warps,
                                         registers_per_thread=code.registers_per_thread)
                bwd_q = select(code.found, code.block_q, alg_q)
                bwd_kv = select(code.found, code.block_kv, alg_kv)
                bwd_per_sm = select(code.found, per_sm, alg_per_sm)
        own = select(p.backward, p.blocks_given, True)  # the forward's blocks serve both passes
        return replace(tiles, bwd_block_q=select(own, tiles.block_q, bwd_q),
                       bwd_block_kv=select(own, tiles.block_kv, bwd_kv),
                       bwd_per_sm=select(own, tiles.per_sm, bwd_per_sm))

    def describe_tiles(self, tiling: Tiling, tiles: Tiles, inputs: TilingInputs) -> Tiling:
        """The backward's blocks, their rule and programs per SM (with a backward pass)."""
        tiling = replace(tiling, bwd_programs_per_sm=int(tiles.bwd_per_sm))
        backward = (int(tiles.bwd_block_q), int(tiles.bwd_block_kv))
        if backward == (tiling.block_q, tiling.block_kv) and not inputs.backward:
            return tiling
        rule = default_rule(tiling.sram_bytes, inputs.d, inputs.element_bytes, "kv", backward,
                            inputs.dv) + " (the backward's K/V-outer loop)"
        if inputs.tile_rule != "alg1" and not inputs.blocks_given:
            impl = implementation_or_default(inputs.impl)
            if impl.backward_tiles:
                code = _lookup(impl.backward_tiles, impl.backward_shared_memory, inputs)
                if code.found:
                    rule = f"the code's backward tiles: {str(code.source).split(';')[0]}"
        return replace(tiling, bwd_block_q=backward[0], bwd_block_kv=backward[1], bwd_rule=rule)


def _lookup(rows: tuple[TileRow, ...], shared: SharedMemory | None,
            inputs: TilingInputs) -> CodeTiles:
    p = inputs
    return lookup(rows, shared, d=p.d, causal=p.causal, dtype=p.dtype,
                  element_bytes=p.element_bytes, cc=p.cc, smem_per_block=p.sram_bytes,
                  smem_per_sm=select(np.asarray(p.sram_per_sm) > 0, p.sram_per_sm,
                                     p.sram_bytes))
