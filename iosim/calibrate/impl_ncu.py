"""DRAM bytes of an implementation's kernels through Nsight Compute, for `calibrate --impl
--counters` (summed per point) and `iosim measure` (kernel by kernel): each timed point run once
more between two evict kernels (calibrate/ncu.py's protocol: `--cache-control none`, so the
second evict's DRAM writes are the point's leftover write-backs) inside an NVTX range that ncu
alone profiles (the warm-up and compile launches outside it are not). A point's launches are
every kernel between its two evicts, whatever their names (torch's, cuDNN's, FlexAttention's).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from iosim.calibrate.ncu import (
    METRICS,
    ProfileRun,
    Started,
    evict_groups,
    finish_profile,
    profile,
    start_profile,
    wait_ready,
)

TARGET = "iosim.calibrate.impl_ncu_target"
RANGE = "iosim-measure"
"""The NVTX range (push/pop) around each point's evict, run, evict."""


def command(ncu: str, report: Path, spec: Path, manifest: Path) -> list[str]:
    """The ncu command line that profiles the points' launches (inside RANGE only)."""
    # application-only: not the compile workers torch.compile may start (each would be
    # instrumented too), only the program whose kernels are counted
    return [ncu, "--clock-control", "none", "--cache-control", "none",
            "--target-processes", "application-only", "--nvtx",
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


def per_kernel_counts(kernels: list[dict[str, Any]], after: dict[str, Any]) -> dict[str, Any]:
    """One point's launches kernel by kernel, as `iosim measure --record` keeps them: each
    kernel's name and ncu's DRAM reads, writes and L2 bytes, and the DRAM writes of the evict
    after the last (the dirty lines the point left in L2; measure_record.counted_kernels says
    which kernel they are charged to)."""
    return {"kernels": [{"name": k["kernel"], "dram_read_bytes": k[METRICS[0]],
                         "dram_write_bytes": k[METRICS[1]], "l2_bytes": k[METRICS[2]]}
                        for k in kernels],
            "closing_evict_write_bytes": after[METRICS[1]]}


def start_count_kernels(impl: str, workload: dict[str, Any]) -> Started:
    """Start `iosim measure`'s counters in the background (`impl` as the user named it, a
    workload as the record writes it): the target compiles and runs its warm-up call while
    measure compiles and times, then waits (ncu.py GATE) until `finish_count_kernels`. The two
    compilations overlap: one after the other they took 46-52 s on the H200
    (benchmarks/flex-measure-h200, benchmarks/impl6-h200/measure-flex.log)."""
    spec = [{"id": "measure", "impl": impl, "workload": workload}]
    return start_profile(spec, command, TARGET, METRICS, gated=True)


def compiled(started: Started) -> None:
    """Say that `iosim measure` has compiled (ncu.py COMPILED): a target run with
    AFTER_COMPILE set compiles only then, from the warm caches."""
    from iosim.calibrate.ncu import COMPILED

    if started.process is None:  # ncu never started (started.early says why): none waits
        return
    with contextlib.suppress(OSError):  # its folder gone: the run ended, finish_profile says
        (started.folder / COMPILED).touch()


def counters_ready(started: Started, *, timeout_s: float = 300) -> None:
    """Wait until the counting process has compiled and run its warm-up call (or ended), so
    that nothing of it runs on the GPU while measure times."""
    wait_ready(started, timeout_s=timeout_s)


def finish_count_kernels(started: Started, *, timeout_s: float = 300,
                         log: Path | None = None) -> dict[str, Any]:
    """The counted point kernel by kernel (per_kernel_counts) with the status ("ok",
    "unavailable", "refused: ...", "failed: ..."), the ncu version and the command as shown."""
    return _kernels_found(finish_profile(started, timeout_s=timeout_s, log=log))


def count_kernels(impl: str, workload: dict[str, Any], *, timeout_s: float = 300,
                  log: Path | None = None) -> dict[str, Any]:
    """`iosim measure`'s counters, started and read at once (start_count_kernels)."""
    return finish_count_kernels(start_count_kernels(impl, workload), timeout_s=timeout_s,
                                log=log)


def _kernels_found(run: ProfileRun) -> dict[str, Any]:
    found: dict[str, Any] = {"status": run.status, "ncu": run.version, "command": run.shown}
    if run.status != "ok":
        return found
    try:
        ((kernels, after),) = evict_groups(list(run.launches), ["the measured point"])
    except ValueError as exc:
        return {**found, "status": f"failed: {exc}"}
    if not kernels:
        return {**found, "status": "failed: ncu saw no kernel between the two evicts"}
    return {**found, **per_kernel_counts(kernels, after)}


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
