"""Fit each implementation's time terms from measured points (pure: no torch, no GPU), the fit
`iosim calibrate --impl` runs and benchmarks/impl_fit.py prints.

For every point the record times, compare runs once at unit efficiencies (the measured
profile's roofs, occupancy and DRAM estimate as usual) and keeps each kernel's memory and
compute roof time (÷ its waves' utilisation), whether it is a lone grid (at most one program
per SM) and its per-program DRAM floor (`Pieces`). `predict` then gives the call's time for any
parameters exactly as compare does (estimates/roofline.py, occupancy.py:lone_program_time,
comparison.py:call_time_s), and `fit` searches them (coordinate descent over GRIDS) for the
least summed absolute log error: the fused efficiency per head-dim bucket and of the split-KV
pass, the memory efficiency (an eager pipeline's gather, scale, mask and softmax kernels their
own), the solo rate, the time per call and the host-bound floors of prefill and decode. The
per-program bandwidth is a measured input (PROGRAM_WARPS, the stream probe), not fitted; FA2's
combine kernel's figures are fitted first, on its own measured device times (combine_fit.py).
The shipped fit used tests/data/h200-impl-fit.json, h200-impl-fit2.json,
h200-impl-validation.json, h200-impl-validation2.json and h200-impl-calibrate.json (all fit
data); it is judged on h200-impl-validation3.json (issue 11 round 4).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from iosim.analysis.compare import compare
from iosim.analysis.impl_kernels import head_dim_bucket
from iosim.analysis.stream_k import RULE as STREAM_K
from iosim.calibrate import CalibrationError
from iosim.calibrate.combine_fit import combine_points, fit_combine, hardware_bandwidth
from iosim.calibrate.eager_kernel_fit import ELEMENTWISE, kernel_efficiencies, matched_times
from iosim.calibrate.records import finite_json, record_text
from iosim.errors import IosimError
from iosim.estimates.combine import KERNEL as COMBINE_KERNEL
from iosim.estimates.combine import combine_time_s
from iosim.estimates.eager_mask_fill import fill_is_contiguous
from iosim.estimates.eager_softmax import softmax_kernel
from iosim.estimates.lone_prologue import prologue_bytes
from iosim.estimates.occupancy import lone_program_time
from iosim.inputs.excerpts import clip, excerpt
from iosim.inputs.hardware import Hardware, ImplCalibration
from iosim.inputs.impl_calibration import KERNEL_MEMORY_KEYS, with_impl_calibration
from iosim.inputs.implementations import Implementation
from iosim.inputs.implementations_yaml import get_implementation, shipped_implementations
from iosim.inputs.limits import MAX_RECORDED_CALL_S
from iosim.inputs.workload import Workload
from iosim.record import Record, field

KINDS = ("fused", "matmul", "elementwise")
SPLIT_KERNEL = "splitkv_attn"
"""The split-KV loop nest's attention kernel (algorithms/splitkv.py)."""
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


class Pieces(Record, eq=False):
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
    one: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """A lone grid whose busy grids hold one program per SM too (estimates/lone_prologue.py:
    solo_rate_one applies), for the LONE_IMPLS only; empty: none."""
    prologue_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """A lone fused forward grid's prologue bytes per program (lone_prologue.py), LONE_IMPLS
    only; empty: none."""
    kernel_rows: tuple[tuple[str, float, float], ...] = ()
    """An eager pipeline's elementwise kernels: (memory efficiency key, memory roof time at full
    bandwidth, its launches' measured device time), for calibrate/eager_kernel_fit.py."""


def _key(kernel: str, kind: str, eager: bool, d: int, stream_k: bool = False) -> str:
    if eager:
        return ""  # its kernels' compute at the GPU's own efficiencies; their memory is fitted
    if kind != "fused":
        return ""
    # cuDNN's lean decode runs the unsplit decode step's kernel (one name in the records)
    split = kernel == SPLIT_KERNEL and not stream_k
    return "compute_split" if split else f"compute_d{head_dim_bucket(d)}"


def _memory_key(kernel: str, w: Workload) -> str:
    """An eager kernel's own memory efficiency key; torch's softmax's by the kernel it picks, the
    causal fill's by its class (estimates/eager_mask_fill.py)."""
    if kernel == "softmax":
        return f"memory_softmax_{softmax_kernel(w.n_kv, w.element_bytes)}"
    if kernel == "mask" and w.pass_ == "fwd" and fill_is_contiguous(w):
        return "memory_mask_contiguous"
    return f"memory_{kernel}"


