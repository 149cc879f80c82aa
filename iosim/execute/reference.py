"""Float64 references: attention and its gradients as direct formulas, for all heads at once.

Neither instrumented nor tiled, and independent of every executor: what the executors' outputs
and gradients are checked against. With the causal mask (bottom-right aligned), a block-sparse
mask (numerics.Problem.attention_mask, on the grid of the given blocks) and dropout (the mask of
numerics.dropout_keep):

    S = τ·QKᵀ (masked: −∞),  P = softmax(S),  P_d = P∘Z/(1 − p),  O = P_d·V
and, for an upstream gradient dO, the analytic backward (the paper's Alg. 3, as calculus):
    dV = P_dᵀ·dO,  dP = (dO·Vᵀ)∘Z/(1 − p),  D = rowsum(P∘dP) (= rowsum(dO∘O)),
    dS = P∘(dP − D),  dQ = τ·dS·K,  dK = τ·dSᵀ·Q
GQA/MQA: a KV head's dK and dV are the sums over the query heads that read it. A query row that
sees no key has P = 0, so it outputs 0 and passes no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.execute.numerics import Problem, dropout_keep, problem_of
from iosim.inputs.workload import Workload

Array = np.ndarray[Any, Any]


def _forward(workload: Workload, inputs: dict[str, Array], seed: int, dropout_p: float,
             block_q: int, block_kv: int) -> tuple[Problem, Array, Array, Array, Array, Array]:
    """(problem, P, the dropout factor Z/(1 − p) or 1, K and V repeated per query head, O)."""
    pr = problem_of(workload)
    q = inputs["Q"].astype(np.float64)
    k = np.repeat(inputs["K"].astype(np.float64), pr.group, axis=1)
    # MLA's latent cache: V is the first d_v columns of K (DeepSeek-V2 §2.1.2, absorbed)
    values = inputs["K"][..., :pr.dv] if pr.latent_kv else inputs["V"]
    v = np.repeat(values.astype(np.float64), pr.group, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * pr.scale
    s = np.where(pr.attention_mask(block_q, block_kv), s, -np.inf)
    if workload.prefix_len is not None and workload.suffix_lens is not None:
        # a shared-prefix batch: request b sees its first L + s_b keys only
        lens = np.array([workload.prefix_len + x for x in workload.suffix_lens])
        s = np.where(np.arange(pr.n_kv)[None, None, None, :] < lens[:, None, None, None], s,
                     -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    p = e / np.where(total > 0, total, 1.0)
    factor = np.ones_like(p)
    if "dropout" in workload.unfused:
        for b in range(pr.batch):
            for h in range(pr.heads):
                keep = dropout_keep(seed, pr, b, h, 0, pr.n_q, 0, pr.n_kv, dropout_p)
                factor[b, h] = np.where(keep, 1.0 / (1.0 - dropout_p), 0.0)
    out = np.einsum("bhqk,bhkd->bhqd", p * factor, v)
    return pr, p, factor, k, v, out


def reference_attention(workload: Workload, inputs: dict[str, Array], *, seed: int = 0,
                        dropout_p: float = 0.0, block_q: int = 64, block_kv: int = 64) -> Array:
    """softmax(τQKᵀ, masked)·V in float64 from the given inputs. `block_q`, `block_kv` place the
    block-sparse mask (when the workload is sparse) and matter for nothing else."""
    return _forward(workload, inputs, seed, dropout_p, block_q, block_kv)[5]


def reference_gradients(workload: Workload, inputs: dict[str, Array], *, seed: int = 0,
                        dropout_p: float = 0.0, block_q: int = 64,
                        block_kv: int = 64) -> dict[str, Array]:
    """dQ, dK, dV in float64 for the upstream gradient inputs["dO"] (the module's formulas)."""
    pr, p, factor, k, v, _ = _forward(workload, inputs, seed, dropout_p, block_q, block_kv)
    q = inputs["Q"].astype(np.float64)
    d_out = inputs["dO"].astype(np.float64)
    dv = np.einsum("bhqk,bhqd->bhkd", p * factor, d_out)
    dp = np.einsum("bhqd,bhkd->bhqk", d_out, v) * factor
    ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
    dq = np.einsum("bhqk,bhkd->bhqd", ds, k) * pr.scale
    dk = np.einsum("bhqk,bhqd->bhkd", ds, q) * pr.scale

    def group_sum(x: Array) -> Array:
        b, h, n, d = x.shape
        summed: Array = x.reshape(b, h // pr.group, pr.group, n, d).sum(axis=2)
        return summed

    return {"dQ": dq, "dK": group_sum(dk), "dV": group_sum(dv)}
