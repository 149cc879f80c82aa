"""DRAM bytes of an implementation's kernels through Nsight Compute, for `calibrate --impl
--counters`: each timed point run once more between two evict kernels (calibrate/ncu.py's
protocol: `--cache-control none`, so the second evict's DRAM writes are the point's leftover
write-backs) inside an NVTX range that ncu alone profiles (the warm-up and compile launches
outside it are not). A point's launches are every kernel between its two evicts, whatever their
names (torch's, cuDNN's, FlexAttention's).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from iosim.calibrate.ncu import METRICS, evict_groups, profile

TARGET = "iosim.calibrate.impl_ncu_target"
RANGE = "iosim-measure"
"""The NVTX range (push/pop) around each point's evict, run, evict."""


def command(ncu: str, report: Path, spec: Path, manifest: Path) -> list[str]:
    """The ncu command line that profiles the points' launches (inside RANGE only)."""
    return [ncu, "--clock-control", "none", "--cache-control", "none", "--nvtx",
            "--nvtx-include", f"{RANGE}/", "--metrics", ",".join(METRICS), "--force-overwrite",
            "--export", str(report), sys.executable, "-m", TARGET, str(spec), str(manifest)]


def split_points(launches: list[dict[str, Any]], ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per point (in `ids`' order): its kernels' DRAM reads, writes (with the dirty lines the
    evict after it wrote back) and L2 bytes, and their names. Raises ValueError when the
    launches are not evict, kernels…, evict per point."""
    out: dict[str, dict[str, Any]] = {}
    for point, (kernels, after) in zip(ids, evict_groups(launches, [f"point {p}" for p in ids]),
                                       strict=True):
        out[point] = {
            "dram_read_bytes": sum(k[METRICS[0]] for k in kernels),
            "dram_write_bytes": sum(k[METRICS[1]] for k in kernels) + after[METRICS[1]],
            "l2_bytes": sum(k[METRICS[2]] for k in kernels),
            "ncu_kernels": [k["kernel"] for k in kernels]}
    return out


def count(record: dict[str, Any], *, timeout_s: float = 1200, log: Path | None = None) -> str:
    """Add ncu's DRAM bytes to every timed point of `record` (in place); the status ("ok", or
    why there are none: ncu missing, refused, failed)."""
    points = [p for p in record["points"] if "time_s" in p]
    spec = [{"id": f"{p['impl']}#{p['index']}", "impl": p["impl"], "workload": p["workload"]}
            for p in points]
    if not spec:
        return "no timed point"
    run = profile(spec, command, TARGET, METRICS, timeout_s=timeout_s, log=log)
    if run.status != "ok":
        return run.status
    try:
        found = split_points(list(run.launches), [s["id"] for s in spec])
    except ValueError as exc:
        return f"failed: {exc}"
    for p, s in zip(points, spec, strict=True):
        p.update(found[s["id"]])
    return "ok"
