"""Eager PyTorch's backward, timed kernel by kernel, and autograd's host floor under it: the one
rule that `compare --impl torch-naive --pass bwd --profile measured` prints and the
calibration judges (calibrate/torch_bwd_fit.py predict_time; fresh8_bwd.py, fresh9_bwd.py).
Pure: no GPU, no torch.

Each kernel of autograd's backward (standard attention's Alg. 3 as torch-naive launches it:
analysis/impl_kernels.py impl_kernels) takes

    matmul       max(DRAM estimate ÷ bandwidth, matmul FLOPs ÷ (matmul peak × efficiency))
    elementwise  max(DRAM estimate ÷ (bandwidth × memory efficiency), elementwise FLOPs ÷
                 the vector rate); the causal mask pass at MASK_EFFICIENCY of the bandwidth
                 where its mask broadcasts (batch·heads ≥ 2), at the memory efficiency at one
                 head (MASK_VECTORISED_AT_ONE_HEAD)
    + a fixed time per kernel,

and at N_kv % 8 ≠ 0 the fallback kernels' rules below. One call is the kernels plus a time per
call, and no less than autograd's host dispatch of its launches (`host_s`):

    call = max(kernels + per call, HOST_CALL_S + launches × HOST_PER_LAUNCH_S)

The four fitted figures (matmul efficiency, memory efficiency, per kernel, per call) are the
GPU YAML's `measured.impls.torch-naive.backward` (configs/gpus/h200.yaml; fitted by
`torch_bwd_fit.fit_time`, EAGER_TIME there, which a test holds equal). The constants here were
measured on the lent H200 (their fits in calibrate/: eager_unaligned.py, eager_host_floor.py,
torch_bwd_fit.fit_mask_efficiency); a GPU YAML with its own torch-naive backward fit gets them
too, as nothing measures them elsewhere yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from iosim.inputs.workload import Workload

# ---------------------------------------------------------------------------------------------
# the kernels

MASK_EFFICIENCY = 0.33
"""Eager's causal mask pass (masked_fill's backward, a non-vectorised `elementwise_kernel` over
dS and a broadcast bool mask) reaches a third of the measured bandwidth: `fit_mask_efficiency`
on the fit set (0.32 and 0.34; the judged points show 0.03 at N = 1024, 2 heads, and 0.39-0.41
at N ≥ 6000)."""

MASK_VECTORISED_AT_ONE_HEAD = True
"""At batch·heads 1 masked_fill's backward needs no broadcast (the (N, N_kv) bool mask has dS's
shape but for a size-1 batch dimension), so TensorIterator runs the vectorised kernel
(`vectorized_elementwise_kernel<8, ...>`: 4 of 4 seen one-head causal ncu runs, fresh10 and
fresh14) where at batch·heads ≥ 2 it runs the strided `elementwise_kernel<128, 4, ...>` (46 of
46 in host_session.SEEN): the pass then streams at the other elementwise kernels' memory
efficiency, not at MASK_EFFICIENCY (seen: 35.6 µs measured against 111.6 at MASK_EFFICIENCY,
fp16 N 5,300; bwd15, calibrate/host_session.py `mask_rows`). No constant is fitted: the memory
efficiency is the time fit's."""


def mask_rate(w: Workload, memory: float) -> float:
    """The causal mask pass's share of the bandwidth: MASK_EFFICIENCY where its mask broadcasts
    over batch·heads, the elementwise kernels' `memory` where it does not (one head)."""
    if MASK_VECTORISED_AT_ONE_HEAD and w.batch * w.heads == 1:
        return memory
    return MASK_EFFICIENCY


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


def unaligned_class(n_kv: int) -> str | None:
    """None when the N×N_kv rows are 16-byte aligned, else 'odd' or 'even' (by N_kv's parity)."""
    if n_kv % ALIGNED_ELEMENTS == 0:
        return None
    return "odd" if n_kv % 2 else "even"


def square_bytes(w: Workload) -> float:
    """Bytes of one N×N_kv matrix of every (batch, head) (S, P, dP or dS)."""
    return float(w.batch * w.heads * w.n * w.n_kv * w.element_bytes)