def _pieces(w: Workload, impl: Implementation, hardware: Hardware, measured_s: float,
            program_bandwidth: float | None,
            combine: dict[str, float] | None = None,
            launches: Sequence[dict[str, Any]] = ()) -> Pieces:
    eager = impl.runs == "eager"
    kind = "elementwise" if eager else "fused"
    unit = with_impl_calibration(hardware, impl.name, ImplCalibration(
        {kind: 1.0, "memory": 1.0}, "unit efficiencies"))
    est = compare(w, unit, impl=impl, profile="measured").algorithms[-1]
    assert hardware.measured is not None
    gpu_eff = hardware.measured.kernel_efficiency
    grids = {o.kernel: o for o in est.occupancy}
    rows = []
    measured = (matched_times([k.name for k in est.kernels], launches)
                if eager and w.pass_ == "fwd" else {})
    kernel_rows = []
    for k in est.kernels:
        u = k.utilisation or 1.0
        key = _key(k.name, k.kind, eager, w.d, impl.split_kv.rule == STREAM_K)
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
        if k.name == COMBINE_KERNEL and combine and hardware.sm_count:
            # FA2's combine at its own fitted model (estimates/combine.py, combine_fit.py)
            floor = combine_time_s(w, float(k.traffic.read_bytes + k.traffic.write_bytes),
                                   hardware.sm_count, hardware_bandwidth(hardware), combine)
        own_memory = _memory_key(k.name, w)
        # an eager pipeline's kernels and cuDNN's lean decode kernel have their own
        own = own_memory in KERNEL_MEMORY_KEYS and (
            eager or (k.name == SPLIT_KERNEL and impl.split_kv.rule == STREAM_K))
        memory_key = own_memory if own else "memory"
        if k.name in ELEMENTWISE and k.name in measured:
            kernel_rows.append((memory_key, memory, measured[k.name]))
        lone = alone and impl.name in LONE_IMPLS
        one = lone and grid is not None and grid.per_sm == 1
        prologue = (prologue_bytes(est.tiling.block_q, est.tiling.block_kv, w.d, w.element_bytes)
                    if lone and k.kind == "fused" and est.tiling is not None else 0)
        rows.append((memory_key, memory, k.compute_time_s / eff / u, key, alone, floor, one,
                     prologue))
    cols = list(zip(*rows, strict=True))
    return Pieces(np.array(cols[0]), np.array(cols[1]), np.array(cols[2]), np.array(cols[3]),
                  np.array(cols[4], dtype=bool), np.array(cols[5]), w.n == 1, measured_s,
                  np.array(cols[6], dtype=bool), np.array(cols[7], dtype=np.float64),
                  tuple(kernel_rows))


LONE_IMPLS = ("iosim-triton",)
"""Implementations whose lone grids are fitted with estimates/lone_prologue.py's two terms: the
one whose forward tiles, warps and registers are declared from its source and measured
(configs/impls/iosim-triton.yaml), so its programs per SM are known; the others keep one solo
rate for every c (their fits unchanged)."""


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
    # estimates/lone_prologue.py's terms where given (lone_rate: solo_rate without them)
    one = params.get("solo_rate_one")
    rate = (np.where(p.one, one, params["solo_rate"]) if one is not None and p.one.size
            else np.full(t.shape, params["solo_rate"]))
    t = np.where(p.alone, t / rate, t)
    bandwidth = params.get("lone_prologue_bandwidth")
    if bandwidth is not None and p.prologue_bytes.size:
        t = t + p.prologue_bytes / bandwidth
    t = np.maximum(t, p.floor_s)
    floor = params["decode_host_floor_s"] if p.decode else params["host_floor_s"]
    return max(floor, float(t.sum()) + params["call_overhead_s"])


EFFICIENCY_GRID = np.round(np.arange(0.15, 1.501, 0.01), 3)
GRIDS = {
    **dict.fromkeys(COMPUTE_KEYS, EFFICIENCY_GRID),
    **dict.fromkeys(("memory", *KERNEL_MEMORY_KEYS),
                    np.round(np.arange(0.10, READ_ONLY + 1e-9, 0.01), 3)),
    "solo_rate": np.round(np.arange(0.30, 1.001, 0.01), 3),
    "solo_rate_one": np.round(np.arange(0.70, 1.301, 0.005), 3),
    "lone_prologue_bandwidth": np.arange(4e9, 80.1e9, 0.5e9),
    "call_overhead_s": np.arange(0.0, 60.1e-6, 0.5e-6),
    "host_floor_s": np.arange(0.0, 300.1e-6, 1e-6),
    "decode_host_floor_s": np.arange(0.0, 300.1e-6, 1e-6),
}
"""Where each parameter is searched (coordinate descent, from START)."""
LONE_START = {"solo_rate_one": 1.0, "lone_prologue_bandwidth": 32e9}
"""Where `fit(lone=True)` starts estimates/lone_prologue.py's two terms (calibrate/lone_fit.py,
which fits them on kernel device times); a call-time fit never searches them, only holds them."""
START = {**dict.fromkeys(COMPUTE_KEYS, 0.6), **dict.fromkeys(("memory", *KERNEL_MEMORY_KEYS),
                                                              0.9), "solo_rate": 1.0,
         "call_overhead_s": 0.0, "host_floor_s": 0.0, "decode_host_floor_s": 0.0}


