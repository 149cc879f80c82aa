"""The implementation's backward host floor: one function, which compare
(analysis/compare.py, through analysis/impl_backward.py) and the calibration's judge
(calibrate/torch_bwd_fit.py predict_time) both call for every implementation's backward call.

A backward call whose host work (autograd's graph walk, each node's dispatch and launch) takes
longer than its kernels is timed by do_bench as the host's: the call takes max(kernels + time per
call, floor). Each implementation with a fitted floor has one entry in HOST_FLOORS, a function
of the backward's kernel names (the loop nest's kernels as the implementation launches them)
returning (seconds, the floor in words); one without has no floor. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from iosim.estimates import eager_backward

SDPA_HOST_CALL_S = 20e-6
"""SDPA's flash backward: host seconds of one call besides its launches (autograd's hand-off,
the flash backward's checks and its dQaccum/softmax-d buffers): calibrate/eager_host_floor.py
`fit_host_floor` on the 215 seen SDPA times (fresh11_bwd.seen_points; bwd12)."""
SDPA_HOST_PER_LAUNCH_S = 26e-6
"""SDPA's flash backward: host seconds per launch (a C++ launch inside one autograd node, no
node of its own: half of eager's 56 µs): the same fit; the slope between the GQA calls (7
launches: the two group sums of dK and dV) and the plain ones (5: copy dO, copy O,
dot_do_o, the fused kernel, convert_dQ)."""


SDPA_HOST_STEPS = ("bwd_copy_dO", "bwd_copy_O")
"""Host steps of SDPA's backward that run whether or not they launch a kernel: the two
`.contiguous()` calls of _flash_attention_backward (attention_backward.cu), which at one head
return the tensor without a copy (impl_kernels' layout copies, when: multihead; bwd13). The
floor was fitted counting them at every point, fresh10's three one-head runs among them, and
the one-head call of fresh11 (bf16 N 1,100, 0.181 ms) takes longer than the five-step floor
(0.150 ms), not the three-launch one (0.098 ms)."""


def sdpa_host_floor(kernel_names: Sequence[str]) -> tuple[float, str]:
    """(seconds, in words): SDPA's flash backward's host floor, eager's rule
    (eager_backward.host_s) with SDPA's constants, over its launches and its host steps that
    launch nothing (SDPA_HOST_STEPS)."""
    kernel_names = [*(s for s in SDPA_HOST_STEPS if s not in kernel_names), *kernel_names]
    n = eager_backward.launches(kernel_names)
    return (eager_backward.host_s(kernel_names, call_s=SDPA_HOST_CALL_S,
                                  per_launch_s=SDPA_HOST_PER_LAUNCH_S),
            f"the flash backward's dispatch of {n} launches, {SDPA_HOST_CALL_S * 1e6:g} µs + "
            f"{n} × {SDPA_HOST_PER_LAUNCH_S * 1e6:g} µs")


HOST_FLOORS: dict[str, Callable[[Sequence[str]], tuple[float, str]]] = {
    "torch-naive": eager_backward.host_floor,
    "sdpa-flash": sdpa_host_floor,
}
"""Per implementation (its profile's name), its backward call's host floor: eager PyTorch's
autograd dispatch (estimates/eager_backward.py, bwd9), SDPA's flash backward's (bwd12)."""


HOST_SPEED: dict[str, float] = {}
"""Per implementation, the session's host seconds over the fitted floor's (1 where absent, as
shipped): the host's speed differs between sessions of the lent machine (0.5-0.65 of the floor
in the calibration records and fresh14, 1.0-1.3 in fresh8-12: calibrate/host_session.py, bwd15),
a fact of the session, not of the shape, measured by a host probe timed in the session."""


def backward_host_floor(impl: str, kernel_names: Sequence[str]) -> tuple[float, str]:
    """(seconds, in words) of the implementation's backward host floor at the session's host
    speed; (0, '') for none."""
    rule = HOST_FLOORS.get(impl)
    if rule is None:
        return 0.0, ""
    seconds, words = rule(kernel_names)
    speed = HOST_SPEED.get(impl, 1.0)
    return (seconds, words) if speed == 1.0 else (speed * seconds,
                                                  f"{words}, × {speed:.2f} (session host speed)")


def floored(impl: str, kernels_s: float, kernel_names: Sequence[str]) -> float:
    """One backward call: its kernels' time (with its time per call) or the host floor,
    whichever is the longer (analysis/comparison.py call_time_s)."""
    return max(backward_host_floor(impl, kernel_names)[0], kernels_s)
