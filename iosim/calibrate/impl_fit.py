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
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

from iosim.analysis.compare import compare
from iosim.calibrate import CalibrationError
from iosim.errors import IosimError
from iosim.inputs.hardware import Hardware, ImplCalibration
from iosim.inputs.impl_calibration import with_impl_calibration
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.limits import excerpt
from iosim.inputs.workload import Workload

KINDS = ("fused", "matmul", "elementwise")
READ_ONLY = 1.05
"""The H200's read-only Triton stream over its copy bandwidth, 4486 / 4272 GB/s
(configs/gpus/h200.yaml measured.hbm_bandwidth's source): a read-mostly kernel reads at most
this much faster than a copy moves."""


def raw_times(record: dict[str, Any], hardware: Hardware
              ) -> dict[str, list[tuple[dict[str, float], float]]]:
    """Per implementation: ({kind: compute seconds at efficiency 1, "memory": the memory-bound
    kernels' seconds at the full measured bandwidth}, measured seconds) per point."""
    out: dict[str, list[tuple[dict[str, float], float]]] = {}
    unit = ImplCalibration({**dict.fromkeys(KINDS, 1.0), "memory": 1.0}, "unit efficiencies")
    for p in record["points"]:
        if "time_s" not in p:
            continue
        impl = get_implementation(p["impl"])
        trial = with_impl_calibration(hardware, impl.name, unit)
        est = compare(Workload(**p["workload"]), trial, impl=impl, profile="measured"
                      ).algorithms[-1]
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
    """A record of `iosim calibrate --impl` (or benchmarks/impl_validation_h200.py), or the JSON
    Lines `iosim measure --record FILE` appends (one measured point a line), as one record;
    checked point by point (CalibrationError, one line, naming the point)."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
            if not lines or not all(isinstance(p, dict) for p in lines):
                raise CalibrationError(f"{path} holds no measured points (one JSON object a "
                                       f"line, as `iosim measure --record` appends)")
            record: Any = {"device": {"name": lines[0].get("gpu", "unknown"),
                                      "torch": "see each point"},
                           "points": [{"impl": p.get("impl"), "workload": p.get("workload"),
                                       "time_s": p.get("measured_time_s")} for p in lines]}
        else:
            record = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"{path} is not a readable JSON record ({excerpt(str(exc), 80)})"
                               f"; give a record of `iosim calibrate --impl` or `iosim measure "
                               f"--record`") from None
    if not isinstance(record, dict) or not isinstance(record.get("points"), list):
        raise CalibrationError(f"{path} is not an implementation record (no list of points); "
                               f"give a record of `iosim calibrate --impl` or `iosim measure "
                               f"--record`")
    if not isinstance(record.get("device"), dict):
        record["device"] = {"name": "unknown", "torch": "unknown"}
    for i, p in enumerate(record["points"]):
        _check_point(path, i, p)
    return dict(record)


def _check_point(path: Path, i: int, p: Any) -> None:
    where = f"{path} point {i}"
    if not isinstance(p, dict) or not isinstance(p.get("impl"), str):
        raise CalibrationError(f"{where}: expected an object with an implementation name")
    if "refused" in p and "time_s" not in p:
        return
    t = p.get("time_s")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < 60:
        raise CalibrationError(f"{where} ({p['impl']}): time_s must be seconds in (0, 60), got "
                               f"{excerpt(t)}")
    w = p.get("workload")
    if not isinstance(w, dict) or set(w) - set(WORKLOAD_FIELDS) or "n" not in w:
        raise CalibrationError(f"{where} ({p['impl']}): workload must be an object of "
                               f"{', '.join(WORKLOAD_FIELDS)}")
    try:
        Workload(**w)
    except (IosimError, TypeError) as exc:
        raise CalibrationError(f"{where} ({p['impl']}): {excerpt(str(exc), 120)}") from None


WORKLOAD_FIELDS = ("n", "n_kv", "d", "heads", "kv_heads", "batch", "dtype", "causal")
"""The Workload fields a recorded point carries (impl_run.py:workload_record)."""


def fit_record(record: dict[str, Any], hardware: Hardware,
               names: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per implementation the record times (those of `names` only, when given): its fitted
    efficiencies, host time per call, point count and the median absolute time error of
    compare with that fit on those same points (in-sample), against the GPU's own fitted
    matmul and elementwise efficiencies."""
    assert hardware.measured is not None
    elementwise = hardware.measured.kernel_efficiency.get("elementwise", 1.0)
    matmul = hardware.measured.kernel_efficiency.get("matmul", 1.0)
    out: dict[str, dict[str, Any]] = {}
    chosen = {**record, "points": [p for p in record["points"]
                                   if names is None or p["impl"] in names]}
    for impl, points in raw_times(chosen, hardware).items():
        fitted: dict[str, Any] = fit(points, elementwise, matmul)
        overhead = fitted.pop("call_overhead_s")
        entry = ImplCalibration(dict(fitted), "trial", overhead)
        trial = with_impl_calibration(hardware, impl, entry)
        errors = []
        for p in chosen["points"]:
            if p["impl"] == impl and "time_s" in p:
                a = compare(Workload(**p["workload"]), trial, impl=impl,
                            profile="measured").algorithms[-1]
                errors.append(abs(a.time_s + a.call_overhead_s - p["time_s"]) / p["time_s"])
        out[impl] = {"efficiency": fitted, "call_overhead_s": overhead, "points": len(points),
                     "median_error": median(errors)}
    return out
