"""The points `iosim measure --record FILE` appends (JSON Lines, schema iosim.measure/1), read
back: checked line by line, each kernel's counted bytes, and the kernels at a roofline's shape.
Pure: no torch.

A point (measure_cmd.measurement_point) holds the workload, the do_bench median, the kernels
torch.profiler saw (name, device time from a cold L2), iosim's predicted kernels, and, since
ncu is read by measure, `counters`: its status and, when "ok", ncu's kernels of one more run
between two evicts (impl_ncu.per_kernel_counts). Points recorded before that have no `counters`:
readers take them as time-only (schema unchanged: the field is an addition).

Which kernel a DRAM byte is charged to: each kernel's reads and writes as ncu counts them
during it, and the closing evict's writes (the dirty lines still in L2 after the point) to the
last kernel, as the calibration records count them (points.py, dirty_ledger.py). A kernel's
write-back may happen during a later kernel of the same call: per kernel the split can differ
from the model's (which charges a write to its writer); the point's total is exact.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iosim.calibrate import CalibrationError
from iosim.calibrate.records import MIN_RECORDED_TIME_S, finite_json, record_text
from iosim.errors import IosimError
from iosim.inputs.excerpts import clip, excerpt
from iosim.inputs.limits import MAX_RECORDED_CALL_S
from iosim.inputs.workload import Workload

if TYPE_CHECKING:
    from iosim.analysis.comparison import Comparison
    from iosim.calibrate.points import MeasuredKernel

SCHEMA = "iosim.measure/1"
WORKLOAD_KEYS = ("n", "n_kv", "d", "heads", "kv_heads", "batch", "dtype", "causal")


def workload_dict(w: Workload) -> dict[str, Any]:
    """The workload as a point records it (and impl_ncu_target rebuilds it: Workload(**...))."""
    return {key: getattr(w, key) for key in WORKLOAD_KEYS}


def counted_kernels(point: dict[str, Any]) -> list[dict[str, Any]] | None:
    """ncu's kernels of the point, each with `dram_bytes` (reads + writes, the closing evict's
    writes on the last) and `l2_bytes`; None when the point has no counters."""
    counters = point.get("counters") or {}
    kernels = counters.get("kernels") if counters.get("status") == "ok" else None
    if not kernels:
        return None
    out = []
    for i, k in enumerate(kernels):
        flushed = counters.get("closing_evict_write_bytes", 0) if i == len(kernels) - 1 else 0
        out.append({"name": k["name"], "l2_bytes": k["l2_bytes"],
                    "dram_bytes": k["dram_read_bytes"] + k["dram_write_bytes"] + flushed})
    return out


def counters_that_pair(point: dict[str, Any]) -> list[dict[str, Any]] | None:
    """counted_kernels where ncu counted as many kernels as torch.profiler timed (then the
    i-th of each is one kernel); None otherwise: ncu's bytes cannot be put on a timed kernel,
    so the point is drawn by its times alone (as one without counters)."""
    counted = counted_kernels(point)
    return counted if counted is not None and len(counted) == len(point["measured_kernels"]) \
        else None


def _is_number(value: Any, *, positive: bool = False) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value) and (value > 0 if positive else value >= 0))


def _is_time(value: Any) -> bool:
    """A measured time a record may hold: 1e-320 s or 2^63 s was taken and fitted."""
    return _is_number(value) and MIN_RECORDED_TIME_S <= value < MAX_RECORDED_CALL_S


def _problem(p: Any) -> str | None:
    """What is wrong with one point, or None."""
    if not isinstance(p, dict) or p.get("schema") != SCHEMA:
        got = p.get("schema") if isinstance(p, dict) else type(p).__name__
        return f"not an iosim measure point (schema {got!r}, expected {SCHEMA!r})"
    w = p.get("workload")
    if not isinstance(w, dict) or any(key not in w for key in WORKLOAD_KEYS):
        return f"workload must name {', '.join(WORKLOAD_KEYS)}"
    if not isinstance(p.get("impl"), str) or not isinstance(p.get("gpu"), str):
        return "impl and gpu must be names"
    if not _is_time(p.get("measured_time_s")):
        return (f"measured_time_s must be seconds in [{MIN_RECORDED_TIME_S:g}, "
                f"{MAX_RECORDED_CALL_S:g}), got {excerpt(p.get('measured_time_s'))}")
    try:  # checked as compare checks it, as calibrate --impl --from does with the same file
        Workload(**w)
    except (IosimError, TypeError) as exc:
        return f"workload: {clip(str(exc), 120)}"
    for key, numbers in (("measured_kernels", ("time_s",)),
                         ("predicted_kernels", ("time_s", "hbm_bytes"))):
        rows = p.get(key)
        if not isinstance(rows, list) or not all(
                isinstance(r, dict) and isinstance(r.get("name"), str)
                and all(_is_number(r.get(n)) for n in numbers) for r in rows):
            return (f"{key} must be a list of kernels with a name and {', '.join(numbers)} "
                    f"(finite numbers, none negative)")
    if not all(_is_time(r["time_s"]) for r in p["measured_kernels"]):
        return (f"measured_kernels' time_s must be seconds in [{MIN_RECORDED_TIME_S:g}, "
                f"{MAX_RECORDED_CALL_S:g}) (a kernel timed by torch.profiler)")
    counters = p.get("counters")
    if counters is not None:
        if not isinstance(counters, dict) or not isinstance(counters.get("status"), str):
            return "counters must be a mapping with a status"
        if counters["status"] == "ok":
            kernels = counters.get("kernels")
            counts = ("dram_read_bytes", "dram_write_bytes", "l2_bytes")
            if not isinstance(kernels, list) or not kernels or not all(
                    isinstance(k, dict) and isinstance(k.get("name"), str)
                    and all(_is_number(k.get(n)) for n in counts) for k in kernels) \
                    or not _is_number(counters.get("closing_evict_write_bytes", 0)):
                return ("counters.kernels must list kernels with a name and ncu's byte counts "
                        "(finite numbers, none negative)")
    return None


def _claims_schema(point: Any) -> bool:
    """Whether a line says it is a measure point: its faults are then a measure record's (a
    first point with a negative kernel time read as a calibration record was "not valid JSON
    (line 2: Extra data)")."""
    return isinstance(point, dict) and point.get("schema") == SCHEMA


