"""What the measured profile times a backward with, as the calibration validated it: eager
PyTorch's backward kernel by kernel (estimates/eager_backward.py, the rule
calibrate/torch_bwd_fit.py judges), and a training step (`--pass fwdbwd`) as its forward call
plus its backward call, each timed as its pass alone is (do_bench timed each alone: every
record's forward and backward times are separate calls, the L2 flushed before each).

compare (analysis/compare.py) calls these; a sweep with --impl runs compare at every point, so
its points are the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from iosim.analysis.comparison import AlgorithmEstimate, Call
from iosim.estimates import eager_backward
from iosim.estimates.l2_model import DramEstimate
from iosim.estimates.roofline import KernelEstimate, Roofs
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload
from iosim.record import replace


def eager_backward_fit(impl: Implementation | None, hardware: Hardware,
                       profile: str) -> Mapping[str, float] | None:
    """An eager pipeline's fitted backward on this GPU (the YAML's measured.impls.NAME.backward),
    which the measured profile times its backward with; None otherwise."""
    if impl is None or impl.runs != "eager" or profile != "measured":
        return None
    fitted = hardware.measured.impls.get(impl.name) if hardware.measured is not None else None
    return fitted.backward if fitted is not None and fitted.backward else None


def eager_backward_kernels(estimates: Sequence[KernelEstimate], dram: DramEstimate,
                           workload: Workload, roofs: Roofs,
                           fit: Mapping[str, float]) -> tuple[KernelEstimate, ...]:
    """The backward's kernels, each timed by eager's backward rule at its DRAM estimate on the
    measured roofs (estimates/eager_backward.py kernel_time_s, its fixed time included)."""
    return tuple(replace(e, time_s=eager_backward.kernel_time_s(
        e.name, e.kind, dram.of_kernel(e.name).bytes, e.matmul_flops, e.elementwise_flops,
        workload, bandwidth=roofs.hbm_bandwidth_bytes_per_s,
        matmul_peak=roofs.matmul_flops_per_s, vector_rate=roofs.vector_flops_per_s, fit=fit),
        timed_by="eager-bwd") for e in estimates)


def eager_host_floor(estimates: Sequence[KernelEstimate]) -> tuple[float, str]:
    """(autograd's host dispatch of these backward kernels, that floor in words)."""
    names = [e.name for e in estimates]
    n = eager_backward.launches(names)
    return eager_backward.host_s(names), (
        f"autograd's dispatch of {n} launches, {eager_backward.HOST_CALL_S * 1e6:g} µs + "
        f"{n} × {eager_backward.HOST_PER_LAUNCH_S * 1e6:g} µs")


def training_step(whole: AlgorithmEstimate, forward: AlgorithmEstimate,
                  backward: AlgorithmEstimate) -> AlgorithmEstimate:
    """`whole` (the fwdbwd estimate: its footprint, tiling, FLOP convention, baseline) with the
    forward call's and the backward call's kernels, DRAM estimates and grids in place of its
    own, and the two calls' times (`calls`): the step's time is the two calls' as validated."""
    dram = None
    if forward.dram is not None and backward.dram is not None:
        dram = replace(backward.dram, terms=(*forward.dram.terms, *backward.dram.terms),
                       concurrent_programs=max(forward.dram.concurrent_programs,
                                               backward.dram.concurrent_programs))
    calls = tuple(Call(pass_, e.time_s, e.call_overhead_s, e.host_floor_s, e.floor)
                  for pass_, e in (("fwd", forward), ("bwd", backward)))
    return replace(whole, kernels=(*forward.kernels, *backward.kernels), dram=dram,
                   occupancy=(*forward.occupancy, *backward.occupancy), call_overhead_s=0.0,
                   host_floor_s=0.0, floor="", calls=calls)
