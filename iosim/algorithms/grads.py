"""Pieces every backward pass shares: where dK/dV go under GQA/MQA, and the group sum.

With g = heads/kv_heads > 1 query heads per KV head, each query head produces its own
contribution to dK and dV. FlashAttention-2 writes them per query head into `dk_expanded`,
`dv_expanded` (b, N_k, h_q, d) and then sums each group (flash_api.cpp `mha_bwd`: "For MQA/GQA we
need to sum dK and dV across the groups", `at::sum_out(dk, reshape(dk_expanded, ...), {3})`);
eager PyTorch does the same through the backward of its K/V head expansion (a sum over the
group). iosim models that implementation in every algorithm: the backward kernels write
dK_expanded/dV_expanded per query head, and one more kernel reads them and writes dK, dV once per
KV head — 2·b·h_q·N_k·d elements written, read again, and 2·b·h_kv·N_k·d written. With g = 1
the kernels write dK, dV directly and there is no sum kernel.
"""

from __future__ import annotations

from iosim.algorithms.loopnest import Access, Kernel
from iosim.inputs.workload import Workload

_SUM_CITE = "flash_api.cpp mha_bwd: at::sum_out over the query heads of a KV head"


def dkv_names(workload: Workload) -> tuple[str, str]:
    """The tensors a backward kernel writes dK, dV into: per query head when GQA needs a sum."""
    if workload.group_size > 1:
        return "dK_expanded", "dV_expanded"
    return "dK", "dV"


def sum_dkdv(workload: Workload) -> tuple[Kernel, ...]:
    """The GQA/MQA group sum of dK and dV (none for multi-head attention)."""
    if workload.group_size == 1:
        return ()
    return (Kernel("bwd_sum_dkdv", "dK, dV = Σ_group", "elementwise", (
        Access("dK_expanded", "read", "prologue", "kv", "d", f"{_SUM_CITE}: read dk_expanded"),
        Access("dV_expanded", "read", "prologue", "kv", "dv", f"{_SUM_CITE}: read dv_expanded"),
        Access("dK", "write", "prologue", "kv", "d", f"{_SUM_CITE}: write dK per KV head",
               per_kv_head=True),
        Access("dV", "write", "prologue", "kv", "dv", f"{_SUM_CITE}: write dV per KV head",
               per_kv_head=True),
    )),)
