"""Roofline estimates: per kernel FLOPs, bytes, intensity, bound and time.

time = max(matmul FLOPs / matmul peak, elementwise FLOPs / fp32 vector peak, bytes / HBM bandwidth)
— each unit is its own roof and the kernel is as slow as the slowest one (ideal overlap). Matmul
FLOPs run at the dtype's dense tensor-core peak (fp32 inputs at the plain fp32 rate: PyTorch does
not use TF32 for matmuls by default); elementwise FLOPs (softmax, masking) at the fp32 vector rate,
as real kernels compute the softmax in fp32. With the measured profile the roofs are the
calibrated ceilings and each kernel class's time is divided by its fitted efficiency; two
things change with it, both because the calibration against hardware showed them (README,
"Calibration"): the memory roof charges the L2-aware DRAM bytes (l2.py) instead of the
L2-oblivious count, and a kernel's matmul and elementwise times add instead of overlapping
(FlashAttention-2-style kernels run the online softmax between their two matmuls in the same
warps, so the tensor cores wait for it; FA3's ping-pong scheduling exists to remove that wait).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from iosim.algorithms.blocks import BlockSums
from iosim.algorithms.closedform import (
    Dims,
    access_elements,
    closed_form,
    kernel_dims,
    kernel_flops,
    kernel_programs,
    kernel_sums,
    masked_longest,
)
from iosim.algorithms.loopnest import Kernel, element_bytes
from iosim.algorithms.traffic import Traffic, TrafficTotals
from iosim.errors import IosimError, arg
from iosim.estimates.alg4_time import alg4_fused_time_s, alg4_kernel
from iosim.estimates.combine import KERNEL as COMBINE_KERNEL
from iosim.estimates.combine import combine_time_s
from iosim.estimates.lone_prologue import prologue_bytes
from iosim.estimates.occupancy import causal_utilisation, lone_program_time, utilisation
from iosim.inputs.api_values import check_choice, check_flag, check_instance
from iosim.inputs.hardware import (
    KERNEL_KINDS,
    Alg4Time,
    BackwardSchedule,
    Hardware,
    MlaPrefillTime,
)
from iosim.inputs.tiling import Tiling
from iosim.inputs.units import DTYPE_BYTES, FP8_DTYPES
from iosim.inputs.workload import Workload
from iosim.record import Record, field

Profile = Literal["spec", "measured"]
Bound = Literal["memory", "compute", "latency"]
TimedBy = Literal["roofline", "schedule", "alg4", "combine", "mla-prefill", "fallback-gemm",
                  "eager-bwd", "flex-decoding", "lean", "dense-mask", "chain"]


class Roofs(Record):
    """The ceilings an estimate uses, and where they came from."""

    profile: Profile
    hbm_bandwidth_bytes_per_s: float
    matmul_flops_per_s: float
    vector_flops_per_s: float
    efficiency: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    additive_compute: bool = False
    """Matmul and elementwise times add (measured profile) instead of overlapping (spec)."""
    memory_efficiency: float | None = None
    """An implementation's fitted share of the measured bandwidth its memory roof reaches
    (the GPU YAML's measured.impls.NAME.efficiency.memory); then the kind's efficiency divides
    only the compute roof. None: both roofs are divided by the kind's efficiency (the GPU's own fit)."""
    kernel_efficiency: Mapping[str, float] = field(default_factory=dict)
    """An implementation's own efficiency of one kernel by name (its split-KV pass), in place
    of its kind's."""
    kernel_memory_efficiency: Mapping[str, float] = field(default_factory=dict)
    """An implementation's own memory efficiency of one kernel by name (an eager pipeline's
    gather, scale, mask and softmax kernels), in place of `memory_efficiency`."""
    solo_rate: float | None = None
    """An implementation's fitted rate of an SM holding one program (estimates/occupancy.py:
    lone_program_time); None: not limited."""
    program_bandwidth: float | None = None
    """Bytes/s one program of the implementation streams alone (lone_program_time)."""
    solo_rate_one: float | None = None
    """The lone-grid rate where busy grids hold one program per SM too, and the bytes/s of a
    lone program's prologue (estimates/lone_prologue.py); None: the one solo rate, no prologue."""
    lone_prologue_bandwidth: float | None = None
    combine: Mapping[str, float] = field(default_factory=dict)
    """An implementation's fitted figures of FA2's split-KV combine kernel
    (estimates/combine.py); empty: the kernel on its roofline only."""
    schedule: BackwardSchedule | None = None
    """Measured profile: the scheduled time of iosim's Triton backward kernels (schedule.py)."""
    sm_count: int | None = None
    schedules_untiled: bool = False
    """The schedule is an implementation's own fit of its fused backward kernel (FA2's, whose
    tiles are the Tiling's): it times that kernel too (analysis/impl_kernels.py)."""
    schedules_forward: bool = False
    """The schedule is an implementation's own fit of its fused forward kernel (FlexAttention's
    template, analysis/impl_forward.py): it times the forward's fused kernel, not the
    backward's."""
    alg4: Alg4Time | None = None
    """Measured profile: Algorithm 4's per-tile latency model, which times flash1's fused
    backward kernel (estimates/alg4_time.py; the GPU YAML's measured.alg4_time)."""
    mla_prefill: MlaPrefillTime | None = None
    """Measured profile: the fitted time of iosim's Triton MLA prefill kernel
    (estimates/mla_prefill_time.py; the GPU YAML's measured.mla_prefill_time)."""

    @property
    def ridge_point_flops_per_byte(self) -> float:
        """Intensity (FLOP/byte) where the matmul roof meets the memory roof."""
        return self.matmul_flops_per_s / self.hbm_bandwidth_bytes_per_s