def fit(points: list[Pieces], *, sweeps: int = 4, held: dict[str, float] | None = None,
        lone: bool = False) -> dict[str, float]:
    """The parameters that minimise the summed absolute log error of the predicted call time
    over the points (robust to a few outlying calls): coordinate descent over GRIDS, `sweeps`
    rounds, those in `held` kept at their value (fitted elsewhere: eager_kernel_fit.py; or an
    earlier fit's figures, a new term fitted with them unchanged: fit_record's `hold`). A
    parameter no point depends on (no kernel of that efficiency, no memory-bound kernel, no
    lone grid, no decode point) is left out. `lone`: search estimates/lone_prologue.py's two
    terms too (calibrate/lone_fit.py); otherwise they are only held where given, so that a
    call-time fit's other figures are what they were before round triton13."""
    held = held or {}
    params = {**START, **(LONE_START if lone else {}), **held}
    keys = {k for p in points for k in p.key.tolist()} - {""}
    uses = {**{k: k in keys for k in COMPUTE_KEYS},
            **{k: any(bool((p.memory_s[p.memory_key == k] > 0).any()) for p in points)
               for k in ("memory", *KERNEL_MEMORY_KEYS)},
            "solo_rate": any(bool(p.alone.any()) for p in points),
            "solo_rate_one": "solo_rate_one" in params and any(bool(p.one.any())
                                                                for p in points),
            "lone_prologue_bandwidth": "lone_prologue_bandwidth" in params and any(
                bool(p.prologue_bytes.any()) for p in points),
            "decode_host_floor_s": any(p.decode for p in points),
            "host_floor_s": any(not p.decode for p in points), "call_overhead_s": True}

    def loss(trial: dict[str, float]) -> float:
        return sum(abs(math.log(predict(p, trial) / p.measured_s)) for p in points)

    for _ in range(sweeps):
        for name, grid in GRIDS.items():
            if not uses[name] or name in held:
                continue
            params[name] = float(min(grid, key=lambda v: loss({**params, name: float(v)})))
    return {k: v for k, v in params.items() if uses[k]}


def load_points(path: Path) -> dict[str, Any]:
    """A record of `iosim calibrate --impl` (or benchmarks/impl_validation_h200.py), or the JSON
    Lines `iosim measure --record FILE` appends (one measured point a line), as one record;
    checked point by point (CalibrationError, one line, naming the point)."""
    from iosim.calibrate.measure_record import read_points

    parse = finite_json(path)
    # a measure record, whatever its name ends with, checked as roofline checks it (each bad
    # line named by its number: a .jsonl with a line cut short was "line 1 column 696")
    measured = read_points(path)
    text = record_text(path, "an implementation record", "a few hundred KiB")
    try:
        if measured is not None:
            record: Any = {"device": {"name": measured[0]["gpu"], "torch": "see each point"},
                           "points": [{"impl": p["impl"], "workload": p["workload"],
                                       "time_s": p["measured_time_s"],
                                       **({"rel_error": p["rel_error"]} if "rel_error" in p
                                          else {})} for p in measured]}
        else:
            record = parse(text)
    except RecursionError:
        raise CalibrationError(f"{path}: nested too deeply to be an implementation record"
                               ) from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{path} is not a readable JSON record ({clip(str(exc), 80)})"
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
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < MAX_RECORDED_CALL_S:
        raise CalibrationError(f"{where} ({p['impl']}): time_s must be seconds in (0, "
                               f"{MAX_RECORDED_CALL_S:g}), got {excerpt(t)}")
    w = p.get("workload")
    if not isinstance(w, dict) or set(w) - set(WORKLOAD_FIELDS) or "n" not in w:
        raise CalibrationError(f"{where} ({p['impl']}): workload must be an object of "
                               f"{', '.join(WORKLOAD_FIELDS)}")
    try:
        workload = Workload(**w)
        if p["impl"] in shipped_implementations():  # a shape it does not run, named here
            get_implementation(p["impl"]).check_shape(
                workload.d, workload.dtype, gqa=workload.group_size > 1,
                backward=workload.pass_ != "fwd")
    except (IosimError, TypeError) as exc:
        raise CalibrationError(f"{where} ({p['impl']}): {clip(str(exc), 120)}") from None
    _check_rel_error(where, p, workload.dtype)


