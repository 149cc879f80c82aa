"""Eager PyTorch's backward at N_kv % 8 != 0: which kernels run, and the rules that time them.

Measured on the H200 (tests/data/backward-h200-torch.json, backward-h200-fresh.json): the four
GEMMs of Alg. 3 are CUTLASS fallbacks and the softmax backward is PyTorch's kernel without
shared memory. torch_bwd_fit.predict_time uses these rules; torch_bwd_fit.fit_unaligned fits
the constants on UNALIGNED_FIT.
"""

from __future__ import annotations

from iosim.inputs.workload import Workload

ALIGNED_ELEMENTS = 8
"""fp16/bf16 rows of the N×N_kv matrices (S, P, dP, dS: leading dimension N_kv) start on 16-byte
boundaries when N_kv is a multiple of 8. Otherwise cuBLAS cannot run its TMA kernels (nvjet_sm90,
whose tensor-memory descriptors need 16-byte strides) and falls back to CUTLASS kernels that load
2 or 4 bytes at a time (measured: cutlass_75_tensorop_s1688gemm_*_align1 at N = 12345,
cutlass_80_tensorop_s16816gemm_*_align2 at N = 2500), and PyTorch's softmax backward leaves its
shared-memory kernel (SoftMax.cu: cunn_SoftMaxBackwardSmem needs dim_size % ILP == 0, ILP = 16
bytes of elements) for cunn_SoftMaxBackward, which reads its two rows twice."""
FALLBACK_GEMM_BYTES_PER_S = {"odd": 941e9, "even": 1432e9}
"""The rate at which a fallback GEMM streams its N×N_kv operand (P or dS read, dP written), by
N_kv's parity (odd: align1 kernels, 2-byte accesses; even: align2, 4-byte): the kernels are
bound by those narrow accesses, not by their FLOPs, so the time is the matrix's bytes over this
rate whatever d is. `fit_unaligned` on UNALIGNED_FIT (the median over their four GEMMs)."""
FALLBACK_MODEL = "bytes"
"""'bytes' (FALLBACK_GEMM_BYTES_PER_S, shipped) or 'flops' (FALLBACK_GEMM_EFFICIENCY: the first
rule, judged on the fresh record, where it held at d = 64 and missed at d = 128 by +28 to +56 %:
the fallback kernels' time does not grow with d; kept to report that judgement)."""
FALLBACK_GEMM_EFFICIENCY = {"odd": 0.091, "even": 0.138}
"""The first rule: the fallback GEMMs' share of the measured matmul peak, by N_kv's parity,
`fit_unaligned` on UNALIGNED_FIT (the median over their four GEMMs)."""
SOFTMAX_UNALIGNED_EFFICIENCY = 0.60
"""cunn_SoftMaxBackward's share of the measured bandwidth (its DRAM bytes over its time):
`fit_unaligned` on UNALIGNED_FIT (median)."""
UNALIGNED_FIT = ("fp16/n12345/d64/b1h2kv2/full", "fp16/n2500/d64/b1h16kv16/full")
"""The fit points of the constants above: the only eager runs with N % 8 != 0 before the fresh
record, so neither is judged (their errors were seen while the cause was found). The fresh
record's N % 8 != 0 points judged the first rule; the streaming rule was chosen after seeing
them and awaits a fresh judgement."""


def unaligned_class(n_kv: int) -> str | None:
    """None when the N×N_kv rows are 16-byte aligned, else 'odd' or 'even' (by N_kv's parity)."""
    if n_kv % ALIGNED_ELEMENTS == 0:
        return None
    return "odd" if n_kv % 2 else "even"


def square_bytes(w: Workload) -> float:
    """Bytes of one N×N_kv matrix of every (batch, head) (S, P, dP or dS)."""
    return float(w.batch * w.heads * w.n * w.n_kv * w.element_bytes)