def roofs_for(hardware: Hardware, dtype: str, profile: Profile = "spec", *,
              causal: bool = False) -> Roofs:
    """The ceilings (bytes/s, FLOP/s) for `dtype` on `hardware` under `profile`, with notes on
    any fallback. `causal`: the workload's mask, which picks the measured FP8 matmul rate
    (measured.peak_flops.fp8_causal where listed); no other figure depends on it."""
    check_instance("hardware", hardware, Hardware, "iosim.resolve_hardware('h100').hardware")
    check_choice("dtype", dtype, tuple(DTYPE_BYTES), what="dtype")
    check_choice("profile", profile, ("spec", "measured"), what="profile")
    causal = check_flag("causal", causal)  # causal="no" was truthy: the causal FP8 rate
    notes: list[str] = []
    matmul = hardware.peak_flops(dtype)
    vector = hardware.peak_flops_per_s.get("fp32")
    if vector is None:
        vector = matmul
        notes.append(f"{hardware.name} lists no fp32 peak: elementwise FLOPs are charged at the "
                     f"{dtype} peak")
    if profile == "spec":
        return Roofs("spec", hardware.hbm_bandwidth_bytes_per_s, matmul, vector, {}, tuple(notes))
    measured = hardware.measured
    if measured is None:
        raise IosimError(
            f"{hardware.name} has no measured section; run `iosim calibrate` on that GPU "
            f"(or use {arg('profile', 'spec')})"
        )
    bandwidth = measured.hbm_bandwidth_bytes_per_s
    if bandwidth is None:
        bandwidth = hardware.hbm_bandwidth_bytes_per_s
        notes.append("no measured HBM bandwidth: using the spec figure")
    # e4m3 and e5m2 share the measured FP8 figures, as the spec's one FP8 figure. A causal FP8
    # kernel runs its dots at measured.peak_flops.fp8_causal where listed: at FP8 a causal key
    # block costs 1.19× a non-causal one (the diagonal's masking; benchmarks/fp8_mask_fit.py).
    # The spec profile has one datasheet figure for both masks.
    peak_key = "fp8" if dtype in FP8_DTYPES else dtype
    if (causal and dtype in FP8_DTYPES and measured.fp8_causal_flops_per_s is not None
            and peak_key in measured.peak_flops_per_s):
        matmul = measured.fp8_causal_flops_per_s
    elif peak_key in measured.peak_flops_per_s:
        matmul = measured.peak_flops_per_s[peak_key]
    else:
        notes.append(f"no measured {dtype} matmul peak: using the spec figure")
    vector = measured.vector_flops_per_s or measured.peak_flops_per_s.get("fp32", vector)
    efficiency = {kind: measured.kernel_efficiency.get(kind, 1.0) for kind in KERNEL_KINDS}
    missing = [k for k in KERNEL_KINDS if k not in measured.kernel_efficiency]
    if missing:
        notes.append(f"no fitted efficiency for {', '.join(missing)} kernels: using 1.0")
    notes.append("measured profile: the memory roof charges the L2-aware DRAM estimate and a "
                 "kernel's matmul and elementwise times add (README, calibration)")
    schedule = measured.backward_schedule if hardware.sm_count is not None else None
    alg4 = measured.alg4_time if hardware.sm_count is not None else None
    mla_prefill = measured.mla_prefill_time if hardware.sm_count is not None else None
    return Roofs("measured", bandwidth, matmul, vector, efficiency, tuple(notes),
                 additive_compute=True, schedule=schedule, sm_count=hardware.sm_count,
                 alg4=alg4, mla_prefill=mla_prefill)


