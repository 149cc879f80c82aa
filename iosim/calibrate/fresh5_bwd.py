"""bwd5's rules judged on the fifth fresh H200 set (tests/data/backward-h200-fresh5.json): pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The record (`python3 benchmarks/backward_h200.py OUT --fresh5`, its grid `fresh5_grid`
committed before the run, the rules frozen at the tag `bwd5-frozen`) holds SDPA's and eager's
backward, Algorithm 4 in Triton and iosim's Triton backward, each timed and counted by ncu per
kernel, at shapes that vary every axis (fresh3_bwd.py's gaps s, a, d, t). bwd5's rules: the
L2's soft cutoff (estimates/l2_cutoff.py) in Algorithm 4's serial sweeps and FA2's restarts,
and a GQA group's K/V re-read by each query head's programs (l2.py `_group_rereads`). 'Before'
is bwd4's rules as frozen at `bwd4-frozen`. The same bounds as fresh3_bwd.py; nothing fitted.
Two Triton points of a few µs of GPU time measure the launcher floor (`launch_floor`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from statistics import median
from typing import Any
from unittest.mock import patch

from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate.rules_patched import rules_patched
from iosim.inputs.hardware import Hardware

BWD4_RESTART_SHARE = 0.8
"""bwd4's l2_restarts.RESTART_CAPACITY_SHARE: its restarts' step cutoff, as a share of the L2."""
BEFORE_TEXT = ("bwd4's rules as frozen at `bwd4-frozen`: the L2's cutoff a step (at 0.8 of the "
               "L2 for FA2's restarts, at the whole L2 for Algorithm 4's sweeps) and a GQA "
               "group's K/V read once per KV head by FA2's backward")
LAUNCH_VISIBLE = 1.15
"""A Triton point is launcher-bound where its time is this many times its kernels' ncu time."""


def _step(share: float) -> Any:
    def miss(reuse_bytes: float, capacity: float) -> float:
        return 1.0 if reuse_bytes > share * capacity else 0.0
    return miss


@contextmanager
def rules_bwd4() -> Iterator[None]:
    """The L2 model as frozen at bwd4-frozen (BEFORE_TEXT), caches cleared around it."""
    import iosim.estimates.l2 as l2
    import iosim.estimates.l2_restarts as restarts

    step = _step(BWD4_RESTART_SHARE)
    with rules_patched(patch.object(l2, "miss_probability", _step(1.0)),
                       patch.object(restarts, "miss_probability", step),
                       patch.object(restarts, "never_misses", lambda r, c: step(r, c) == 0.0),
                       patch.object(l2._ClosedForm, "_group_rereads", lambda self, k, a: 0.0)):
        yield


def launch_floor(records: list[dict[str, Any]]) -> list[tuple[str, int, float, float]]:
    """(point, launches, ncu kernel time, measured time) of every Triton backward whose time
    is launcher-bound (LAUNCH_VISIBLE × its kernels' ncu time or more), each record in turn."""
    out = []
    for record in records:
        points = {p["id"]: p for p in record["points"]}
        for item in record.get("counters", {}).get("items", []):
            if item["what"] != "triton":
                continue
            kernels = item["segments"][0]["kernels"]
            gpu = sum(k["time_s"] for k in kernels)
            wall = points[item["id"]]["triton_s"]
            if wall >= LAUNCH_VISIBLE * gpu:
                out.append((item["id"], len(kernels), gpu, wall))
    return out


def launch_floor_lines(seen: list[dict[str, Any]], fresh: dict[str, Any]) -> list[str]:
    """The launcher floor: host time per launch on the seen records' launch-bound points, and
    that figure × launches against every launch-bound point of the fresh record."""
    per_launch = [wall / n for _, n, _, wall in launch_floor(seen)]
    if not per_launch:
        return []
    host = median(per_launch)
    lines = ["", "### The Triton backward's launcher floor", "",
             f"Launch-bound points (time ≥ {LAUNCH_VISIBLE:g} × the kernels' ncu time) of the seen "
             f"records: {len(per_launch)}, host time per launch {min(per_launch) * 1e6:.1f}-"
             f"{max(per_launch) * 1e6:.1f} µs, median {host * 1e6:.1f} µs. On this set, "
             "launches × that median against the measured time (not fitted here, not in "
             "`compare`):", "",
             "| point | launches | kernels (ncu) | measured | launches × median | error |",
             "|---|---:|---:|---:|---:|---:|"]
    for point, n, gpu, wall in launch_floor([fresh]):
        lines.append(f"| {point} | {n} | {gpu * 1e3:.3f} ms | {wall * 1e3:.3f} ms | "
                     f"{n * host * 1e3:.3f} ms | {(n * host - wall) / wall:+.1%} |")
    return lines


def report(record: dict[str, Any], hardware: Hardware,
           seen: list[dict[str, Any]] | None = None) -> str:
    """The Markdown section of reports/backward-h200.md on the fifth fresh record (with the
    fitted constants' sensitivity, and the launcher floor judged from the `seen` records)."""
    text = F3.report(record, hardware, title="bwd5's rules on a fifth fresh set "
                     "(backward-h200-fresh5.json)", grid="fresh5_grid", tag="bwd5-frozen",
                     rules_before=rules_bwd4, old_triton=False, before_text=BEFORE_TEXT)
    if seen:
        text += "\n".join(launch_floor_lines(seen, record)) + "\n"
    return text
