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

from iosim.algorithms import ALGORITHMS, Algorithm
from iosim.algorithms.loopnest import Kernel
from iosim.analysis.comparison import AlgorithmEstimate, Call
from iosim.estimates import eager_backward
from iosim.estimates.backward_host_floor import backward_host_floor
from iosim.estimates.l2 import dram_estimate
from iosim.estimates.l2_model import DramEstimate
from iosim.estimates.roofline import KernelEstimate, Roofs
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import replace


def backward_fit(impl: Implementation | None, hardware: Hardware,
                 profile: str) -> Mapping[str, float] | None:
    """An implementation's fitted backward on this GPU (the YAML's measured.impls.NAME.backward),
    which the measured profile times its backward with; None otherwise."""
    if impl is None or profile != "measured":
        return None
    fitted = hardware.measured.impls.get(impl.name) if hardware.measured is not None else None
    return fitted.backward if fitted is not None and fitted.backward else None


def eager_backward_fit(impl: Implementation | None, hardware: Hardware,
                       profile: str) -> Mapping[str, float] | None:
    """An eager pipeline's fitted backward (backward_fit), which times its kernels one by one
    (eager_backward_kernels); None otherwise."""
    return backward_fit(impl, hardware, profile) if impl is not None and impl.runs == "eager" \
        else None


def impl_backward_floor(impl: Implementation | None, hardware: Hardware, profile: str,
                        estimates: Sequence[KernelEstimate]) -> tuple[float, str]:
    """(seconds, in words) of one backward call's host floor where the implementation's backward
    is fitted on this GPU: estimates/backward_host_floor.py, the function the calibration's
    judge applies too; (0, '') otherwise."""
    if impl is None or backward_fit(impl, hardware, profile) is None:
        return 0.0, ""
    return backward_host_floor(impl.name, [e.name for e in estimates])



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


def backward_nest(impl: Implementation | None) -> Algorithm | None:
    """The algorithm whose loop nest an implementation's backward runs, where its profile
    names one (`backward.algorithm`: iosim-triton's is the triton algorithm, iosim's own
    Triton backward); None: its own algorithm's backward."""
    if impl is None or not impl.backward_algorithm:
        return None
    return ALGORITHMS[impl.backward_algorithm]


def as_impl(estimate: AlgorithmEstimate, impl: Implementation | None) -> AlgorithmEstimate:
    """An algorithm's estimate as the implementation's (its name, title and profile): the
    backward of an implementation that runs that algorithm's loop nest."""
    assert impl is not None
    return replace(estimate, name=impl.name, impl=impl,
                   title=f"{impl.title}; its backward: {estimate.title}")


OWN_CALLS = ("triton",)
"""Algorithms that are calls of their own (iosim's Triton kernels: calibrate/kernels.py's
forward, kernels_bwd.py's backward, each timed and judged as a call); an implementation always
is."""


def timed_as_calls(impl: Implementation | None, algorithm: str, pass_: str,
                   profile: str) -> bool:
    """Whether a training step is timed as its forward call + its backward call (measured
    profile; an implementation or iosim's own kernels): compare's rule, and the sweep's."""
    return (pass_ == "fwdbwd" and profile == "measured"
            and (impl is not None or algorithm in OWN_CALLS))


def call_dram(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
              hardware: Hardware) -> DramEstimate:
    """The DRAM estimate of a training step timed as two calls: the forward kernels' on the
    forward pass and the backward kernels' (`bwd_…`) on the backward pass, each from an empty
    L2 (do_bench flushes it before each call), as compare's two calls have them."""
    forward = [k for k in kernels if not k.name.startswith("bwd_")]
    backward = [k for k in kernels if k.name.startswith("bwd_")]
    return merged_dram(dram_estimate(forward, workload.with_(pass_="fwd"), tiling, hardware),
                       dram_estimate(backward, workload.with_(pass_="bwd"), tiling, hardware))


def merged_dram(forward: DramEstimate, backward: DramEstimate) -> DramEstimate:
    """Two calls' DRAM estimates as one (their terms in launch order)."""
    return replace(backward, terms=(*forward.terms, *backward.terms),
                   concurrent_programs=max(forward.concurrent_programs,
                                           backward.concurrent_programs))


def training_step(whole: AlgorithmEstimate, forward: AlgorithmEstimate,
                  backward: AlgorithmEstimate) -> AlgorithmEstimate:
    """`whole` (the fwdbwd estimate: its footprint, tiling, FLOP convention, baseline) with the
    forward call's and the backward call's kernels, DRAM estimates and grids in place of its
    own, and the two calls' times (`calls`): the step's time is the two calls' as validated."""
    dram = None
    if forward.dram is not None and backward.dram is not None:
        dram = merged_dram(forward.dram, backward.dram)
    calls = tuple(Call(pass_, e.time_s, e.call_overhead_s, e.host_floor_s, e.floor)
                  for pass_, e in (("fwd", forward), ("bwd", backward)))
    return replace(whole, kernels=(*forward.kernels, *backward.kernels), dram=dram,
                   occupancy=(*forward.occupancy, *backward.occupancy), call_overhead_s=0.0,
                   host_floor_s=0.0, floor="", calls=calls)
