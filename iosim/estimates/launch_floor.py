"""The Python launcher's floor under a backward's time: when the host, not the GPU, sets it.

A Triton kernel launched from Python costs the host a fixed time (the JIT function's binder,
the cache lookup, the C launcher) plus a little per tensor argument (its data pointer and the
alignment check that picks a specialisation); the GPU starts the kernel only once that host
work is done. A backward of several small kernels therefore waits on the host: each kernel
starts at the later of its launch and the previous kernel's end. Timed the way the calibration
times it (triton.testing.do_bench), the clock starts when the GPU reaches the start event
behind do_bench's L2-flush kernel, which the host has already launched: the host's first
HEAD_START_S of work is hidden behind the flush.

    host issues the last at   WRAPPER_S + Σ_k launch(tensor arguments of k)
    measured                  max(issue of the last + its GPU time − HEAD_START_S,
                                  Σ kernel times)

Every constant is measured on the lent H200 by benchmarks/launch_floor_h200.py
(tests/data/launch-floor-h200.json, the call after fresh6: seen data), none judged on it:
LAUNCH_FIXED_S and LAUNCH_PER_TENSOR_S by least squares over its 16 launches of a trivial
one-store kernel (1-24 tensor arguments, grids of 1-8,192 programs: the grid does not matter);
WRAPPER_S and HEAD_START_S from its d = 64 backward calls (the wrapper's checks and buffers
before the first launch; host time per call less do_bench's time). The head dim does not set
the launch cost: bwd7's probe (tests/data/bwd7-probe-h200.json) compiled the dK/dV kernel at
d 64 and 128 with 4 and 8 warps (158-255 registers, 65-165 KB of shared memory, 55-160 KB of
cubin, up to 230 spills) and timed 24-37 µs a launch with no order among them, and the whole
call at d 128 as d 64's (114-134 µs against 121-129 µs); the 1.6× of the earlier probe's d 128
rows did not come back. Pure: no GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LAUNCH_FIXED_S = 15.6e-6
"""Host seconds of one Triton launch with no argument (least squares, launch-floor-h200.json's
trivial kernel: 15.6 µs + 1.11 µs per argument, 16 launches of 1, 8, 16 and 24 arguments)."""
LAUNCH_PER_TENSOR_S = 1.11e-6
"""Host seconds per tensor argument of a launch (the same fit; iosim's kernels' scalars are
within the noise of the per-launch figure: their dK/dV and dQ launches of 8 and 7 tensors and
10 and 8 scalars took 27.6 and 26.8 µs in the record)."""
WRAPPER_S = 24.5e-6
"""Host seconds of attention_bwd besides its launches' own (input checks, the D and gradient
buffers, the Python between launches): the record's d = 64 calls, their three segments
(88.9-94.1 µs, median 91.3) less the three launches by the fit above (66.8 µs)."""
HEAD_START_S = 31e-6
"""Host seconds hidden behind do_bench's L2 flush: the same calls, the end of their last
segment plus the last kernel (about 4 µs, ncu) less do_bench's time (30.4-36.6 µs, median 31.2)."""

TRITON_BWD_TENSORS = {"bwd_preprocess": 3, "bwd_dkdv": 8, "bwd_dq": 7, "bwd_sum_dkdv": 4}
"""Tensor arguments of each kernel of iosim's Triton backward (calibrate/kernels_bwd.py):
preprocess (O, dO, D), dK/dV (Q, K, V, dO, L, D, dK, dV), dQ (Q, K, V, dO, L, D, dQ), the GQA
group sum (the per-head dK, dV and the group's)."""


def launch_s(tensors: int) -> float:
    """Host seconds of one launch with `tensors` tensor arguments."""
    return LAUNCH_FIXED_S + LAUNCH_PER_TENSOR_S * tensors


def launched_time(kernels: Sequence[tuple[float, int]], *, host_scale: float = 1.0) -> float:
    """do_bench's seconds for kernels launched back to back from Python: (GPU seconds, tensor
    arguments) per kernel in launch order; `host_scale` multiplies every host figure (the
    report's sensitivity). The kernels' own time where the GPU is the slower (their fitted
    times already hold what little launch wait a GPU-bound backward sees), else the host's:
    the last kernel cannot start before its launch (the module docstring)."""
    return max(host_floor_s(kernels, host_scale=host_scale), sum(gpu for gpu, _ in kernels))


def host_floor_s(kernels: Sequence[tuple[float, int]], *, host_scale: float = 1.0) -> float:
    """The host's side of launched_time: when do_bench's clock can stop at the earliest, the
    last kernel's launch (the wrapper and every launch, less what hides behind the flush) plus
    its own GPU time. compare's call time for iosim's Triton backward (analysis/compare.py)."""
    host = WRAPPER_S + sum(launch_s(tensors) for _, tensors in kernels)
    return host_scale * (host - HEAD_START_S) + (kernels[-1][0] if kernels else 0.0)


def triton_backward_floor(kernels: Sequence[tuple[str, float]]) -> float:
    """host_floor_s of iosim's Triton backward from its kernels' (name, GPU seconds) in launch
    order (TRITON_BWD_TENSORS names their arguments); 0 where a kernel is not one of its own."""
    if not kernels or any(name not in TRITON_BWD_TENSORS for name, _ in kernels):
        return 0.0
    return host_floor_s([(gpu, TRITON_BWD_TENSORS[name]) for name, gpu in kernels])


def launched_backward(kernels: Sequence[Any]) -> bool:
    """Whether a kernel list's backward is iosim's Triton backward (every `bwd_…` kernel one of
    TRITON_BWD_TENSORS' and its dK/dV kernel among them): the calls this floor applies to."""
    names = [k.name for k in kernels if k.name.startswith("bwd_")]
    return "bwd_dkdv" in names and all(name in TRITON_BWD_TENSORS for name in names)
