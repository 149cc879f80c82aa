"""Hardware counters through Nsight Compute (ncu): DRAM and L2 bytes of every kernel.

Protocol. ncu runs `python -m iosim.calibrate.ncu_target`, which launches each measured kernel
(or the standard path's three kernels back to back) between two *evict* kernels that read a
buffer several times the L2. ncu is told to leave the caches alone (`--cache-control none`;
its default flushes L2 before every kernel and would drop the write-backs on the floor) and the
clocks too (`--clock-control none`). So each measured kernel starts with an L2 holding nothing
it needs and nothing dirty, and the DRAM writes of the evict kernel that follows are exactly
the dirty lines the measured kernel left in L2: its reads plus its writes plus that residue
are all the DRAM traffic it causes.

Metrics: dram__bytes_read.sum, dram__bytes_write.sum (DRAM), lts__t_bytes.sum (all L2 traffic).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iosim.calibrate.records import CounterRow, Counters
from iosim.record import Record

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum")
KERNEL_PREFIX = "_iosim_"
EVICT = "_iosim_evict_kernel"
"""The kernel (kernels.py) ncu's protocol runs before and after each point: it reads a buffer
several times the L2, so the point starts with no line of its own in L2, and the closing one's
DRAM writes are the dirty lines the point left there."""


def evict_groups(launches: list[dict[str, Any]], names: list[str]
                 ) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """ncu's launches of the evict protocol (evict, a point's kernels, evict; per point, in
    order) as (the point's kernels, its closing evict) for each of `names`; ValueError naming
    the point where the launches do not follow it, or the launches left after the last."""
    groups = []
    i = 0
    for name in names:
        if i >= len(launches) or launches[i]["kernel"] != EVICT:
            raise ValueError(f"{name}: expected an evict kernel at launch {i}")
        i += 1
        kernels = []
        while i < len(launches) and launches[i]["kernel"] != EVICT:
            kernels.append(launches[i])
            i += 1
        if i >= len(launches):
            raise ValueError(f"{name}: no evict kernel after its launches")
        groups.append((kernels, launches[i]))
        i += 1
    if i != len(launches):
        raise ValueError(f"ncu profiled {len(launches) - i} launches after the last point")
    return groups


def ncu_path() -> str | None:
    """ncu on PATH, else the usual install folders of Nsight Compute and CUDA."""
    import glob

    found = shutil.which("ncu")
    if found:
        return found
    candidates = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) + sorted(
        glob.glob("/usr/local/cuda*/bin/ncu"))
    return candidates[-1] if candidates else None


def profile_command(ncu: str, report: Path, spec: Path, manifest: Path) -> list[str]:
    """The ncu command line that profiles the forward calibration's kernels into `report`."""
    return [ncu, "--clock-control", "none", "--cache-control", "none",
            "--kernel-name", f"regex:^{KERNEL_PREFIX}", "--metrics", ",".join(METRICS),
            "--force-overwrite", "--export", str(report),
            sys.executable, "-m", "iosim.calibrate.ncu_target", str(spec), str(manifest)]


def _number(text: str) -> float:
    return float(text.replace(",", "").strip() or "nan")


def parse_raw_csv(text: str, metrics: tuple[str, ...] = METRICS) -> list[dict[str, Any]]:
    """`ncu --import R --csv --page raw --print-units base` → one dict per profiled launch."""
    rows = list(csv.reader(io.StringIO(text)))
    header_at = next((i for i, r in enumerate(rows) if "Kernel Name" in r and "ID" in r), None)
    if header_at is None:
        raise ValueError("no 'ID'/'Kernel Name' header in ncu's CSV")
    header = rows[header_at]
    missing = [m for m in metrics if m not in header]
    if missing:
        raise ValueError(f"ncu's CSV lacks {', '.join(missing)}")
    out = []
    for r in rows[header_at + 1:]:
        if len(r) != len(header):
            continue
        cells = dict(zip(header, r, strict=True))
        if not cells["ID"].strip().isdigit():
            continue  # the units row
        out.append({"kernel": cells["Kernel Name"].split("(")[0].strip(),
                    **{m: _number(cells[m]) for m in metrics}})
    return out


def attach(launches: list[dict[str, Any]], manifest: list[dict[str, str]]) -> tuple[CounterRow, ...]:
    """Pair ncu's launches (in profiling order) with the target's manifest (in launch order)."""
    if len(launches) != len(manifest):
        raise ValueError(f"ncu profiled {len(launches)} launches, the target made {len(manifest)}")
    rows = []
    for launch, entry in zip(launches, manifest, strict=True):
        if not launch["kernel"].startswith(entry["kernel"]):
            raise ValueError(f"launch order differs: ncu saw {launch['kernel']}, expected "
                             f"{entry['kernel']}")
        rows.append(CounterRow(entry["id"], entry["name"], entry["role"],
                               launch[METRICS[0]], launch[METRICS[1]], launch[METRICS[2]]))
    return tuple(rows)


class ProfileRun(Record):
    """One ncu run of a target module: its status, the command as shown, and what it read."""

    status: str
    """"ok", "unavailable", "failed: <why>" or "refused: <ncu's first error line>"."""
    shown: str = ""
    version: str = ""
    launches: tuple[dict[str, Any], ...] = ()
    manifest: tuple[dict[str, Any], ...] = ()


class Started(Record, eq=False):
    """An ncu run started in the background (start_profile), to be read by finish_profile."""

    process: Any
    """The subprocess.Popen of ncu (None: it could not start; `early` says why)."""
    ncu: str
    folder: Path
    shown: str
    version: str
    metrics: tuple[str, ...]
    early: ProfileRun | None = None


GATE = "IOSIM_NCU_GATE"
"""Environment variable naming a folder: a target run with it (impl_ncu_target.py) writes
READY there after its warm-up call (compilation included) and waits for GO before the range
ncu profiles, so that it compiles while the caller compiles and times, and counts after."""
READY, GO = "ready", "go"
COMPILED = "compiled"
"""Written by `iosim measure` into GATE's folder once its own compilation is done: a gated
target waits for it before its first call, so that it compiles from the warm Inductor and
Triton caches instead of compiling the same kernels beside measure (round 10: 19.4 s against
22.0 s for the whole measure, benchmarks/flex10-h200; AFTER_COMPILE=0 compiles at once)."""
AFTER_COMPILE = "IOSIM_NCU_AFTER_COMPILE"
PHASES: dict[str, float] = {}
"""The last profile's phases (finish_profile): seconds from GO to ncu's end and of the export,
and when (time.time()) the target reached each of its own (READY's content); `iosim measure
--record` keeps them as `phases_s`, set against its start."""


def start_profile(spec: list[dict[str, Any]],
                  command_for: Callable[[str, Path, Path, Path], list[str]], target: str,
                  metrics: tuple[str, ...], *, gated: bool = False) -> Started:
    """Start `target` (a module taking SPEC MANIFEST) under the ncu command `command_for`
    builds, in the background; with `gated`, it waits at GATE's folder (see GATE)."""
    ncu = ncu_path()
    folder = Path(tempfile.mkdtemp(prefix="iosim-ncu-"))
    if ncu is None:
        return Started(None, "", folder, "", "", metrics, ProfileRun("unavailable"))
    # ncu's version asked beside the run, not before it (an ncu start is a second or more)
    asked = subprocess.Popen([ncu, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    spec_file, manifest_file, report = (folder / "spec.json", folder / "manifest.json",
                                        folder / "profile")
    spec_file.write_text(json.dumps(spec))
    command = command_for(ncu, report, spec_file, manifest_file)
    # the command with the target's temporary files named by role
    shown = " ".join([*command[:-5], f"python3 -m {target} SPEC MANIFEST"])
    env = {**os.environ, GATE: str(folder)} if gated else None
    with (folder / "out.txt").open("w") as out:
        # its own process group: stop() ends ncu and the target it started together
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   env=env, start_new_session=True)
    version = asked.communicate()[0].strip().splitlines()
    return Started(process, ncu, folder, shown, version[-1] if version else "", metrics)


def stop(started: Started) -> None:
    """End a started ncu run and the target it launched (its process group), and drop its
    folder: the caller failed before reading it."""
    if started.process is not None and started.process.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(started.process.pid, signal.SIGKILL)
        started.process.wait()
    shutil.rmtree(started.folder, ignore_errors=True)


def wait_ready(started: Started, *, timeout_s: float) -> None:
    """Until a gated target has compiled and run its warm-up call (READY), or ended."""
    deadline = time.monotonic() + timeout_s
    while (started.process is not None and started.process.poll() is None
           and not (started.folder / READY).exists() and time.monotonic() < deadline):
        time.sleep(0.01)


def finish_profile(started: Started, *, timeout_s: float, log: Path | None = None
                   ) -> ProfileRun:
    """Let a gated target go on (GO), wait for ncu to end, export its raw CSV and read it."""
    try:
        if started.early is not None:
            return started.early
        (started.folder / GO).touch()
        went = time.monotonic()
        try:
            started.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(started.process.pid, signal.SIGKILL)
            started.process.wait()
            return ProfileRun(f"failed: ncu ran past {timeout_s:.0f} s", started.shown)
        text = (started.folder / "out.txt").read_text()
        if log is not None:
            log.write_text(text)
        errors = [line for line in text.splitlines()
                  if "==ERROR==" in line or "ERR_NVGPUCTRPERM" in line]
        if started.process.returncode != 0 or errors:
            reason = errors[0] if errors else f"exit status {started.process.returncode}"
            return ProfileRun(f"refused: {reason.strip()}", started.shown)
        PHASES["ncu_after_go_s"] = time.monotonic() - went
        target = started.folder / READY
        if target.exists() and target.read_text().strip():
            PHASES.update({f"target_{k}": v for k, v in json.loads(target.read_text()).items()})
        exporting = time.monotonic()
        exported = subprocess.run([started.ncu, "--import", f"{started.folder / 'profile'}.ncu-rep",
                                   "--csv", "--page", "raw", "--print-units", "base"],
                                  capture_output=True, text=True, check=False)
        PHASES["ncu_export_s"] = time.monotonic() - exporting
        try:
            manifest = json.loads((started.folder / "manifest.json").read_text())
            launches = parse_raw_csv(exported.stdout, started.metrics)
        except (OSError, ValueError) as exc:
            return ProfileRun(f"failed: {exc}", started.shown)
        return ProfileRun("ok", started.shown, started.version, tuple(launches),
                          tuple(manifest))
    finally:
        shutil.rmtree(started.folder, ignore_errors=True)


def profile(spec: list[dict[str, Any]], command_for: Callable[[str, Path, Path, Path], list[str]],
            target: str, metrics: tuple[str, ...], *, timeout_s: float,
            log: Path | None = None) -> ProfileRun:
    """Run `target` (a module taking SPEC MANIFEST) under the ncu command `command_for` builds,
    then export its raw CSV: the one place the calibrations (forward and backward) call ncu."""
    return finish_profile(start_profile(spec, command_for, target, metrics),
                          timeout_s=timeout_s, log=log)


def collect(spec: list[dict[str, Any]], *, timeout_s: float = 1200,
            log: Path | None = None) -> Counters:
    """Run the spec's kernels under ncu; a missing or refused ncu gives Counters with the reason."""
    run = profile(spec, profile_command, "iosim.calibrate.ncu_target", METRICS,
                  timeout_s=timeout_s, log=log)
    if run.status == "unavailable":
        return Counters("unavailable: ncu (Nsight Compute) is not on PATH")
    if run.status != "ok":
        return Counters(run.status, run.shown)
    try:
        rows = attach(list(run.launches), list(run.manifest))
    except ValueError as exc:
        return Counters(f"failed: {exc}", run.shown)
    return Counters("ok", run.shown, run.version, rows, tuple(spec))
