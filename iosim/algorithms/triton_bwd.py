"""iosim's own Triton kernels (calibrate/kernels.py, kernels_bwd.py), as they run.

Forward: FlashAttention-2's Algorithm 1, as flash2.py counts it (kernels.attention_fwd).
Backward (kernels_bwd.attention_bwd), four launches in this order:
  bwd_preprocess  one program per query block: read O_i, dO_i; write D_i = rowsum(dO_i∘O_i)
                  (fp32) — FA2 Alg. 2 line 4.
  bwd_dkdv        grid (⌈N/B_c⌉, batch·query heads), K/V outer with B_c = block_n1:
                    load K_j, V_j (of the query head's KV head);
                    for each query block i (step block_m1) on or below the diagonal:
                      load Q_i (transposed), L_i, dO_i, D_i, in that order;
                    write dK_j, dV_j (per query head: dK_expanded under GQA).
  bwd_dq          grid (⌈N/B_r⌉, batch·query heads), Q outer with B_r = block_m2:
                    load Q_i, dO_i, L_i, D_i;
                    for each key block j (step block_n2) on or left of the diagonal:
                      load K_j, V_j;
                    write dQ_i once, in the input dtype (no fp32 accumulator in HBM).
  bwd_sum_dkdv    GQA only (grads.py): dK, dV = Σ over the group of dK/dV_expanded.
L and D are fp32; everything else the input dtype. The tiles are the kernels' launch
configuration (TRITON_BWD_TILES, the same table the calibration launches with), not Alg. 1's
SRAM rule: each kernel carries them as Kernel.tile.

Per head, with T_c = ⌈N/block_n1⌉ and T_r = ⌈N/block_m2⌉ and no mask:
  preprocess 2Nd + N; dkdv 2Nd + T_c(2Nd + 2N) + 2Nd; dq 2Nd + 2N + T_r·2Nd + Nd.
"""

from __future__ import annotations

from iosim.algorithms.flash2 import Flash2
from iosim.algorithms.grads import dkv_names, sum_dkdv
from iosim.algorithms.loopnest import Access, FlopCount, Kernel
from iosim.algorithms.paging import refuse_paged
from iosim.errors import IosimError, arg
from iosim.inputs.ints import select
from iosim.inputs.tiling import Tiles, Tiling, TilingInputs, working_set_bytes
from iosim.inputs.workload import Workload
from iosim.record import Record, replace


class BackwardTiles(Record):
    """Launch configuration of the Triton backward (kernels_bwd.BackwardConfig's fields)."""

    block_m1: int
    block_n1: int
    block_m2: int
    block_n2: int
    num_warps: int
    num_stages: int
    pre_block: int = 128


TRITON_BWD_TILES: dict[int, BackwardTiles] = {
    64: BackwardTiles(64, 64, 64, 64, 4, 3),
    128: BackwardTiles(64, 128, 128, 64, 8, 3),
}
"""Per head dim, the fastest of five candidates (Triton tutorial 06's 32/128/128/32 with 4 warps
and 3 or 5 stages, the same with 8 warps, 64/128/128/64 with 8 warps, 64/64/64/64 with 4) in
total time at N = 8,192, 2 × 16 heads, causal and not, fp16, on the H200
(`benchmarks/backward_h200.py --quick --tune`, tests/data/backward-h200-tune.json): d = 128
10.9 ms against 12.6–31.4 ms (4 warps spill there: 23.6 ms); d = 64 6.39 ms, all five within
6 %. A d not in the table takes the d = 64 tiles."""


FORWARD_TILE = (128, 64)
"""BLOCK_M × BLOCK_N of the Triton forward: calibrate/plan.py's main FUSED_CONFIGS at d = 64, 128."""


def backward_tiles(d: int) -> BackwardTiles:
    """The Triton backward's launch tiles for head dim `d` (d = 64's where d is not listed)."""
    return TRITON_BWD_TILES.get(d, TRITON_BWD_TILES[64])


