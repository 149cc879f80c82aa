"""Fit each implementation's efficiencies on the fit set (no GPU needed), print its calibration.

    python benchmarks/impl_fit.py tests/data/h200-impl-fit.json
    python benchmarks/impl_fit.py points.jsonl      # what `iosim measure --record` appended

For every implementation the record times, the prediction is split with every efficiency 1
(the measured profile's roofs, occupancy and DRAM estimate as usual) into its compute-bound
kernels' time by class (R_fused, R_matmul, R_elementwise) and its memory-bound kernels' time
(R_memory). The measured time T is modelled as Σ R / e. Each implementation fits one compute
efficiency (e_fused; for the eager torch-naive e_elementwise, its cuBLAS matmuls kept at the
GPU's own matmul efficiency, since the two grow together and a joint fit is not identifiable)
on the points its compute-bound kernels dominate, and one memory efficiency (the share of the
measured bandwidth reached) on the points its memory-bound kernels dominate; geometric means.
The printed `calibration:` blocks go into configs/impls/NAME.yaml; no point of
tests/data/h200-impl-validation.json is used.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from iosim.analysis.compare import compare
from iosim.inputs.hardware import resolve_hardware
from iosim.inputs.implementations import get_implementation
from iosim.inputs.workload import Workload

KINDS = ("fused", "matmul", "elementwise")


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
    not identifiable) from the points its compute-bound kernels dominate, and its memory
    efficiency (the share of the measured bandwidth) from the points its memory-bound kernels
    dominate. Geometric means; a side with no dominated point keeps 1.0."""
    eager = all(parts["fused"] == 0 for parts, _ in points)
    kind = "elementwise" if eager else "fused"
    compute_logs, memory_logs = [], []
    for parts, t in points:
        fixed = parts["matmul"] / matmul + (0.0 if eager else parts["elementwise"] / elementwise)
        if parts[kind] >= parts["memory"]:
            compute_logs.append(math.log(parts[kind] / max(t - fixed - parts["memory"],
                                                           0.05 * t)))
        elif parts["memory"] > 0:
            memory_logs.append(math.log(parts["memory"] / max(t - fixed - parts[kind],
                                                              0.05 * t)))
    out = {}
    for name, logs in ((kind, compute_logs), ("memory", memory_logs)):
        if logs:
            out[name] = round(min(math.exp(sum(logs) / len(logs)), 1.5), 4)
    return out


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


def main() -> None:
    record = load_points(Path(sys.argv[1]))
    gpu = record["device"]["name"].split()[-1].lower()
    hardware = resolve_hardware(gpu).hardware
    assert hardware.measured is not None
    elementwise = hardware.measured.kernel_efficiency.get("elementwise", 1.0)
    matmul = hardware.measured.kernel_efficiency.get("matmul", 1.0)
    for impl, points in raw_times(record, gpu).items():
        fitted = fit(points, elementwise, matmul)
        effs = ", ".join(f"{k}: {v}" for k, v in fitted.items())
        print(f"# {impl}: {len(points)} points")
        print(f"calibration:\n  {gpu}:\n    efficiency: {{{effs}}}\n    source: \"fitted by "
              f"benchmarks/impl_fit.py on {sys.argv[1]} ({len(points)} points, "
              f"{record['device']['torch']}); judged on tests/data/h200-impl-validation.json\"")


if __name__ == "__main__":
    main()