def read_points(path: Path | str) -> list[dict[str, Any]] | None:
    """The points of a measure record, checked (CalibrationError naming the line); None when
    the file's first line is not a measure point (a calibration record, say)."""
    path = Path(path)
    text = record_text(path, "a measure record", "a few kB a point")
    parse = finite_json(path)
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
             if line.strip()]
    points: list[dict[str, Any]] = []
    for number, line in lines:
        try:
            point = parse(line)
        except (json.JSONDecodeError, RecursionError):
            if not points:
                return None  # not JSON Lines: another kind of record
            raise CalibrationError(f"{path} line {number}: not valid JSON; each line of a "
                                   f"measure record is one point") from None
        problem = _problem(point)
        if problem is not None:
            if not points and not _claims_schema(point):
                return None  # another kind of record; a measure point's own fault is named
            raise CalibrationError(f"{path} line {number}: {problem}")
        points.append(point)
    return points or None


def points_at(points: list[dict[str, Any]], workload: Workload, impl: str, gpu: str
              ) -> list[dict[str, Any]]:
    """The points measured at exactly this workload (a forward pass), implementation and GPU."""
    if workload.pass_ != "fwd":
        return []
    found = []
    for p in points:
        if p["impl"] != impl or p["gpu"] != gpu:
            continue
        if Workload(**p["workload"]) == workload:  # each checked by read_points
            found.append(p)
    return found


def measured_kernels_of(point: dict[str, Any], comparison: Comparison, algorithm: str
                        ) -> list[MeasuredKernel]:
    """The point's kernels as hollow dots beside `algorithm`'s predicted kernels: paired by
    launch order with the comparison's kernels of that algorithm (when the counts agree),
    with ncu's DRAM and L2 bytes where the point has counters that pair with its timed
    kernels (counters_that_pair), time only otherwise."""
    from iosim.calibrate.points import MeasuredKernel

    estimate = next((a for a in comparison.algorithms if a.name == algorithm), None)
    timed = point["measured_kernels"]
    counted = counters_that_pair(point)
    if estimate is None or len(timed) != len(estimate.kernels):
        return []
    out = []
    for i, (m, k) in enumerate(zip(timed, estimate.kernels, strict=True)):
        if not _is_number(m["time_s"], positive=True):
            continue
        c = counted[i] if counted is not None else None
        out.append(MeasuredKernel(
            algorithm, k.name, k.label, m["time_s"],
            c["dram_bytes"] if c else None, c["l2_bytes"] if c else None))
    return out