def triton_unsupported(workload: Workload) -> str | None:
    """Why the Triton kernels cannot run this workload (None if they can)."""
    if workload.n_kv != workload.n:
        return (f"the Triton kernels are self-attention only (N_kv = N); got N = {workload.n}, "
                f"N_kv = {workload.n_kv}: use {arg('n_kv', workload.n)} or another algorithm")
    if workload.fp8_scales is not None:
        return (f"the Triton kernels run fp16/bf16/fp32, not {arg('dtype', workload.dtype)}: use "
                f"flash2 or splitkv")
    if workload.latent_kv:
        return (f"the Triton kernels read V apart from K; MLA's {arg('latent_kv')} cache runs "
                f"with splitkv (or flash2)")
    if workload.d_v != workload.d:
        return (f"the Triton kernels take one head dim for Q, K and V (HEAD_DIM); got "
                f"{arg('d', workload.d)}, {arg('d_v', workload.d_v)}: use flash2 or splitkv")
    if workload.sparsity != 1:
        return (f"the Triton kernels have no block-sparse mask: use {arg('sparsity', 1)} or "
                "flash2")
    if "dropout" in workload.unfused:
        return (f"the Triton kernels have no dropout: drop 'dropout' from {arg('unfused')} or "
                "use flash2")
    return None


_K = "kernels_bwd.py"
DKDV_FLOPS = (
    FlopCount("matmul", "score_d", 4, f"{_K} bwd_dkdv: Sᵀ = K Qᵀ, dK += dSᵀ Q: 2d each per "
              "score"),
    FlopCount("matmul", "score_dv", 4, f"{_K} bwd_dkdv: dV += Pᵀ dO, dPᵀ = V dOᵀ: 2d_v each "
              "per score"),
    FlopCount("elementwise", "score", 4, "P = exp2(S·scale − L): 2; dS = P∘(dP − D): 2"),
)
DQ_FLOPS = (
    FlopCount("matmul", "score_d", 4, f"{_K} bwd_dq: S = Q Kᵀ, dQ += dS K: 2d each per score "
              "(S and dP recomputed: the price of no atomics)"),
    FlopCount("matmul", "score_dv", 2, f"{_K} bwd_dq: dP = dO Vᵀ: 2d_v per score"),
    FlopCount("elementwise", "score", 4, "P = exp2(S·scale − L): 2; dS = P∘(dP − D): 2"),
)


