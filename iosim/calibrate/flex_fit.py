"""Fit FlexAttention's forward schedule (analysis/impl_forward.py) on measured records (pure: no
torch, no GPU), what benchmarks/flex8_fit.py prints.

Two steps, each on its own measurement:

1. The schedule, on the kernels' own device times (torch.profiler's time of the main template,
   `triton_tem_fused_..._flex_attention_...`, in each point's `kernels`): the efficiency per
   head-dim bucket and the overhead per program and key loop, by coordinate descent over
   GRIDS for the least summed absolute log error. A program's lengths come from
   estimates/schedule.py's `scheduled_launch` (the rule compare uses), so the fit and compare
   cannot disagree on what a program is. `causal_loops` is not fitted: it is the template's
   (impl_forward.py).
2. The call: the time per call measured as the gap between a kernel-bound call's do_bench
   time and its kernels' device times, then the host-bound floor on the calls' do_bench
   times, the kernels predicted by compare with the schedule of step 1
   (analysis/comparison.py call_time_s: max(floor, kernels + per call)).

Points torch runs on its decoding template (impl_forward.py:runs_decoding_kernel) are left out
of step 1: the schedule does not time them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms import ALGORITHMS
from iosim.analysis.impl_forward import aligned, runs_decoding_kernel
from iosim.analysis.impl_kernels import head_dim_bucket
from iosim.estimates.list_schedule import launch_makespan
from iosim.estimates.schedule import scheduled_launch
from iosim.inputs.hardware import BackwardSchedule, Hardware, ImplCalibration
from iosim.inputs.impl_calibration import with_impl_calibration
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

CAUSAL_LOOPS = 2
"""The flex template's key loops in a program with a causal BlockMask (impl_forward.py)."""
GRIDS = {
    "efficiency": np.round(np.arange(0.20, 1.201, 0.005), 3),
    "unaligned": np.round(np.arange(0.80, 2.501, 0.01), 3),
    "program_overhead_s": np.round(np.arange(0.0, 30.01e-6, 0.25e-6), 10),
    "lone_share": np.round(np.arange(0.50, 1.0001, 0.01), 3),
}
CALL_GRIDS = {"host_floor_s": np.arange(0.0, 300.1e-6, 1e-6)}


def probe_points(record: dict[str, Any]) -> list[dict[str, Any]]:
    """benchmarks/flex8_probe.py's points as a validation record's flex points: those a user's
    workload runs (no mask, or a causal one; not the all-full BlockMask)."""
    out: list[dict[str, Any]] = []
    for p in record["points"]:
        if p["mask"] not in ("none", "causal"):
            continue
        s = p["workload"]
        w = Workload(s["n"], d=s["d"], heads=s["heads"], kv_heads=s.get("kv_heads"),
                     causal=s.get("causal", False))
        out.append({"impl": "flex", "index": len(out), "time_s": p["time_s"],
                    "kernels": p["kernels"], "workload": {
                        "n": w.n, "n_kv": w.n_kv, "d": w.d, "heads": w.heads,
                        "kv_heads": w.kv_heads, "batch": w.batch, "dtype": w.dtype,
                        "causal": w.causal}})
    return out


def template_time(point: dict[str, Any]) -> float | None:
    """The device time of the point's main flex template kernel (None: not listed)."""
    times = [k["time_s"] for k in point.get("kernels", ())
             if "_tem_" in k["name"] and "flex_attention" in k["name"]]
    return sum(times) if times else None


class KernelPoint(Record):
    """One measured point's template kernel: its workload and device time."""

    workload: Workload
    kernel_s: float
    call_s: float


def kernel_points(points: Sequence[dict[str, Any]], impl: Implementation) -> list[KernelPoint]:
    """The timed flex points whose main template kernel was listed, forward, not decoding."""
    out = []
    for p in points:
        if p.get("impl") != impl.name or "time_s" not in p:
            continue
        w = Workload(**p["workload"])
        kernel = template_time(p)
        if kernel is None or runs_decoding_kernel(impl, w):
            continue
        out.append(KernelPoint(w, kernel, p["time_s"]))
    return out


def _launch_inputs(hardware: Hardware, impl: Implementation, w: Workload) -> tuple[Any, ...]:
    """The attention kernel, its tiling and the measured roofs compare gives this workload."""
    from iosim.analysis.compare import compare

    est = compare(w, hardware, impl=impl, profile="measured").algorithms[-1]
    kernel = next(k for k in ALGORITHMS[impl.algorithm].kernels(w, est.tiling)
                  if k.kind == "fused")
    return kernel, est.tiling


def predicted_kernel_s(w: Workload, kernel: Any, tiling: Any, hardware: Hardware,
                       efficiency: float, overhead_s: float, matmul: float,
                       vector: float, unaligned: float = 1.0,
                       lone_share: float | None = None) -> float:
    """The schedule's makespan of the workload's template kernel (compute only); `unaligned`
    scales its steps where N or N_kv is not a multiple of 128 (impl_forward.py:aligned);
    `lone_share`: a lone program's share of its SM (estimates/sm_sharing.py; None: off)."""
    schedule = BackwardSchedule(efficiency, overhead_s, {w.d: tiling.programs_per_sm},
                                causal_loops=CAUSAL_LOOPS,
                                step_scale=1.0 if aligned(w) else unaligned,
                                lone_share=lone_share)
    assert hardware.sm_count is not None
    launch = scheduled_launch(kernel, w, tiling, schedule, sm_count=hardware.sm_count,
                              matmul_peak=matmul, vector_peak=vector)
    return launch_makespan(launch)