def _check_rel_error(where: str, p: dict[str, Any], dtype: str) -> None:
    """A timed point's correctness check, where recorded, within the tolerance the run holds
    it to (measure.TOLERANCE): a point over it computed wrongly, and its time fitted as an
    efficiency would be a wrong kernel's (hostile9 leftover 3)."""
    from iosim.calibrate.measure import TOLERANCE  # torch is imported there only when run

    if "rel_error" not in p:
        return
    err, tolerance = p["rel_error"], TOLERANCE[dtype]
    if isinstance(err, bool) or not isinstance(err, (int, float)) or not 0 <= err <= tolerance:
        raise CalibrationError(f"{where} ({p['impl']}): rel_error must be the run's check, a "
                               f"number from 0 to the {tolerance:g} a {dtype} point must meet "
                               f"before it is timed, got {excerpt(err)}; a point over it "
                               f"computed wrongly: drop it or measure it again")


WORKLOAD_FIELDS = ("n", "n_kv", "d", "heads", "kv_heads", "batch", "dtype", "causal")
"""The Workload fields a recorded point carries (impl_run.py:workload_record)."""


def fit_record(record: dict[str, Any], hardware: Hardware,
               names: Sequence[str] | None = None,
               program_bandwidth: dict[str, float] | None = None,
               hold: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, Any]]:
    """Per implementation the record times (those of `names` only, when given): its fitted
    efficiencies (`efficiency`), time per call (`call_overhead_s`), time terms (`terms`:
    solo_rate, host_floor_s, decode_host_floor_s, and the given program_bandwidth), point count
    and the median absolute error of `predict` with that fit on those same points
    (in-sample). `program_bandwidth` (bytes/s per program, by implementation) is a measured
    input (PROGRAM_WARPS), not fitted. `hold` (fit parameters by implementation, e.g.
    `held_parameters` of its current calibration) keeps those at their values."""
    pieces: dict[str, list[Pieces]] = {}
    combines: dict[str, dict[str, float]] = {}
    for p in record["points"]:
        if "time_s" not in p or (names is not None and p["impl"] not in names):
            continue
        if p["impl"] not in combines:  # its combine kernel's figures first (combine_fit.py)
            combines[p["impl"]] = fit_combine(
                combine_points(record["points"], hardware, p["impl"]), hardware)
        impl = get_implementation(p["impl"])
        bandwidth = (program_bandwidth or {}).get(p["impl"])
        pieces.setdefault(p["impl"], []).append(
            _pieces(Workload(**p["workload"]), impl, hardware, p["time_s"], bandwidth,
                    combines[p["impl"]], p.get("kernels", ())))
    out: dict[str, dict[str, Any]] = {}
    for name, points in pieces.items():
        held = {**kernel_efficiencies([row for p in points for row in p.kernel_rows]),
                **(hold or {}).get(name, {})}
        fitted = fit(points, held=held)
        errors = [abs(predict(p, {**START, **fitted}) / p.measured_s - 1) for p in points]
        efficiency = {COMPUTE_KEYS[k]: fitted.pop(k) for k in list(fitted) if k in COMPUTE_KEYS}
        by_dim = sorted(v for k, v in efficiency.items() if k.startswith("fused_d"))
        if by_dim:  # a head dim the fit set lacks runs at the median of those it has
            efficiency = {"fused": by_dim[len(by_dim) // 2], **efficiency}
        for key in ("memory", *KERNEL_MEMORY_KEYS):
            if key in fitted:
                efficiency[key] = fitted.pop(key)
        overhead = fitted.pop("call_overhead_s")
        terms = {k: v for k, v in fitted.items() if v}  # 0: no such term
        bandwidth = (program_bandwidth or {}).get(name)
        if bandwidth:
            terms["program_bandwidth"] = bandwidth
        terms.update(combines.get(name, {}))
        out[name] = {"efficiency": efficiency, "call_overhead_s": overhead, "terms": terms,
                     "points": len(points), "median_error": median(errors)}
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


def held_parameters(calibration: ImplCalibration) -> dict[str, float]:
    """An implementation's calibrated figures as the fit's parameters (COMPUTE_KEYS mapped
    back; memory keys, time terms and the time per call as they are), to hold in `fit`."""
    back = {v: k for k, v in COMPUTE_KEYS.items()}
    held = {back.get(k, k): v for k, v in calibration.efficiency.items()
            if k in back or k == "memory" or k in KERNEL_MEMORY_KEYS}
    held.update({k: v for k, v in calibration.terms.items() if k in GRIDS})
    if calibration.call_overhead_s is not None:
        held["call_overhead_s"] = calibration.call_overhead_s
    return held
