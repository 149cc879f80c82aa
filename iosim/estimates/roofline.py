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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from iosim.algorithms.loopnest import Dims, Kernel, closed_form, kernel_flops, kernel_sums
from iosim.algorithms.traffic import Traffic, TrafficTotals
from iosim.errors import IosimError
from iosim.inputs.hardware import KERNEL_KINDS, Hardware
from iosim.inputs.workload import Tiling, Workload

Profile = Literal["spec", "measured"]
Bound = Literal["memory", "compute"]


@dataclass(frozen=True, slots=True)
class Roofs:
    """The ceilings an estimate uses, and where they came from."""

    profile: Profile
    hbm_bandwidth_bytes_per_s: float
    matmul_flops_per_s: float
    vector_flops_per_s: float
    efficiency: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    additive_compute: bool = False
    """Matmul and elementwise times add (measured profile) instead of overlapping (spec)."""

    @property
    def ridge_point_flops_per_byte(self) -> float:
        return self.matmul_flops_per_s / self.hbm_bandwidth_bytes_per_s


def roofs_for(hardware: Hardware, dtype: str, profile: Profile = "spec") -> Roofs:
    notes: list[str] = []
    matmul = hardware.peak_flops(dtype)
    vector = hardware.peak_flops_per_s.get("fp32")
    if vector is None:
        vector = matmul
        notes.append(f"{hardware.name} lists no fp32 peak: elementwise FLOPs are charged at the "
                     f"{dtype} peak")
    if profile == "spec":
        return Roofs("spec", hardware.hbm_bandwidth_bytes_per_s, matmul, vector, {}, tuple(notes))
    if profile != "measured":
        raise IosimError(f"unknown profile '{profile}'; use spec or measured")
    measured = hardware.measured
    if measured is None:
        raise IosimError(
            f"{hardware.name} has no measured section; run `iosim calibrate` on that GPU "
            f"(or use --profile spec)"
        )
    bandwidth = measured.hbm_bandwidth_bytes_per_s
    if bandwidth is None:
        bandwidth = hardware.hbm_bandwidth_bytes_per_s
        notes.append("no measured HBM bandwidth: using the spec figure")
    if dtype in measured.peak_flops_per_s:
        matmul = measured.peak_flops_per_s[dtype]
    else:
        notes.append(f"no measured {dtype} matmul peak: using the spec figure")
    vector = measured.vector_flops_per_s or measured.peak_flops_per_s.get("fp32", vector)
    efficiency = {kind: measured.kernel_efficiency.get(kind, 1.0) for kind in KERNEL_KINDS}
    missing = [k for k in KERNEL_KINDS if k not in measured.kernel_efficiency]
    if missing:
        notes.append(f"no fitted efficiency for {', '.join(missing)} kernels: using 1.0")
    notes.append("measured profile: the memory roof charges the L2-aware DRAM estimate and a "
                 "kernel's matmul and elementwise times add (README, calibration)")
    return Roofs("measured", bandwidth, matmul, vector, efficiency, tuple(notes),
                 additive_compute=True)


@dataclass(frozen=True, slots=True)
class KernelEstimate(TrafficTotals):
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

    @property
    def intensity_flops_per_byte(self) -> float:
        return self.flops / self.hbm_bytes if self.hbm_bytes else float("inf")

    @property
    def roof_bytes(self) -> int:
        """The bytes the memory roof charged: the DRAM estimate where one was used, else the
        L2-oblivious HBM count (where a roofline plot places the kernel)."""
        return self.hbm_bytes if self.dram_bytes is None else self.dram_bytes


def roofline_time(memory_bytes: Any, matmul_flops: Any, elementwise_flops: Any, *,
                  bandwidth: Any, matmul_peak: Any, vector_peak: Any, efficiency: Any,
                  additive: bool) -> tuple[Any, Any, Any]:
    """(memory time, compute time, time) of a kernel, on numbers or numpy arrays alike: the one
    roofline that `compare` and the vectorised `sweep` both use.

    compute = max(matmul / matmul peak, elementwise / vector rate) (each unit a roof), or their
    sum for the measured profile; time = max(memory, compute) / the kernel class's efficiency.
    """
    memory = memory_bytes / bandwidth
    matmul_time = matmul_flops / matmul_peak
    elementwise_time = elementwise_flops / vector_peak
    compute = matmul_time + elementwise_time if additive else np.maximum(matmul_time, elementwise_time)
    return memory, compute, np.maximum(memory, compute) / efficiency


def estimate_kernels(
    kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None, roofs: Roofs,
    *, dram_bytes: Mapping[str, int] | None = None,
) -> tuple[KernelEstimate, ...]:
    """Every kernel on the roofline; `dram_bytes` (per kernel name) replaces the L2-oblivious
    bytes on the memory roof (the measured profile passes the L2-aware DRAM estimate)."""
    traffic = closed_form(kernels, workload, tiling)
    dims = Dims.of(workload, tiling)
    estimates = []
    for kernel in kernels:
        mine = traffic.of_kernel(kernel.name)
        matmul, elementwise = (int(x) for x in kernel_flops(kernel, dims, kernel_sums(kernel, dims)))
        dram = None if dram_bytes is None else dram_bytes.get(kernel.name)
        efficiency = roofs.efficiency.get(kernel.kind, 1.0)
        memory_time, compute_time, time_s = (float(x) for x in roofline_time(
            mine.bytes if dram is None else dram, matmul, elementwise,
            bandwidth=roofs.hbm_bandwidth_bytes_per_s, matmul_peak=roofs.matmul_flops_per_s,
            vector_peak=roofs.vector_flops_per_s, efficiency=efficiency,
            additive=roofs.additive_compute))
        estimates.append(KernelEstimate(
            name=kernel.name,
            label=kernel.label,
            kind=kernel.kind,
            traffic=mine,
            matmul_flops=matmul,
            elementwise_flops=elementwise,
            memory_time_s=memory_time,
            compute_time_s=compute_time,
            efficiency=efficiency,
            time_s=time_s,
            bound="memory" if memory_time >= compute_time else "compute",
            dram_bytes=dram,
        ))
    return tuple(estimates)
