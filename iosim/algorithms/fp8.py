"""FP8 inputs as FlashAttention-3's FP8 forward runs them: the descale factors each kernel reads.

FlashAttention-3 (arXiv 2407.08608 §3.3; hopper/flash_api.cpp `mha_fwd`) takes Q, K, V in e4m3
(1 byte), accumulates in fp32 and writes O in bf16 ("For FP8 input, output must have dtype
BF16"). Its dequantisation factors are fp32 tensors `q_descale`, `k_descale`, `v_descale` of
shape (batch, KV heads) (`CHECK_SHAPE(q_descale, batch_size, num_heads_k)`), and every program
of the forward kernel reads its (batch, KV head)'s three at the start of its mainloop
(`params.ptr_q_descale[bidb * stride_q_descale[0] + bidh_kv * stride_q_descale[1]]`). That is
`Workload.fp8_scales = "tensor"`: one fp32 element of each per program.

`"block"` is the paper's block quantization (§3.3: one scale per block of B_r × d of Q and
B_c × d of K and V): one fp32 `Q_scale` read with every Q_i load and one `K_scale`, `V_scale`
with every K_j, V_j load. Standard attention's GEMMs take per-tensor scales whatever the
granularity (cuBLASLt's scale pointers: one per operand of a GEMM; block scaling belongs to the
fused kernels), one per (batch, head) of each GEMM.

MLA's latent cache (Workload.latent_kv) has no V of its own, so no V scale: its V is K's first
d_v columns, dequantised with K's factor. The generic "fp8" dtype has no scales at all.
Loop-nest accesses here; the executor reads the same factors through its own code.
"""

from __future__ import annotations

from iosim.algorithms.loopnest import Access, Axis, FlopCount, Where
from iosim.inputs.workload import Workload

_FA3 = "FA3 hopper/flash_api.cpp: fp32 (batch, KV heads) descale, read once per program"
_BLOCK = "FA3 §3.3 block quantization: one fp32 scale per tile, read with the tile"
_GEMM = "per-tensor FP8 GEMM scale (cuBLASLt scale pointer), one per (batch, head)"


def _scale(tensor: str, where: Where, rows: Axis, cite: str, scale: str) -> Access:
    return Access(tensor, "read", where, rows, "1", cite, element="fp32",
                  scale=scale)  # type: ignore[arg-type]


def _operands(workload: Workload) -> tuple[str, ...]:
    """The quantised inputs: Q, K and V, or Q and K for MLA's latent cache (V is part of K)."""
    return ("q", "k") if workload.latent_kv else ("q", "k", "v")


def program_scales(workload: Workload, where: Where, rows: Axis) -> tuple[Access, ...]:
    """What a fused kernel's program reads at its start: FA3's three descale factors
    ("tensor"), or ("block") the scale of its own outer tile — Q_i's for a Q-outer loop
    (`rows` "q"), none for a K/V-outer one (its K_j, V_j scales come with those tiles)."""
    if workload.fp8_scales == "tensor":
        return tuple(_scale(f"{x}_descale", where, rows, _FA3, "tensor")
                     for x in _operands(workload))
    if workload.fp8_scales == "block" and rows == "q":
        return (_scale("Q_scale", where, "q", _BLOCK, "block"),)
    return ()


def tile_scale(workload: Workload, tensor: str, where: Where, rows: Axis) -> tuple[Access, ...]:
    """The block scale read with a tile of Q, K or V ("block"; none for "tensor", and none for
    the V of a latent cache, which has no tile of its own)."""
    if workload.fp8_scales != "block" or (tensor == "V" and workload.latent_kv):
        return ()
    return (_scale(f"{tensor}_scale", where, rows, _BLOCK, "block"),)


def gemm_scales(workload: Workload, *operands: str) -> tuple[Access, ...]:
    """Standard attention's GEMM reads one per-tensor descale per operand and (batch, head)
    ("q", "k", "v"; the latent cache's V is dequantised with K's)."""
    if workload.fp8_scales is None:
        return ()
    names = dict.fromkeys("k" if x == "v" and workload.latent_kv else x for x in operands)
    return tuple(_scale(f"{x}_descale", "prologue", "q", _GEMM, "tensor") for x in names)


def block_scale_flops(workload: Workload) -> tuple[FlopCount, ...]:
    """The elementwise work block scales add to a Q-outer fused forward: each visited tile pair's
    P̃_ij V_j (B_r × d_v) multiplied by V_j's scale before it is added to O_i (a per-tensor
    v_descale multiplies O_i once, at the end; calibrate/kernels_mla_fp8.py
    _iosim_block_scaled_inner). None for "tensor", nor for a latent cache (no V scale)."""
    if workload.fp8_scales != "block" or workload.latent_kv:
        return ()
    return (FlopCount("elementwise", "pair_q_dv", 1,
                      "FA3 §3.3: P̃_ij V_j × V_j's block scale, every visited tile pair"),)
