"""Time and peak memory of a 1,000,000-point sweep written as CSV, JSON Lines and JSON (issue 13
item 5: each under 10 s and 1 GB), through the real command line, output to /dev/null.

    python benchmarks/sweep_formats.py            # every format once
    python benchmarks/sweep_formats.py csv jsonl  # only those

Each run is its own process, so its peak RSS (getrusage of the child) is that format's alone. The
grid is benchmarks/sweep_bench.py's: 20 N × 10 B_c × 5 B_r × 5 d × 4 GPUs × 5 heads × 5 batch ×
2 masks = 1,000,000 points, 3,000,000 rows. Figures go into docs/sweeps-benchmarks.md.
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
import time

GRID = ["--n", "512..10240:512", "--block-kv", "auto,16,32,48,64,96,128,256,512,1024",
        "--block-q", "auto,32,64,128,256", "--d", "32,64,96,128,256",
        "--gpu", "a100,h100,h200,l4", "--heads", "1,8,16,32,64", "--batch", "1,4,16,64,128",
        "--causal", "no,yes"]

FORMATS = ("table", "csv", "jsonl", "json")


def run(fmt: str) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MB, bytes written) of one `iosim sweep --format
    fmt`. CPU seconds (user + system of the child) are the figure to compare on a shared
    machine, where the wall time also counts the other processes' turns."""
    command = [sys.executable, "-m", "iosim", "sweep", *GRID, "--format", fmt]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink)
        assert proc.stdout is not None
        size = 0
        while chunk := proc.stdout.read(1 << 20):
            size += len(chunk)
        proc.wait()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed with status {proc.returncode}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    # ru_maxrss of the children is the largest of any child so far: runs go smallest first
    return seconds, cpu, max(usage.ru_maxrss, before) / 1024, size


def main(formats: list[str]) -> None:
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    for fmt in formats:
        seconds, cpu, peak_mb, size = run(fmt)
        print(f"--format {fmt:<6} {seconds:6.1f} s wall  {cpu:6.1f} s CPU  peak RSS "
              f"{peak_mb:6.0f} MB  {size / 1e6:8.1f} MB written", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(FORMATS))
