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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from iosim.analysis.compare import compare
from iosim.analysis.impl_kernels import head_dim_bucket
from iosim.estimates.occupancy import lone_program_time
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.implementations_yaml import KERNEL_MEMORY_KEYS, get_implementation
from iosim.inputs.workload import Workload

KINDS = ("fused", "matmul", "elementwise")
READ_ONLY = 1.05
"""The H200's read-only Triton stream over its copy bandwidth, 4486 / 4272 GB/s
(configs/gpus/h200.yaml measured.hbm_bandwidth's source): a read-mostly kernel reads at most
this much faster than a copy moves."""


COMPUTE_KEYS = {"compute_d64": "fused_d64", "compute_d128": "fused_d128",
                "compute_d256": "fused_d256", "compute_split": "fused_split",
                "compute": "elementwise"}
"""The fitted compute efficiencies and the calibration keys they are written to: a fused
implementation's main kernel by head-dim bucket and its split-KV pass; an eager pipeline's
elementwise kernels."""


@dataclass(frozen=True)
class Pieces:
    """One measured point's prediction at unit efficiencies, kernel by kernel (arrays), what
    `predict` turns into a call's time for any parameters without running compare again."""

    memory_key: np.ndarray
    """The fitted memory efficiency each kernel uses ("memory", or an eager kernel's own)."""
    memory_s: np.ndarray
    """Each kernel's memory roof time (its DRAM estimate over the measured bandwidth), ÷ u
    unless the per-program bandwidth limit times it (occupancy.py:lone_program_time)."""
    compute_s: np.ndarray
    """Each kernel's compute roof time ÷ u, at efficiency 1 for a fitted kind, at the GPU's
    own fitted efficiency for the others."""
    key: np.ndarray
    """The fitted compute efficiency each kernel uses (COMPUTE_KEYS; "" for none)."""
    alone: np.ndarray
    """Compute-bound with at most one program per SM (the solo rate applies)."""
    floor_s: np.ndarray
    """A memory-bound grid's per-program floor at its program bandwidth (0 elsewhere)."""
    decode: bool
    measured_s: float


def _key(kernel: str, kind: str, eager: bool, d: int) -> str:
    if eager:
        return ""  # its kernels' compute at the GPU's own efficiencies; their memory is fitted
    if kind != "fused":
        return ""
    return "compute_split" if kernel == "splitkv_attn" else f"compute_d{head_dim_bucket(d)}"


def _pieces(w: Workload, impl: Implementation, hardware: Hardware, measured_s: float,
            program_bandwidth: float | None) -> Pieces:
    eager = impl.runs == "eager"
    kind = "elementwise" if eager else "fused"
    unit = replace(impl, calibration={hardware.name: {kind: 1.0, "memory": 1.0}})
    est = compare(w, hardware, impl=unit, profile="measured").algorithms[-1]
    assert hardware.measured is not None
    gpu_eff = hardware.measured.kernel_efficiency
    grids = {o.kernel: o for o in est.occupancy}
    rows = []
    for k in est.kernels:
        u = k.utilisation or 1.0
        key = _key(k.name, k.kind, eager, w.d)
        eff = 1.0 if key else gpu_eff.get(k.kind, 1.0)
        grid = grids.get(k.name)
        bound = "memory" if k.memory_time_s >= k.compute_time_s else "compute"
        floor, alone, memory = 0.0, False, k.memory_time_s / u
        if grid is not None and grid.programs and hardware.sm_count:
            alone = bound == "compute" and grid.programs <= hardware.sm_count
            if bound == "memory" and program_bandwidth:
                floor = lone_program_time(0.0, "memory", grid.programs, grid.per_sm,
                                          hardware.sm_count, float(k.roof_bytes), None,
                                          program_bandwidth)
                memory = k.memory_time_s
        own_memory = f"memory_{k.name}"
        rows.append((own_memory if eager and own_memory in KERNEL_MEMORY_KEYS else "memory",
                     memory, k.compute_time_s / eff / u, key, alone, floor))
    cols = list(zip(*rows, strict=True))
    return Pieces(np.array(cols[0]), np.array(cols[1]), np.array(cols[2]), np.array(cols[3]),
                  np.array(cols[4], dtype=bool), np.array(cols[5]), w.n == 1, measured_s)


def predict(p: Pieces, params: dict[str, float]) -> float:
    """One call's time under `params` (the COMPUTE_KEYS efficiencies, "memory", "solo_rate",
    "call_overhead_s", "host_floor_s", "decode_host_floor_s"): compare's rule, kernel by
    kernel (estimates/roofline.py, occupancy.py:lone_program_time) and per call
    (analysis/comparison.py:call_time_s)."""
    compute = p.compute_s.copy()
    for key in set(p.key.tolist()) - {""}:
        at = p.key == key
        compute[at] = compute[at] / params[key]
    memory = p.memory_s.copy()
    for key in set(p.memory_key.tolist()):
        at = p.memory_key == key
        memory[at] = memory[at] / params[key]
    t = np.maximum(memory, compute)
    t = np.where(p.alone, t / params["solo_rate"], t)
    t = np.maximum(t, p.floor_s)
    floor = params["decode_host_floor_s"] if p.decode else params["host_floor_s"]
    return max(floor, float(t.sum()) + params["call_overhead_s"])


