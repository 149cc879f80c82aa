"""Fit FA2's split-KV combine kernel's figures (estimates/combine.py) on its measured device
times: every point of a record whose kernels (torch.profiler, cold L2) include the combine
kernel and whose estimate runs the split path too. Pure: no torch, no GPU.

The three figures (latency, per-program rate, share of the bandwidth) are searched like the
call fit (calibrate/impl_fit.py: coordinate descent over grids, least summed absolute log
error), before it: the call fit then holds the combine kernel at this model's time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.analysis.compare import compare
from iosim.estimates.combine import KERNEL, TERMS, combine_time_s
from iosim.inputs.hardware import Hardware
from iosim.inputs.workload import Workload

MEASURED_NAMES = ("splitkv_combine", "lean_reduction_kernel")
"""What the combine kernel's name contains in torch.profiler's list: FA2's
(pytorch_flash::flash_fwd_splitkv_combine_kernel<...>) and cuDNN's lean decode's
(cudnn::fusion::lean_reduction_kernel<...>, analysis/stream_k.py)."""
GRIDS = {"combine_latency_s": np.round(np.arange(0.0, 10.01e-6, 0.1e-6), 9),
         "combine_program_bandwidth": np.arange(2e9, 40.01e9, 0.25e9),
         "combine_memory": np.round(np.arange(0.10, 1.051, 0.01), 3)}
START = {"combine_latency_s": 3e-6, "combine_program_bandwidth": 16e9, "combine_memory": 0.5}


def combine_points(points: Sequence[dict[str, Any]], hardware: Hardware, impl: str
                   ) -> list[tuple[Workload, float, float]]:
    """(workload, the combine kernel's bytes, its measured device seconds) of every point of
    `impl` that measured a combine kernel where the estimate runs one too."""
    out = []
    for p in points:
        if p.get("impl") != impl or "time_s" not in p:
            continue
        times = [k["time_s"] for k in p.get("kernels", [])
                 if any(name in k["name"] for name in MEASURED_NAMES)]
        if not times:
            continue
        w = Workload(**p["workload"])
        estimate = compare(w, hardware, impl=impl, profile="spec").algorithms[-1]
        kernel = next((k for k in estimate.kernels if k.name == KERNEL), None)
        if kernel is None:
            continue
        out.append((w, float(kernel.traffic.read_bytes + kernel.traffic.write_bytes),
                    float(times[0])))
    return out


def fit_combine(data: Sequence[tuple[Workload, float, float]], hardware: Hardware,
                *, sweeps: int = 4, in_flight: bool = True) -> dict[str, float]:
    """The figures with the least summed absolute log error over `data` ({} without data);
    `in_flight` as combine_time_s's (False: round cudnn11's trial for cuDNN's lean reduction,
    not shipped: estimates/combine.py)."""
    if not data or hardware.sm_count is None:
        return {}
    sms = hardware.sm_count
    bandwidth = hardware_bandwidth(hardware)

    def loss(trial: dict[str, float]) -> float:
        return sum(abs(math.log(combine_time_s(w, b, sms, bandwidth, trial,
                                               in_flight=in_flight) / t))
                   for w, b, t in data)

    params = dict(START)
    for _ in range(sweeps):
        for name, grid in GRIDS.items():
            params[name] = float(min(grid, key=lambda v: loss({**params, name: float(v)})))
    return {k: params[k] for k in TERMS}


def hardware_bandwidth(hardware: Hardware) -> float:
    """The HBM bandwidth (bytes/s) the measured profile's roofs use (estimates/roofline.py:
    roofs): the measured figure, else the spec's."""
    measured = hardware.measured.hbm_bandwidth_bytes_per_s if hardware.measured else None
    return float(measured if measured is not None else hardware.hbm_bandwidth_bytes_per_s)