def fit_schedule(points: list[KernelPoint], hardware: Hardware, impl: Implementation, *,
                 sweeps: int = 10, lone_share: bool = False) -> dict[str, float]:
    """Step 1 (the module docstring): `efficiency_dN` per bucket present, `program_overhead_s`,
    and with `lone_share` a lone program's share of its SM (estimates/sm_sharing.py)."""
    from iosim.estimates.roofline import roofs_for

    inputs = []
    for p in points:
        kernel, tiling = _launch_inputs(hardware, impl, p.workload)
        roofs = roofs_for(hardware, p.workload.dtype, "measured")
        inputs.append((p, kernel, tiling, roofs.matmul_flops_per_s, roofs.vector_flops_per_s))
    buckets = sorted({head_dim_bucket(p.workload.d) for p in points})
    unaligned = sorted({head_dim_bucket(p.workload.d) for p in points if not aligned(p.workload)})
    params = {**{f"efficiency_d{b}": 0.6 for b in buckets},
              **{f"unaligned_d{b}": 1.0 for b in unaligned}, "program_overhead_s": 5e-6,
              **({"lone_share": 0.5} if lone_share else {})}

    def loss(trial: dict[str, float]) -> float:
        return sum(abs(math.log(predicted_kernel_s(
            p.workload, k, t, hardware, trial[f"efficiency_d{head_dim_bucket(p.workload.d)}"],
            trial["program_overhead_s"], mm, vec,
            trial.get(f"unaligned_d{head_dim_bucket(p.workload.d)}", 1.0),
            trial.get("lone_share")) / p.kernel_s))
            for p, k, t, mm, vec in inputs)

    for _ in range(sweeps):  # until no parameter moves (a coordinate-wise optimum)
        before = dict(params)
        for name in list(params):
            grid = GRIDS[name.rstrip("0123456789").removesuffix("_d")
                         if not name.startswith("efficiency") else "efficiency"]
            params[name] = float(min(grid, key=lambda v: loss({**params, name: float(v)})))
        if params == before:
            break
    return params


def with_forward(hardware: Hardware, impl: Implementation, forward: dict[str, float],
                 source: str, **terms: float) -> Hardware:
    """`hardware` whose calibration of `impl` has this forward schedule (and these terms:
    host_floor_s, call_overhead_s), everything else of its entry kept."""
    assert hardware.measured is not None
    old = hardware.measured.impls[impl.name]
    overhead = terms.pop("call_overhead_s", old.call_overhead_s)
    fitted = replace(old, forward={**forward, "causal_loops": float(CAUSAL_LOOPS)},
                     forward_source=source, call_overhead_s=overhead,
                     terms={**old.terms, **terms})
    return with_impl_calibration(hardware, impl.name, ImplCalibration(
        fitted.efficiency, fitted.source, fitted.call_overhead_s, fitted.backward,
        fitted.backward_source, fitted.terms, fitted.forward, fitted.forward_source))


def predicted_call_s(w: Workload, hardware: Hardware, impl: Implementation) -> float:
    """compare's time of one call (measured profile) on `hardware`."""
    from iosim.analysis.compare import compare

    return float(compare(w, hardware, impl=impl, profile="measured").algorithms[-1].call_time_s)


KERNEL_BOUND = 0.9
"""A call whose kernels' device times sum to at least this share of its do_bench time is
kernel-bound: its gap is the time per call (the launches between and around its kernels)."""


def call_gap_s(points: Sequence[dict[str, Any]]) -> float:
    """The time per call: the median, over kernel-bound calls, of the call's do_bench time less
    all its kernels' device times (torch.profiler)."""
    gaps = sorted(p["time_s"] - sum(k["time_s"] for k in p["kernels"]) for p in points
                  if p.get("kernels")
                  and sum(k["time_s"] for k in p["kernels"]) >= KERNEL_BOUND * p["time_s"])
    return max(0.0, gaps[len(gaps) // 2]) if gaps else 0.0


def fit_call(points: Sequence[dict[str, Any]], hardware: Hardware,
             impl: Implementation) -> dict[str, float]:
    """Step 2 (the module docstring): `call_overhead_s` measured (call_gap_s), then
    `host_floor_s` on the prefill calls' do_bench times (the kernels as compare predicts them
    with the hardware's schedule)."""
    overhead = call_gap_s(points)
    bare = with_forward(hardware, impl, _forward_of(hardware, impl), "fit",
                        host_floor_s=0.0, call_overhead_s=overhead)
    calls = [(predicted_call_s(Workload(**p["workload"]), bare, impl), p["time_s"])
             for p in points if p["workload"]["n"] > 1]

    def loss(floor: float) -> float:
        return sum(abs(math.log(max(floor, k) / t)) for k, t in calls)

    floor = float(min(CALL_GRIDS["host_floor_s"], key=lambda v: loss(float(v))))
    return {"host_floor_s": floor, "call_overhead_s": overhead}


def _forward_of(hardware: Hardware, impl: Implementation) -> dict[str, float]:
    assert hardware.measured is not None
    return dict(hardware.measured.impls[impl.name].forward)
