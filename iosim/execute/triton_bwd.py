"""The executor of iosim's Triton backward (calibrate/kernels_bwd.py), written from the kernels'
code, not from algorithms/triton_bwd.py: its counts check the loop nest's.

    bwd_preprocess  D = rowsum(dO∘O)                                   (fp32)
    bwd_dkdv        per key block of block_n1 rows: K_j, V_j; per visited query block of
                    block_m1 rows: Q_i, L_i, dO_i, D_i; dV_j += Pᵀ dO, dK_j += dSᵀ Q; write once
    bwd_dq          per query block of block_m2 rows: Q_i, dO_i, L_i, D_i; per visited key block
                    of block_n2 rows: K_j, V_j; dQ_i += dS K_j; write once
    bwd_sum_dkdv    GQA: the group sum (backward.group_sum)
The forward is FlashAttention-2's (it leaves O and L in HBM), registered under this name too.
"""

from __future__ import annotations

import numpy as np

from iosim.algorithms.triton_bwd import backward_tiles
from iosim.execute.backward import _allocate_grads, _grad_head, group_sum
from iosim.execute.forward import flash2_forward
from iosim.execute.registry import Run, register

register("triton", "fwd")(flash2_forward)


@register("triton", "bwd")
def triton_backward(run: Run) -> None:
    """iosim's Triton backward as its kernels run: the D pre-pass, the dK/dV kernel (K-outer), the
    dQ kernel (Q-outer) and, under GQA, the group sum of dK and dV."""
    hbm, pr, pc = run.hbm, run.problem, run.precision
    cdt, tau = pc.compute, pc.compute(pr.scale)
    tiles = backward_tiles(pr.d)
    heads = [(b, h) for b in range(pr.batch) for h in range(pr.heads)]
    dk_name, dv_name = _allocate_grads(run)
    hbm.allocate("D", (pr.batch, pr.heads, pr.n_q), pc.stats)

    with hbm.kernel("bwd_preprocess"):  # _iosim_bwd_preprocess_kernel
        for b, h in heads:
            o = hbm.read("O", b, h).astype(cdt)
            d_out = hbm.read("dO", b, h).astype(cdt)
            hbm.write("D", b, h, None, None, (o * d_out).sum(axis=1))

    def scores(q: np.ndarray, k: np.ndarray, lse: np.ndarray, q0: int, q1: int, k0: int,
               k1: int) -> np.ndarray:
        s = pc.matmul(q, k.T) * tau
        s = np.where(pr.causal_allowed(q0, q1, k0, k1), s, -np.inf)
        run.scores.hold(q1 - q0, k1 - k0)
        p: np.ndarray = np.exp(s - lse[:, None]).astype(cdt)
        return p

    with hbm.kernel("bwd_dkdv"):  # _iosim_bwd_dkdv_kernel: grid (key blocks, query heads)
        visited = pr.nonzero_blocks(tiles.block_m1, tiles.block_n1)
        for b, h in heads:
            for j, (k0, k1) in enumerate(pr.kv_blocks(tiles.block_n1)):
                k = hbm.read("K", b, pr.kv_head(h), k0, k1)
                v = hbm.read("V", b, pr.kv_head(h), k0, k1)
                dk = np.zeros((k1 - k0, pr.d), dtype=cdt)
                dv = np.zeros((k1 - k0, pr.d), dtype=cdt)
                for i, (q0, q1) in enumerate(pr.row_blocks(tiles.block_m1)):
                    if not visited[i, j]:
                        continue  # wholly above the diagonal: never loaded
                    q = hbm.read("Q", b, h, q0, q1)
                    lse = hbm.read("L", b, h, q0, q1).astype(cdt)
                    d_out = hbm.read("dO", b, h, q0, q1)
                    big_d = hbm.read("D", b, h, q0, q1).astype(cdt)
                    p = scores(q, k, lse, q0, q1, k0, k1)
                    dv += pc.matmul(p.T, d_out)
                    ds = p * (pc.matmul(d_out, v.T) - big_d[:, None])
                    dk += pc.matmul(ds.T, q)
                hbm.write(dk_name, b, _grad_head(pr, h), k0, k1, dk * tau)
                hbm.write(dv_name, b, _grad_head(pr, h), k0, k1, dv)

    with hbm.kernel("bwd_dq"):  # _iosim_bwd_dq_kernel: grid (query blocks, query heads)
        visited = pr.nonzero_blocks(tiles.block_m2, tiles.block_n2)
        for b, h in heads:
            for i, (q0, q1) in enumerate(pr.row_blocks(tiles.block_m2)):
                q = hbm.read("Q", b, h, q0, q1)
                d_out = hbm.read("dO", b, h, q0, q1)
                lse = hbm.read("L", b, h, q0, q1).astype(cdt)
                big_d = hbm.read("D", b, h, q0, q1).astype(cdt)
                dq = np.zeros((q1 - q0, pr.d), dtype=cdt)
                for j, (k0, k1) in enumerate(pr.kv_blocks(tiles.block_n2)):
                    if not visited[i, j]:
                        continue
                    k = hbm.read("K", b, pr.kv_head(h), k0, k1)
                    v = hbm.read("V", b, pr.kv_head(h), k0, k1)
                    p = scores(q, k, lse, q0, q1, k0, k1)
                    ds = p * (pc.matmul(d_out, v.T) - big_d[:, None])
                    dq += pc.matmul(ds, k)
                hbm.write("dQ", b, h, q0, q1, dq * tau)
    group_sum(run)