def kernel_time_s(name: str, kind: str, dram_bytes: float, matmul_flops: float,
                  elementwise_flops: float, w: Workload, *, bandwidth: float,
                  matmul_peak: float, vector_rate: float, fit: Mapping[str, float]) -> float:
    """One backward kernel's seconds (the module docstring), its fixed time included; `fit`:
    the YAML's backward entry (`efficiency`, `memory`, `program_overhead_s`: per kernel)."""
    memory = dram_bytes / bandwidth
    unaligned = unaligned_class(w.n_kv)
    if kind == "matmul" and unaligned is not None and FALLBACK_MODEL == "bytes":
        own = max(memory, square_bytes(w) / FALLBACK_GEMM_BYTES_PER_S[unaligned])
    elif kind == "matmul":
        efficiency = (fit["efficiency"] if unaligned is None
                      else FALLBACK_GEMM_EFFICIENCY[unaligned])
        own = max(memory, matmul_flops / (matmul_peak * efficiency))
    else:
        memory_rate = fit.get("memory", 1.0)
        rate = mask_rate(w, memory_rate) if name == "bwd_mask" else memory_rate
        if name == "bwd_softmax" and unaligned is not None:
            rate = SOFTMAX_UNALIGNED_EFFICIENCY
        own = max(memory / rate, elementwise_flops / vector_rate)
    return own + fit["program_overhead_s"]


# ---------------------------------------------------------------------------------------------
# the host floor

HOST_CALL_S = 10e-6
"""Host seconds of one backward call besides its launches (the autograd engine's hand-off to
the device thread and back, the graph walk's set-up): `fit_host_floor` on the seen points
(67 of 74 within ±20 % there; 0 to 50 µs lose at most two points)."""
HOST_PER_LAUNCH_S = 56e-6
"""Host seconds per backward kernel (a node's dispatch, its output's allocation and the
launch): the same fit. It is the slope that the GQA causal points need (10 launches, 0.69 ms
in fresh7 and fresh8) against the plain ones (7 launches, 0.43-0.53 ms in fresh8)."""
LAUNCHES = {"bwd_sum_dkdv": 2}
"""Launches of a model kernel that is more than one launch (GQA's group sum: dK's and dV's
`reduce_kernel`); every other kernel is one."""


def launches(kernel_names: Iterable[str]) -> int:
    """How many kernels autograd dispatches for these model kernels."""
    return sum(LAUNCHES.get(name, 1) for name in kernel_names)


def host_s(kernel_names: Iterable[str], *, call_s: float = HOST_CALL_S,
           per_launch_s: float = HOST_PER_LAUNCH_S) -> float:
    """Host seconds autograd takes to issue the backward of these model kernels: walking the
    graph it dispatches each node from C++ (dispatcher, caching allocator, launch) one after the
    other, and the GPU cannot finish before the last is issued."""
    return call_s + per_launch_s * launches(kernel_names)


def floored(kernels_s: float, kernel_names: Sequence[str], **constants: float) -> float:
    """The call's time: the kernels' or the host's, whichever is the longer."""
    return max(kernels_s, host_s(kernel_names, **constants))


def host_floor(kernel_names: Sequence[str]) -> tuple[float, str]:
    """(host_s, that floor in words): eager's entry of estimates/backward_host_floor.py."""
    n = launches(kernel_names)
    return host_s(kernel_names), (f"autograd's dispatch of {n} launches, {HOST_CALL_S * 1e6:g} "
                                  f"µs + {n} × {HOST_PER_LAUNCH_S * 1e6:g} µs")


def note(impl: str, fit: Mapping[str, float]) -> str:
    """The line saying which rule times the backward (compare prints it under the roofs)."""
    return (f"{impl}'s backward is timed kernel by kernel by eager's backward model (matmuls at "
            f"{fit['efficiency']:g} of the matmul peak, elementwise kernels at "
            f"{fit.get('memory', 1.0):g} of the bandwidth, the mask pass at "
            f"{MASK_EFFICIENCY:g}, {fit['program_overhead_s'] * 1e6:g} µs per kernel, "
            f"{fit['call_overhead_s'] * 1e6:g} µs per call, no less than autograd's host "
            f"dispatch {HOST_CALL_S * 1e6:g} µs + {HOST_PER_LAUNCH_S * 1e6:g} µs per launch; "
            "estimates/eager_backward.py, judged by calibrate/torch_bwd_fit.py)")
