"""Fit each implementation's efficiencies and host time per call from measured points (pure:
no torch, no GPU), the fit `iosim calibrate --impl` runs.

For every implementation the record times, the prediction is split with every efficiency 1
(the measured profile's roofs, occupancy and DRAM estimate as usual) into its compute-bound
kernels' time by class (R_fused, R_matmul, R_elementwise) and its memory-bound kernels' time
(R_memory). The measured time T is modelled as Σ R / e. Each implementation fits one compute
efficiency (e_fused; for the eager torch-naive e_elementwise, its cuBLAS matmuls kept at the
GPU's own matmul efficiency, since the two grow together and a joint fit is not identifiable)
on the points its compute-bound kernels dominate, and one memory efficiency (the share of the
measured bandwidth reached) on the points its memory-bound kernels dominate; geometric means.
No point of tests/data/h200-impl-validation.json is used by the shipped fit (its fit set is
tests/data/h200-impl-fit.json).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from iosim.analysis.compare import compare
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

KINDS = ("fused", "matmul", "elementwise")
READ_ONLY = 1.05
"""The H200's read-only Triton stream over its copy bandwidth, 4486 / 4272 GB/s
(configs/gpus/h200.yaml measured.hbm_bandwidth's source): a read-mostly kernel reads at most
this much faster than a copy moves."""


def raw_times(record: dict[str, Any], gpu: str) -> dict[str, list[tuple[dict[str, float], float]]]:
    """Per implementation: ({kind: compute seconds at efficiency 1, "memory": the memory-bound
    kernels' seconds at the full measured bandwidth}, measured seconds) per point."""
    out: dict[str, list[tuple[dict[str, float], float]]] = {}
    for p in record["points"]:
        if "time_s" not in p:
            continue
        impl = get_implementation(p["impl"])
        unit = replace(impl, calibration={gpu: {**dict.fromkeys(KINDS, 1.0), "memory": 1.0}})
        est = compare(Workload(**p["workload"]), gpu, impl=unit, profile="measured").algorithms[-1]
        parts = dict.fromkeys((*KINDS, "memory"), 0.0)
        for k in est.kernels:
            parts["memory" if k.bound == "memory" else k.kind] += k.time_s
        out.setdefault(p["impl"], []).append((parts, p["time_s"]))
    return out


def fit(points: list[tuple[dict[str, float], float]], elementwise: float,
        matmul: float) -> dict[str, float]:
    """The implementation's compute efficiency (e_fused, or for an eager pipeline
    e_elementwise, with cuBLAS's matmuls at the GPU's fitted matmul efficiency: a joint fit is
    not identifiable) from the points its compute-bound kernels dominate, its memory
    efficiency (the share of the measured bandwidth) from the points its memory-bound kernels
    dominate — geometric means over T − t0 — and the host time per call t0 that minimises the
    median absolute relative error over every point (searched on a 0.5 µs grid up to half the
    shortest measured call). The memory efficiency is capped at READ_ONLY and the compute
    efficiency at 1.5. A side with no dominated point is left out."""
    eager = all(parts["fused"] == 0 for parts, _ in points)
    kind = "elementwise" if eager else "fused"

    def efficiencies(t0: float) -> dict[str, float]:
        compute_logs, memory_logs = [], []
        for parts, t in points:
            fixed = parts["matmul"] / matmul + (0.0 if eager else
                                                parts["elementwise"] / elementwise)
            left = t - t0 - fixed
            if parts[kind] >= parts["memory"]:
                compute_logs.append(math.log(parts[kind] / max(left - parts["memory"], 0.05 * t)))
            elif parts["memory"] > 0:
                memory_logs.append(math.log(parts["memory"] / max(left - parts[kind], 0.05 * t)))
        out = {}
        for name, logs, cap in ((kind, compute_logs, 1.5), ("memory", memory_logs, READ_ONLY)):
            if logs:
                out[name] = min(math.exp(sum(logs) / len(logs)), cap)
        return out

    def error(t0: float, eff: dict[str, float]) -> float:
        errs = []
        for parts, t in points:
            fixed = parts["matmul"] / matmul + (0.0 if eager else
                                                parts["elementwise"] / elementwise)
            pred = (t0 + fixed + parts[kind] / eff.get(kind, 1.0)
                    + parts["memory"] / eff.get("memory", 1.0))
            errs.append(abs(pred - t) / t)
        return sorted(errs)[len(errs) // 2]

    shortest = min(t for _, t in points)
    candidates = [i * 0.5e-6 for i in range(int(0.5 * shortest / 0.5e-6))]
    best = min(candidates, key=lambda t0: error(t0, efficiencies(t0)))
    out = {k: round(v, 4) for k, v in efficiencies(best).items()}
    return {**out, "call_overhead_s": round(best, 7)}


def load_points(path: Path) -> dict[str, Any]:
    """A record of benchmarks/impl_validation_h200.py, or the JSON Lines `iosim measure
    --record FILE` appends (one measured point a line), as one record."""
    if path.suffix != ".jsonl":
        return dict(json.loads(path.read_text()))
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not lines:
        raise SystemExit(f"{path} holds no points")
    return {"device": {"name": lines[0]["gpu"], "torch": "see each point"},
            "points": [{"impl": p["impl"], "workload": p["workload"],
                        "time_s": p["measured_time_s"]} for p in lines]}


def fit_record(record: dict[str, Any], hardware: Hardware) -> dict[str, dict[str, Any]]:
    """Per implementation the record times: its fitted efficiencies, host time per call and
    point count, against the GPU's own fitted matmul and elementwise efficiencies."""
    assert hardware.measured is not None
    elementwise = hardware.measured.kernel_efficiency.get("elementwise", 1.0)
    matmul = hardware.measured.kernel_efficiency.get("matmul", 1.0)
    out: dict[str, dict[str, Any]] = {}
    for impl, points in raw_times(record, hardware.name).items():
        fitted: dict[str, Any] = fit(points, elementwise, matmul)
        overhead = fitted.pop("call_overhead_s")
        out[impl] = {"efficiency": fitted, "call_overhead_s": overhead, "points": len(points)}
    return out
