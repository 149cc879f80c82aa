"""FP8 inputs in the executor: the host quantises Q, K, V with descale factors, the kernels read
those factors and dequantise — written from FlashAttention-3's interface, apart from the loop
nests (iosim/algorithms/fp8.py).

FA3's caller passes e4m3 Q, K, V and fp32 `q_descale`, `k_descale`, `v_descale` of shape
(batch, KV heads): x ≈ x_fp8 · descale. The host side here (uncounted, as a profiler of the
kernels would not count the caller's quantisation) divides each input by its factor, amax/max
of the format (448 for e4m3, 57,344 for e5m2), and places the factors in HBM; NumPy has no
8-bit float, so the quotient is kept in the run's storage dtype, not rounded to FP8 — the counts
and the dequantisation are what is checked, and the float64 output matches the unquantised
reference. Granularity "tensor": one factor per (batch, KV head) of each input, every program
reads its three; "block": one per tile of the kernel's own grid (Q_scale per Q tile of a
program's head — the KV head when the decoding kernel packs heads; K_scale, V_scale per K/V
tile of a KV head), read with the tile.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.execute.numerics import Problem, blocks
from iosim.execute.registry import Run

Array = np.ndarray[Any, Any]

FORMAT_MAX = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0}
"""Largest finite value of each format (OCP FP8: E4M3 448, E5M2 57,344)."""


def _factor(x: Array, fmt: str) -> float:
    top = float(np.max(np.abs(x), initial=0.0))
    return top / FORMAT_MAX[fmt] if top > 0 else 1.0


def quantise(run: Run, grid: Problem | None = None) -> None:
    """Replace Q, K (and V) in HBM by their quantised values and place the factors (host side,
    uncounted). `grid` is the problem the kernel's programs see (the packed one when decoding
    packs heads); Q's block scales follow its tiles."""
    pr = run.problem
    if pr.fp8_scales is None:
        return
    hbm, fmt = run.hbm, pr.dtype
    names = ("Q", "K") if pr.latent_kv else ("Q", "K", "V")
    values = {n: hbm.peek(n) for n in names}
    if pr.fp8_scales == "tensor" or grid is None:
        for n in names:  # one factor per (batch, KV head); Q's over the group's query heads
            x = values[n]
            factors = np.ones((pr.batch, pr.kv_heads, 1), dtype=np.float64)
            for b in range(pr.batch):
                for kv in range(pr.kv_heads):
                    heads = slice(kv * pr.group, (kv + 1) * pr.group) if n == "Q" else kv
                    factors[b, kv, 0] = _factor(x[b, heads], fmt)
                    x[b, heads] = x[b, heads] / factors[b, kv, 0]
            hbm.place(n, x.astype(x.dtype))
            hbm.place(f"{n.lower()}_descale", factors)
        return
    packed = grid.n_q != pr.n_q
    q = values["Q"]
    q_rows = blocks(grid.n_q, run.block_q)
    q_factors = np.ones((pr.batch, grid.heads, len(q_rows)), dtype=np.float64)
    for b in range(pr.batch):
        for h in range(grid.heads):
            for i, (r0, r1) in enumerate(q_rows):
                rows = [(h * pr.group + r // pr.n_q, r % pr.n_q) for r in range(r0, r1)] \
                    if packed else [(h, r) for r in range(r0, r1)]
                tile = np.stack([q[b, hq, r] for hq, r in rows])
                q_factors[b, h, i] = _factor(tile, fmt)
                for hq, r in rows:
                    q[b, hq, r] = q[b, hq, r] / q_factors[b, h, i]
    hbm.place("Q", q)
    hbm.place("Q_scale", q_factors)
    kv_rows = blocks(pr.n_kv, run.block_kv)
    for n in names[1:]:
        x = values[n]
        factors = np.ones((pr.batch, pr.kv_heads, len(kv_rows)), dtype=np.float64)
        for b in range(pr.batch):
            for kv in range(pr.kv_heads):
                for j, (k0, k1) in enumerate(kv_rows):
                    factors[b, kv, j] = _factor(x[b, kv, k0:k1], fmt)
                    x[b, kv, k0:k1] = x[b, kv, k0:k1] / factors[b, kv, j]
        hbm.place(n, x)
        hbm.place(f"{n}_scale", factors)


def read_descales(run: Run, b: int, kv_head: int) -> tuple[float, float, float]:
    """(q, k, v) per-tensor descale factors a program reads at its start (FA3's mainloop);
    1.0 each for a 16/32-bit run. A latent cache's V is dequantised with K's factor."""
    pr = run.problem
    if pr.fp8_scales != "tensor":
        return 1.0, 1.0, 1.0
    q = float(run.hbm.read("q_descale", b, kv_head, 0, 1)[0])
    k = float(run.hbm.read("k_descale", b, kv_head, 0, 1)[0])
    v = k if pr.latent_kv else float(run.hbm.read("v_descale", b, kv_head, 0, 1)[0])
    return q, k, v


def read_block_scale(run: Run, name: str, b: int, head: int, tile: int) -> float:
    """The block scale of one tile, read with it (1.0 unless fp8_scales is "block"; a latent
    cache's V has none: K's tile carries it)."""
    pr = run.problem
    if pr.fp8_scales != "block":
        return 1.0
    if name == "V_scale" and pr.latent_kv:
        return 1.0
    return float(run.hbm.read(name, b, head, tile, tile + 1)[0])


def read_gemm_scales(run: Run, b: int, kv_head: int, *operands: str) -> float:
    """Standard attention's FP8 GEMM: the product of its operands' per-tensor descale factors
    (one read each; a latent V reads K's factor once)."""
    pr = run.problem
    if pr.fp8_scales is None:
        return 1.0
    names = dict.fromkeys("k" if x == "v" and pr.latent_kv else x for x in operands)
    product = 1.0
    for x in names:
        product *= float(run.hbm.read(f"{x}_descale", b, kv_head, 0, 1)[0])
    return product