def schedule_note(schedule: BackwardSchedule) -> str:
    """The line saying that iosim's Triton backward kernels are timed by the fitted schedule (a
    comparison prints it only when one of its algorithms runs them)."""
    return ("iosim's Triton backward kernels are timed by scheduling their programs on the SMs "
            f"(efficiency {schedule.efficiency:g}, {schedule.program_overhead_s * 1e6:g} µs per "
            "program; estimates/schedule.py)")


def scheduled(kernel: Kernel, roofs: Roofs) -> bool:
    """Whether the kernel is timed by schedule.py: the fitted kernels only (fixed tiles of the
    Triton backward; an implementation's fused backward, or its fused forward where its
    calibration fits that: `schedules_forward`), with the measured profile's schedule."""
    return (roofs.schedule is not None and (kernel.tile is not None or roofs.schedules_untiled)
            and kernel.kind == "fused"
            and kernel.name.startswith("bwd_") != roofs.schedules_forward)


class KernelEstimate(TrafficTotals, Record):
    """One kernel on the roofline."""

    name: str
    label: str
    kind: str
    traffic: Traffic
    matmul_flops: int
    elementwise_flops: int
    memory_time_s: float
    compute_time_s: float
    efficiency: float
    time_s: float
    bound: Bound
    dram_bytes: int | None = None
    """The L2-aware DRAM estimate the memory roof used (measured profile), else None."""
    utilisation: float = 1.0
    """u of the kernel's waves (estimates/occupancy.py): time = roofline time / u."""
    timed_by: TimedBy = "roofline"
    """Which model gave time_s: the roofline (÷ utilisation), the fitted list schedule of the
    Triton backward (schedule.py), Algorithm 4's per-tile latency model (alg4_time.py), the
    split-KV combine kernel's latency model (combine.py, where it exceeds the roofline), an
    eager GEMM's CUTLASS fallback at unaligned rows (analysis/impl_kernels.py:with_fallback_gemms),
    eager PyTorch's backward model (eager_backward.py), flex's decoding template
    (analysis/impl_decoding.py), cuDNN's lean decode kernel (analysis/lean_time.py) or a dense
    causal mask's kernels (analysis/dense_mask.py)."""

    @property
    def intensity_flops_per_byte(self) -> float:
        """FLOPs per HBM byte (inf for a kernel that moves none)."""
        return self.flops / self.hbm_bytes if self.hbm_bytes else float("inf")

    @property
    def roof_bytes(self) -> int:
        """The bytes the memory roof charged: the DRAM estimate where one was used, else the
        L2-oblivious HBM count (where a roofline plot places the kernel)."""
        return self.hbm_bytes if self.dram_bytes is None else self.dram_bytes


def roofline_time(memory_bytes: Any, matmul_flops: Any, elementwise_flops: Any, *,
                  bandwidth: Any, matmul_peak: Any, vector_peak: Any, efficiency: Any,
                  additive: bool, memory_efficiency: Any = None) -> tuple[Any, Any, Any]:
    """(memory time, compute time, time) of a kernel, on numbers or numpy arrays alike: the one
    roofline that `compare` and the vectorised `sweep` both use.

    compute = max(matmul / matmul peak, elementwise / vector rate) (each unit a roof), or their
    sum for the measured profile; time = max(memory, compute) / the kernel class's efficiency.
    """
    memory = memory_bytes / bandwidth
    matmul_time = matmul_flops / matmul_peak
    elementwise_time = elementwise_flops / vector_peak
    compute = matmul_time + elementwise_time if additive else np.maximum(matmul_time, elementwise_time)
    if memory_efficiency is not None:  # an implementation's own memory and compute rates
        return memory, compute, np.maximum(memory / memory_efficiency, compute / efficiency)
    return memory, compute, np.maximum(memory, compute) / efficiency