class TritonKernels(Flash2):
    """iosim's own Triton kernels (calibrate/kernels.py, kernels_bwd.py) with their fixed launch
    tiles: FA2's forward, and a backward of a D pre-pass, a dK/dV kernel and a dQ kernel."""

    name = "triton"
    kernel_axes = frozenset({"pass_", "heads", "kv_heads", "n", "n_kv", "d", "d_v", "sparsity",
                             "latent_kv", "page_size", "prefix_len"})
    """The refusals read n, n_kv, d_v, sparsity, a page size, a shared prefix (and unfused); the
    tiles, d; GQA adds the group sum."""
    title = ("iosim's Triton kernels: FA2 forward; backward as a D pre-pass, a K/V-outer dK/dV "
             "kernel and a Q-outer dQ kernel (no atomics)")

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        """FlashAttention-2's forward kernels, refused where the Triton kernels do not run the workload."""
        refuse_paged(self.name, workload, why="its kernels read a contiguous K, V")
        why = triton_unsupported(workload)
        if why is not None:
            raise IosimError(why)
        return super().forward(workload)

    def choose_tiles(self, tiles: Tiles, inputs: TilingInputs) -> Tiles:
        """The kernels' own tiles, whatever the SRAM rule or the given blocks say: the forward's
        FORWARD_TILE, the dK/dV kernel's block_m1 × block_n1 as the backward's (the dQ kernel's
        block_m2 × block_n2 ride on the kernel, Kernel.tile). Ints or arrays of d."""
        bwd_q: object = TRITON_BWD_TILES[64].block_m1
        bwd_kv: object = TRITON_BWD_TILES[64].block_n1
        for d, t in TRITON_BWD_TILES.items():
            bwd_q = select(inputs.d == d, t.block_m1, bwd_q)
            bwd_kv = select(inputs.d == d, t.block_n1, bwd_kv)
        fits = working_set_bytes(FORWARD_TILE[0], FORWARD_TILE[1], inputs.d,
                                 inputs.element_bytes, d_v=inputs.dv) <= inputs.sram_bytes
        return replace(tiles, block_q=FORWARD_TILE[0], block_kv=FORWARD_TILE[1], fits=fits,
                       bwd_block_q=bwd_q, bwd_block_kv=bwd_kv)

    def describe_tiles(self, tiling: Tiling, tiles: Tiles, inputs: TilingInputs) -> Tiling:
        """The tiling with the kernels' launch tiles (forward BLOCK_M × BLOCK_N; dK/dV and dQ blocks)."""
        t = backward_tiles(int(inputs.d))
        return replace(tiling, block_q=int(tiles.block_q), block_kv=int(tiles.block_kv),
                       rule="the Triton forward's launch configuration (BLOCK_M × BLOCK_N)",
                       bwd_block_q=int(tiles.bwd_block_q), bwd_block_kv=int(tiles.bwd_block_kv),
                       bwd_rule=(f"the Triton dK/dV kernel's; dQ: {t.block_m2} × {t.block_n2} "
                                 "(their launch configuration)"))

    def backward(self, workload: Workload) -> tuple[Kernel, ...]:
        """The backward's kernels: D = rowsum(dO∘O), dK/dV (K-outer), dQ (Q-outer) and GQA's group sum."""
        refuse_paged(self.name, workload, why="its kernels read a contiguous K, V")
        why = triton_unsupported(workload)
        if why is not None:
            raise IosimError(why)
        t = backward_tiles(workload.d)
        dk, dv = dkv_names(workload)
        pre = Kernel("bwd_preprocess", "D = rowsum(dO∘O)", "elementwise", (
            Access("O", "read", "prologue", "q", "dv", f"{_K} bwd_preprocess: read O_i"),
            Access("dO", "read", "prologue", "q", "dv", f"{_K} bwd_preprocess: read dO_i"),
            Access("D", "write", "prologue", "q", "1",
                   f"{_K} bwd_preprocess: write D_i (FA2 Alg. 2 line 4)", element="fp32"),
        ), (FlopCount("elementwise", "q_dv", 2, "dO∘O and its row sum"),))
        dkdv = Kernel("bwd_dkdv", "dK, dV (K/V outer)", "fused", (
            Access("K", "read", "outer", "kv", "d", f"{_K} bwd_dkdv: load K_j (FA2 Alg. 2 line 6)"),
            Access("V", "read", "outer", "kv", "dv", f"{_K} bwd_dkdv: load V_j (FA2 Alg. 2 line 6)"),
            Access("Q", "read", "inner", "q", "d", f"{_K} bwd_dkdv: load Q_i (transposed)"),
            Access("L", "read", "inner", "q", "1", f"{_K} bwd_dkdv: load L_i", element="fp32"),
            Access("dO", "read", "inner", "q", "dv", f"{_K} bwd_dkdv: load dO_i"),
            Access("D", "read", "inner", "q", "1", f"{_K} bwd_dkdv: load D_i", element="fp32"),
            Access(dk, "write", "outer_end", "kv", "d", f"{_K} bwd_dkdv: write dK_j"),
            Access(dv, "write", "outer_end", "kv", "dv", f"{_K} bwd_dkdv: write dV_j"),
        ), DKDV_FLOPS, loop="kv", grid="blocks", tile=(t.block_m1, t.block_n1))
        dq = Kernel("bwd_dq", "dQ (Q outer)", "fused", (
            Access("Q", "read", "outer", "q", "d", f"{_K} bwd_dq: load Q_i"),
            Access("dO", "read", "outer", "q", "dv", f"{_K} bwd_dq: load dO_i"),
            Access("L", "read", "outer", "q", "1", f"{_K} bwd_dq: load L_i", element="fp32"),
            Access("D", "read", "outer", "q", "1", f"{_K} bwd_dq: load D_i", element="fp32"),
            Access("K", "read", "inner", "kv", "d", f"{_K} bwd_dq: load K_j (transposed)"),
            Access("V", "read", "inner", "kv", "dv", f"{_K} bwd_dq: load V_j (transposed)"),
            Access("dQ", "write", "outer_end", "q", "d",
                   f"{_K} bwd_dq: write dQ_i once (FA2 Alg. 2 line 15, summed on chip)"),
        ), DQ_FLOPS, loop="q", grid="blocks", tile=(t.block_m2, t.block_n2))
        return (pre, dkdv, dq, *sum_dkdv(workload))
