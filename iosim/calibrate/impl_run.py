"""`iosim calibrate --impl` on a GPU: every implementation asked for, over FIT_GRID, checked
against fp32 attention first, then timed (do_bench) with its kernels listed (torch.profiler) —
`iosim measure`'s runner (measure.py), point after point — into one record that
calibrate/impl_fit.py fits (and that tests/data/h200-impl-fit.json is an instance of).

The grid varies every axis issue 11's acceptance varies: batch·heads below one wave and above,
GQA ratios (4, 8), N not a power of two, chunked prefill (n ≠ n_kv), d ∈ {64, 128, 256}, fp16
and bf16, causal, decoding with KV up to 98,304, and K/V larger than the H200's 60 MiB L2. None
of its shapes is a point of benchmarks/impl_validation_h200.py's VALIDATION (tests hold that).
A point an implementation refuses (a head dim it lacks, a backend this torch build does not
have) is recorded with its one-line reason and left out of the fit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from iosim.calibrate import CalibrationError
from iosim.errors import IosimError
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload
from iosim.record import Record

SCHEMA = "iosim.validation/1"


def _w(n: int, n_kv: int | None = None, *, d: int = 128, heads: int = 16, kv: int | None = None,
       batch: int = 1, dtype: str = "fp16", causal: bool = False) -> Workload:
    return Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv, batch=batch, dtype=dtype,
                    causal=causal)


FIT_GRID = (
    _w(2048, heads=8), _w(8192, heads=4, d=64), _w(4096, heads=32, batch=2, d=64),
    _w(2048, heads=16, batch=4, causal=True), _w(16384, heads=4, d=128, causal=True),
    _w(4096, heads=16, kv=4, d=128), _w(1536, heads=24, batch=2, d=128, dtype="bf16"),
    _w(1, 24576, heads=32, kv=8, batch=2), _w(1, 49152, heads=16, kv=2, d=64),
    _w(768, 12288, heads=16, d=128), _w(2048, heads=16, d=256, causal=True),
    _w(49152, heads=4, d=64),
    # added after tests/data/h200-impl-fit.json was recorded (its 12 points are the ones
    # above): K/V beyond the L2 in a prefill and in a long decode step
    _w(40960, heads=4, d=128, causal=True, dtype="bf16"), _w(1, 98304, heads=32, kv=8),
)
"""The fit grid (see the module docstring)."""
FLEX_POINTS = (0, 5, 10)
"""FlexAttention compiles per shape (tens of seconds): it runs these points of FIT_GRID."""


class Runner(Record):
    """How a point is run: `check` (the max error against fp32 attention; raises when wrong or
    refused) and `time` (median seconds of one call, and its kernels). measure.py's on a GPU;
    tests pass a fake one."""

    check: Callable[[Implementation, Workload], float]
    time: Callable[[Implementation, Workload], tuple[float, list[dict[str, Any]]]]


def gpu_runner() -> Runner:
    """`iosim measure`'s reference check and timing (imports torch and triton)."""
    from iosim.calibrate.measure import check, time_and_kernels

    return Runner(check, lambda impl, w: time_and_kernels(impl, w))


def workload_record(w: Workload) -> dict[str, Any]:
    """A point's shape as the record stores it (the Workload fields impl_fit reads back)."""
    return {"n": w.n, "n_kv": w.n_kv, "d": w.d, "heads": w.heads, "kv_heads": w.kv_heads,
            "batch": w.batch, "dtype": w.dtype, "causal": w.causal}


def measure_impls(impls: Sequence[Implementation], runner: Runner, *, device: dict[str, Any],
                  command: str, grid: Sequence[Workload] = FIT_GRID,
                  flex_points: Sequence[int] = FLEX_POINTS, set_name: str = "fit",
                  budget_s: float | None = None,
                  on_point: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
                  ) -> dict[str, Any]:
    """Check and time every implementation at every point of `grid` (flex at `flex_points`);
    stop starting points after `budget_s` seconds (the record says where it stopped).
    `on_point(record, entry)` after each point (progress; a benchmark saves the record)."""
    start = time.monotonic()
    record: dict[str, Any] = {"schema": SCHEMA, "device": device, "set": set_name,
                              "command": command, "points": []}
    for impl in impls:
        for i, w in enumerate(grid):
            if impl.runs == "flex" and i not in flex_points:
                continue
            if budget_s is not None and time.monotonic() - start > budget_s:
                record["stopped_early"] = (f"budget of {budget_s:.0f} s reached at "
                                           f"{impl.name} #{i}")
                return record
            entry: dict[str, Any] = {"impl": impl.name, "index": i,
                                     "workload": workload_record(w)}
            try:
                impl.check_shape(w.d, w.dtype, gqa=w.group_size > 1)
                entry["rel_error"] = runner.check(impl, w)
                entry["time_s"], entry["kernels"] = runner.time(impl, w)
            except (IosimError, RuntimeError, ValueError, TypeError) as exc:
                text = str(exc).strip()
                entry["refused"] = text.splitlines()[0][:240] if text else type(exc).__name__
            record["points"].append(entry)
            if on_point is not None:
                on_point(record, entry)
    return record


def timed_calls(paths: Iterable[Path], impl: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """("record#index", point) of every call of `impl` the records timed with its kernel list
    (torch.profiler's), record by record: what a fit on kernel device times reads."""
    for path in paths:
        record: dict[str, Any] = json.loads(path.read_text())
        for p in record["points"]:
            if p.get("impl") == impl and "time_s" in p and p.get("kernels"):
                yield f"{path.stem.removeprefix('h200-impl-')}#{p['index']}", p


def timed_impls(record: dict[str, Any]) -> set[str]:
    """The implementations with at least one timed point in a record."""
    return {p["impl"] for p in record.get("points", []) if "time_s" in p}


def require_timed(record: dict[str, Any], names: Sequence[str], where: str) -> None:
    """Refuse (one line) a fit of an implementation the record never timed."""
    missing = [n for n in names if n not in timed_impls(record)]
    if missing:
        refused = next((p["refused"] for p in record.get("points", [])
                        if p["impl"] == missing[0] and "refused" in p), None)
        why = f" (every point refused: {refused})" if refused else ""
        raise CalibrationError(f"{where} holds no timed point of {', '.join(missing)}{why}; "
                               f"record it on the GPU with `iosim calibrate --impl "
                               f"{missing[0]}` or `iosim measure --impl {missing[0]} --record "
                               f"FILE`")