def mostly_memory_bound(memory_bound_time_s: Any, time_s: Any) -> Any:
    """The "bound" rule of an algorithm: memory-bound when its memory-bound kernels hold at
    least half of its time (bool, or a bool array over a sweep's points)."""
    return memory_bound_time_s >= time_s - memory_bound_time_s


class KernelCost(Record):
    """One kernel's HBM bytes, FLOPs and roofline times (s): numbers, or arrays over a sweep."""

    hbm_read_bytes: Any
    hbm_write_bytes: Any
    matmul_flops: Any
    elementwise_flops: Any
    memory_time_s: Any
    compute_time_s: Any
    time_s: Any

    @property
    def memory_bound(self) -> Any:
        """The "bound" rule of a kernel: memory-bound when its memory roof is the higher one."""
        return self.memory_time_s >= self.compute_time_s


def kernel_cost(kernel: Kernel, dims: Dims, *, bandwidth: Any, matmul_peak: Any,
                vector_peak: Any, efficiency: Any, additive: bool,
                memory_bytes: Any = None, sums: BlockSums | None = None,
                per_sm: Any = None, sm_count: Any = None,
                memory_efficiency: Any = None) -> KernelCost:
    """Bytes, FLOPs and times of one kernel over `dims` (ints or a sweep's arrays): the one
    evaluation that `compare` and `sweep` share. Rates in bytes/s and FLOP/s; `memory_bytes`
    replaces the HBM bytes on the memory roof (the measured profile's DRAM estimate); `sums`
    are the kernel's block sums when the caller already has them. With `sm_count` the time is
    divided by the grid's utilisation u (estimates/occupancy.py; `per_sm`, the programs per
    SM, only says whether the grid is modelled); the memory and compute roofs stay full-GPU
    figures."""
    sums = kernel_sums(kernel, dims) if sums is None else sums
    read, write = kernel_read_write(kernel, dims, sums)
    matmul, elementwise = kernel_flops(kernel, dims, sums)
    memory_time, compute_time, time_s = roofline_time(
        read + write if memory_bytes is None else memory_bytes, matmul, elementwise,
        bandwidth=bandwidth, matmul_peak=matmul_peak, vector_peak=vector_peak,
        efficiency=efficiency, additive=additive, memory_efficiency=memory_efficiency)
    u = kernel_utilisation(kernel, dims, per_sm, sm_count, sums)
    return KernelCost(read, write, matmul, elementwise, memory_time, compute_time, time_s / u)


def kernel_read_write(kernel: Kernel, dims: Dims, sums: BlockSums | None = None
                      ) -> tuple[Any, Any]:
    """A kernel's bytes read and bytes written (L2-oblivious): each access's closed-form element
    count times its element's width, summed by op (numbers, or arrays over a sweep)."""
    sums = kernel_sums(kernel, dims) if sums is None else sums
    read: Any = 0
    write: Any = 0
    for access in kernel.accesses:
        moved = access_elements(access, kernel, dims, sums) * element_bytes(
            access.element, dims.element_bytes, dims.out_bytes)
        if access.op == "read":
            read = read + moved
        else:
            write = write + moved
    return read, write