EFFICIENCY_GRID = np.round(np.arange(0.15, 1.501, 0.01), 3)
GRIDS = {
    **dict.fromkeys(COMPUTE_KEYS, EFFICIENCY_GRID),
    **dict.fromkeys(("memory", *KERNEL_MEMORY_KEYS),
                    np.round(np.arange(0.10, READ_ONLY + 1e-9, 0.01), 3)),
    "solo_rate": np.round(np.arange(0.30, 1.001, 0.01), 3),
    "call_overhead_s": np.arange(0.0, 60.1e-6, 0.5e-6),
    "host_floor_s": np.arange(0.0, 300.1e-6, 1e-6),
    "decode_host_floor_s": np.arange(0.0, 300.1e-6, 1e-6),
}
"""Where each parameter is searched (coordinate descent, from START)."""
START = {**dict.fromkeys(COMPUTE_KEYS, 0.6), **dict.fromkeys(("memory", *KERNEL_MEMORY_KEYS),
                                                              0.9), "solo_rate": 1.0,
         "call_overhead_s": 0.0, "host_floor_s": 0.0, "decode_host_floor_s": 0.0}


def fit(points: list[Pieces], *, sweeps: int = 4) -> dict[str, float]:
    """The parameters that minimise the summed absolute log error of the predicted call time
    over the points (robust to a few outlying calls): coordinate descent over GRIDS, `sweeps`
    rounds. A parameter no point depends on (no kernel of that efficiency, no memory-bound
    kernel, no lone grid, no decode point) is left out."""
    params = dict(START)
    keys = {k for p in points for k in p.key.tolist()} - {""}
    uses = {**{k: k in keys for k in COMPUTE_KEYS},
            **{k: any(bool((p.memory_s[p.memory_key == k] > 0).any()) for p in points)
               for k in ("memory", *KERNEL_MEMORY_KEYS)},
            "solo_rate": any(bool(p.alone.any()) for p in points),
            "decode_host_floor_s": any(p.decode for p in points),
            "host_floor_s": any(not p.decode for p in points), "call_overhead_s": True}

    def loss(trial: dict[str, float]) -> float:
        return sum(abs(math.log(predict(p, trial) / p.measured_s)) for p in points)

    for _ in range(sweeps):
        for name, grid in GRIDS.items():
            if not uses[name]:
                continue
            params[name] = float(min(grid, key=lambda v: loss({**params, name: float(v)})))
    return {k: v for k, v in params.items() if uses[k]}


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


def fit_record(record: dict[str, Any], hardware: Hardware,
               program_bandwidth: dict[str, float] | None = None) -> dict[str, dict[str, Any]]:
    """Per implementation the record times: its fitted parameters (efficiencies, solo rate,
    time per call, host-bound floors) and point count. `program_bandwidth` (bytes/s per
    program, by implementation) is a measured input, not fitted (sm_bandwidth_h200.py)."""
    pieces: dict[str, list[Pieces]] = {}
    for p in record["points"]:
        if "time_s" not in p:
            continue
        impl = get_implementation(p["impl"])
        bandwidth = (program_bandwidth or {}).get(p["impl"])
        pieces.setdefault(p["impl"], []).append(
            _pieces(Workload(**p["workload"]), impl, hardware, p["time_s"], bandwidth))
    out: dict[str, dict[str, Any]] = {}
    for name, points in pieces.items():
        fitted = fit(points)
        efficiency = {COMPUTE_KEYS[k]: fitted.pop(k) for k in list(fitted) if k in COMPUTE_KEYS}
        by_dim = sorted(v for k, v in efficiency.items() if k.startswith("fused_d"))
        if by_dim:  # a head dim the fit set lacks runs at the median of those it has
            efficiency = {"fused": by_dim[len(by_dim) // 2], **efficiency}
        for key in ("memory", *KERNEL_MEMORY_KEYS):
            if key in fitted:
                efficiency[key] = fitted.pop(key)
        out[name] = {"efficiency": efficiency, **fitted, "points": len(points)}
    return out


PROGRAM_WARPS = {"sdpa-flash": 4}
"""Warps of the implementation's memory-bound grid kernels (FA2's split-KV pass and combine:
128 threads, tests/data/h200-impl-launches-rw.csv), whose lone-program bandwidth the stream
probe measured; implementations not listed get no per-program limit."""


def program_bandwidth(probe: dict[str, Any]) -> dict[str, float]:
    """Bytes/s one program of each PROGRAM_WARPS implementation streams alone: the median, over
    the probe's grids of at most half the SMs (each program an SM to itself, the DRAM far from
    busy), of its per-program rate at that warp count and the probe's widest load step
    (benchmarks/sm_bandwidth_h200.py, tests/data/h200-sm-bandwidth.json)."""
    out = {}
    widest = max(r["block"] for r in probe["rows"])
    for impl, warps in PROGRAM_WARPS.items():
        rates = sorted(r["gb_per_s_per_program"] * 1e9 for r in probe["rows"]
                       if r["warps"] == warps and r["block"] == widest
                       and r["programs"] <= probe["sm_count"] // 2)
        out[impl] = round(rates[len(rates) // 2], -7)
    return out


def merged_records(paths: list[Path]) -> dict[str, Any]:
    """Several records as one (their points together; the first's device)."""
    records = [load_points(p) for p in paths]
    return {"device": records[0]["device"],
            "points": [pt for r in records for pt in r["points"]]}
