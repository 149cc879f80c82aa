"""ncu over the backward kernels (ours, SDPA's, eager PyTorch's): the command and its segments.

The evict protocol of ncu.py, with every kernel between cudaProfilerStart/Stop profiled (torch's
kernels have no `_iosim_` prefix): a measured segment is the launches between two evict kernels,
and the DRAM writes of the evict that closes it are the dirty lines the segment left in L2
(counted to the segment, `residue_write_bytes`). Pure but for `collect`, which runs ncu.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from iosim.calibrate.ncu import EVICT, METRICS, profile

BWD_METRICS = (*METRICS, "gpu__time_duration.sum")
WRITE_METRICS = (*BWD_METRICS, "dram__sectors_write.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
                 "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_op_atom.sum",
                 "lts__t_sectors_op_red.sum")
"""bwd7's diagnostic set: with the L2's write, atomic and reduction sectors from the SMs (32 B
each), to tell a kernel's own stores from write-backs of lines it re-dirtied (issue 10 (b))."""


def profile_command(ncu: str, report: Path, spec: Path, manifest: Path,
                    metrics: tuple[str, ...] = BWD_METRICS) -> list[str]:
    """The ncu command line that profiles the backward's kernels into `report`."""
    return [ncu, "--clock-control", "none", "--cache-control", "none", "--profile-from-start",
            "off", "--metrics", ",".join(metrics), "--force-overwrite", "--export",
            str(report), sys.executable, "-m", "iosim.calibrate.ncu_bwd_target", str(spec),
            str(manifest)]


def _launch(row: dict[str, Any]) -> dict[str, Any]:
    extra = {m: row[m] for m in WRITE_METRICS[len(BWD_METRICS):] if m in row}
    return {"kernel": row["kernel"], "dram_read_bytes": row["dram__bytes_read.sum"],
            "dram_write_bytes": row["dram__bytes_write.sum"], "l2_bytes": row["lts__t_bytes.sum"],
            "time_s": row["gpu__time_duration.sum"] * 1e-9, **extra}


def segments(launches: list[dict[str, Any]], manifest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per manifest item: its segments, each the launches between two evicts and the residue."""
    out = []
    at = 0
    for item in manifest:
        if at >= len(launches) or launches[at]["kernel"] != EVICT:
            raise ValueError(f"{item['id']}: expected an evict kernel at launch {at}")
        at += 1
        parts = []
        for _ in range(item["evicts"] - 1):
            kernels = []
            while at < len(launches) and launches[at]["kernel"] != EVICT:
                kernels.append(_launch(launches[at]))
                at += 1
            if at >= len(launches):
                raise ValueError(f"{item['id']}: ncu's launches end inside a segment")
            parts.append({"kernels": kernels,
                          "residue_write_bytes": launches[at]["dram__bytes_write.sum"],
                          "closing_evict": _launch(launches[at])})
            at += 1
        out.append({**item, "segments": parts})
    if at != len(launches):
        raise ValueError(f"{len(launches) - at} profiled launches left after the last item")
    return out


def collect(spec: list[dict[str, Any]], log: Path | None = None, timeout_s: float = 900,
            metrics: tuple[str, ...] = BWD_METRICS) -> dict[str, Any]:
    """Run the spec under ncu (`metrics`: BWD_METRICS, or WRITE_METRICS to diagnose
    write-backs): {"status", "command", "version", "items"}."""

    def command(ncu: str, report: Path, spec_file: Path, manifest: Path) -> list[str]:
        return profile_command(ncu, report, spec_file, manifest, metrics)

    run = profile(spec, command, "iosim.calibrate.ncu_bwd_target", metrics,
                  timeout_s=timeout_s, log=log)
    if run.status == "unavailable":
        return {"status": "unavailable: ncu is not on PATH"}
    if run.status != "ok":
        return {"status": run.status, "command": run.shown}
    try:
        items = segments(list(run.launches), list(run.manifest))
    except ValueError as exc:
        return {"status": f"failed: {exc}", "command": run.shown}
    return {"status": "ok", "command": run.shown, "version": run.version, "items": items}