def kernel_utilisation(kernel: Kernel, dims: Dims, per_sm: Any, sm_count: Any,
                       sums: BlockSums | None = None) -> Any:
    """u of the kernel's grid (1 for a grid iosim does not model or an unknown SM count): the
    equal-program rule, or for a causal query-outer kernel the launch-order tail
    (estimates/occupancy.py:causal_utilisation)."""
    if kernel.grid is None or per_sm is None or sm_count is None:
        return 1.0
    programs = kernel_programs(kernel, dims)
    if kernel.balanced:
        # stream-K: every SM takes an equal share of all the key-block iterations
        sums = kernel_sums(kernel, dims) if sums is None else sums
        kd = kernel_dims(kernel, dims)
        return utilisation(kd.batch * kd.heads * sums.pairs, sm_count)
    if dims.masked and kernel.grid == "blocks" and not kernel.split:
        # a window or packed sequences: programs of unequal length (and, packed, programs past a
        # sequence's end that exit at once), as the causal tail below
        sums = kernel_sums(kernel, dims) if sums is None else sums
        kd = kernel_dims(kernel, dims)
        return causal_utilisation(programs, kd.batch * kd.heads * sums.pairs,
                                  masked_longest(kernel, dims), sm_count)
    causal = dims.causal if not isinstance(dims.causal, np.ndarray) else bool(dims.causal.any())
    if (causal and kernel.loop == "q" and not kernel.split and kernel.grid == "blocks"
            and not kernel.segments):
        sums = kernel_sums(kernel, dims) if sums is None else sums
        kd = kernel_dims(kernel, dims)
        return causal_utilisation(programs, kd.batch * kd.heads * sums.pairs, sums.kv_blocks,
                                  sm_count)
    return utilisation(programs, sm_count)


class CostTotals(Record):
    """An algorithm's kernels summed (numbers, or arrays over a sweep's points)."""

    hbm_read_bytes: Any
    hbm_write_bytes: Any
    matmul_flops: Any
    elementwise_flops: Any
    time_s: Any
    memory_time_s: Any
    """Σ over kernels of HBM bytes / bandwidth (each kernel's memory roof)."""
    compute_time_s: Any
    memory_bound_time_s: Any
    """Time of the memory-bound kernels."""

    @property
    def memory_bound(self) -> Any:
        """Memory-bound when the memory-bound kernels hold at least half the time."""
        return mostly_memory_bound(self.memory_bound_time_s, self.time_s)


def total_cost(kernels: Iterable[KernelCost | KernelEstimate]) -> CostTotals:
    """The per-kernel figures summed in launch order: the totals of `compare` and `sweep`."""
    totals: list[Any] = [0] * 8
    for k in kernels:
        memory_bound = k.memory_time_s >= k.compute_time_s
        for i, value in enumerate((
                k.hbm_read_bytes, k.hbm_write_bytes, k.matmul_flops, k.elementwise_flops,
                k.time_s, k.memory_time_s, k.compute_time_s,
                np.where(memory_bound, k.time_s, 0.0) if isinstance(memory_bound, np.ndarray)
                else (k.time_s if memory_bound else 0))):
            totals[i] = totals[i] + value
    return CostTotals(*totals)


