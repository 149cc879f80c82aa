"""ncu over the backward kernels (ours, SDPA's, eager PyTorch's): the command and its segments.

The evict protocol of ncu.py, with every kernel between cudaProfilerStart/Stop profiled (torch's
kernels have no `_iosim_` prefix): a measured segment is the launches between two evict kernels,
and the DRAM writes of the evict that closes it are the dirty lines the segment left in L2
(counted to the segment, `residue_write_bytes`). Pure but for `collect`, which runs ncu.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from iosim.calibrate.ncu import METRICS, ncu_path, parse_raw_csv

BWD_METRICS = (*METRICS, "gpu__time_duration.sum")
EVICT = "_iosim_evict_kernel"


def profile_command(ncu: str, report: Path, spec: Path, manifest: Path) -> list[str]:
    return [ncu, "--clock-control", "none", "--cache-control", "none", "--profile-from-start",
            "off", "--metrics", ",".join(BWD_METRICS), "--force-overwrite", "--export",
            str(report), sys.executable, "-m", "iosim.calibrate.ncu_bwd_target", str(spec),
            str(manifest)]


def _launch(row: dict[str, Any]) -> dict[str, Any]:
    return {"kernel": row["kernel"], "dram_read_bytes": row["dram__bytes_read.sum"],
            "dram_write_bytes": row["dram__bytes_write.sum"], "l2_bytes": row["lts__t_bytes.sum"],
            "time_s": row["gpu__time_duration.sum"] * 1e-9}


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
                          "residue_write_bytes": launches[at]["dram__bytes_write.sum"]})
            at += 1
        out.append({**item, "segments": parts})
    if at != len(launches):
        raise ValueError(f"{len(launches) - at} profiled launches left after the last item")
    return out


def collect(spec: list[dict[str, Any]], log: Path | None = None, timeout_s: float = 900
            ) -> dict[str, Any]:
    """Run the spec under ncu: {"status", "command", "version", "items"}."""
    ncu = ncu_path()
    if ncu is None:
        return {"status": "unavailable: ncu is not on PATH"}
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip().splitlines()
    with tempfile.TemporaryDirectory(prefix="iosim-ncu-bwd-") as tmp:
        spec_file, manifest_file, report = (Path(tmp) / "spec.json", Path(tmp) / "manifest.json",
                                            Path(tmp) / "profile")
        spec_file.write_text(json.dumps(spec))
        command = profile_command(ncu, report, spec_file, manifest_file)
        shown = " ".join([*command[:-5], "python3 -m iosim.calibrate.ncu_bwd_target SPEC MANIFEST"])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
        except subprocess.TimeoutExpired:
            return {"status": f"failed: ncu ran past {timeout_s:.0f} s", "command": shown}
        if log is not None:
            log.write_text(done.stdout + done.stderr)
        errors = [line for line in (done.stdout + done.stderr).splitlines() if "==ERROR==" in line]
        if done.returncode != 0 or errors:
            return {"status": f"refused: {(errors or [f'exit {done.returncode}'])[0].strip()}",
                    "command": shown}
        exported = subprocess.run([ncu, "--import", f"{report}.ncu-rep", "--csv", "--page", "raw",
                                   "--print-units", "base"], capture_output=True, text=True,
                                  check=False)
        try:
            manifest = json.loads(manifest_file.read_text())
            items = segments(parse_raw_csv(exported.stdout, BWD_METRICS), manifest)
        except (OSError, ValueError) as exc:
            return {"status": f"failed: {exc}", "command": shown}
    return {"status": "ok", "command": shown, "version": version[-1] if version else "",
            "items": items}