def estimate_kernels(
    kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None, roofs: Roofs,
    *, dram_bytes: Mapping[str, int] | None = None, sm_count: int | None = None,
) -> tuple[KernelEstimate, ...]:
    """Every kernel on the roofline; `dram_bytes` (per kernel name) replaces the L2-oblivious
    bytes on the memory roof (the measured profile passes the L2-aware DRAM estimate); with
    `sm_count` each modelled grid's time is divided by its utilisation (programs per SM from
    the tiling)."""
    traffic = closed_form(kernels, workload, tiling)
    dims = Dims.of(workload, tiling)
    estimates = []
    for kernel in kernels:
        dram = None if dram_bytes is None else dram_bytes.get(kernel.name)
        efficiency = roofs.kernel_efficiency.get(kernel.name,
                                                 roofs.efficiency.get(kernel.kind, 1.0))
        per_sm = kernel_programs_per_sm(kernel, tiling)
        cost = kernel_cost(kernel, dims, bandwidth=roofs.hbm_bandwidth_bytes_per_s,
                           matmul_peak=roofs.matmul_flops_per_s,
                           vector_peak=roofs.vector_flops_per_s, efficiency=efficiency,
                           additive=roofs.additive_compute, memory_bytes=dram,
                           per_sm=per_sm, sm_count=sm_count,
                           memory_efficiency=roofs.kernel_memory_efficiency.get(
                               kernel.name, roofs.memory_efficiency))
        timed_by: TimedBy = "roofline"
        own_memory = roofs.kernel_memory_efficiency.get(kernel.name)
        memory_efficiency = own_memory if own_memory is not None else roofs.memory_efficiency
        u = float(kernel_utilisation(kernel, dims, per_sm, sm_count))  # as kernel_cost has it
        memory_time, compute_time, time_s = (float(x) for x in (
            cost.memory_time_s, cost.compute_time_s, cost.time_s))
        if kernel.grid is not None and sm_count and (roofs.solo_rate or roofs.program_bandwidth):
            time_s = lone_program_time(
                time_s, "memory" if memory_time >= compute_time else "compute",
                int(kernel_programs(kernel, dims)), per_sm, sm_count,
                float(cost.hbm_read_bytes + cost.hbm_write_bytes) if dram is None else dram,
                roofs.solo_rate, roofs.program_bandwidth,
                memory_s=memory_time / (memory_efficiency or efficiency),
                compute_s=compute_time / efficiency / u, solo_rate_one=roofs.solo_rate_one,
                prologue_s=_prologue_s(kernel, workload, tiling, roofs))
        if kernel.name == COMBINE_KERNEL and roofs.combine and sm_count:
            # latency-bound, not on a roof: estimates/combine.py
            combined = combine_time_s(
                workload, float(cost.hbm_read_bytes + cost.hbm_write_bytes), int(sm_count),
                float(roofs.hbm_bandwidth_bytes_per_s), roofs.combine)
            if combined > time_s:
                time_s, timed_by = combined, "combine"
        if scheduled(kernel, roofs):
            # the fitted list schedule of the Triton backward (schedule.py) already counts its
            # waves and unequal causal programs: it replaces the utilisation
            from iosim.estimates.schedule import scheduled_compute_s, scheduled_launch
            from iosim.inputs.limits import check_scheduled_programs

            assert roofs.schedule is not None and roofs.sm_count is not None
            efficiency = roofs.schedule.efficiency
            launch = scheduled_launch(
                kernel, workload, tiling, roofs.schedule, sm_count=roofs.sm_count,
                matmul_peak=roofs.matmul_flops_per_s, vector_peak=roofs.vector_flops_per_s)
            check_scheduled_programs(len(launch.lengths) * launch.repeats)
            compute_time = scheduled_compute_s(
                kernel, workload, tiling, roofs.schedule, sm_count=roofs.sm_count,
                matmul_peak=roofs.matmul_flops_per_s, vector_peak=roofs.vector_flops_per_s)
            time_s = max(memory_time, compute_time)
            u, timed_by = 1.0, "schedule"
        if roofs.alg4 is not None and roofs.sm_count is not None and alg4_kernel(kernel):
            # a chain of dependent tiles per head, not a roofline: alg4_time.py
            time_s = alg4_fused_time_s(
                kernel, workload, tiling,
                float(cost.hbm_read_bytes + cost.hbm_write_bytes) if dram is None else dram,
                roofs.sm_count, roofs.alg4)
            u, timed_by = 1.0, "alg4"
        estimates.append(KernelEstimate(
            name=kernel.name,
            label=kernel.label,
            kind=kernel.kind,
            traffic=traffic.of_kernel(kernel.name),
            matmul_flops=int(cost.matmul_flops),
            elementwise_flops=int(cost.elementwise_flops),
            memory_time_s=memory_time,
            compute_time_s=compute_time,
            efficiency=efficiency,
            time_s=time_s,
            # a kernel its latency model timed sits below both roofs: neither bound is true
            bound=("latency" if timed_by == "combine" else
                   "memory" if memory_time >= compute_time else "compute"),
            dram_bytes=dram,
            utilisation=u,
            timed_by=timed_by,
        ))
    return tuple(estimates)


def _prologue_s(kernel: Kernel, workload: Workload, tiling: Tiling | None, roofs: Roofs) -> float:
    """A lone forward program's unhidden prologue (estimates/lone_prologue.py); 0 without the
    term, for a kernel that is not the fused forward, or untiled."""
    if roofs.lone_prologue_bandwidth is None or tiling is None or kernel.kind != "fused" \
            or kernel.blocks == "backward":
        return 0.0
    return prologue_bytes(tiling.block_q, tiling.block_kv, workload.d,
                          workload.element_bytes) / roofs.lone_prologue_bandwidth


def kernel_programs_per_sm(kernel: Kernel, tiling: Tiling | None) -> int:
    """Programs per SM of a kernel: its pass's figure from the tiling (1 untiled)."""
    if tiling is None:
        return 1
    return tiling.bwd_programs_per_sm if kernel.blocks == "backward" else tiling.programs_per_sm


