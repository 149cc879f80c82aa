"""Time and peak memory of a 1,000,000-point sweep written as CSV, JSON Lines and JSON (issue 13
item 5: each under 10 s and 1 GB), through the real command line, output to /dev/null.

    python benchmarks/sweep_formats.py            # every format once
    python benchmarks/sweep_formats.py csv jsonl  # only those

Each run is its own process, so its peak RSS (getrusage of the child) is that format's alone;
where the command writes with two processes (output/sweep_turns.py) the figure is the larger
process's, so the memory both take together is sampled too: the largest sum of their
proportional set sizes (Pss of /proc/PID/smaps_rollup, shared pages split between them), read
ten times a second (Linux only; "-" elsewhere). The
grid is benchmarks/sweep_bench.py's: 20 N × 10 B_c × 5 B_r × 5 d × 4 GPUs × 5 heads × 5 batch ×
2 masks = 1,000,000 points, 3,000,000 rows. Figures go into docs/sweeps-benchmarks.md.
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
import threading
import time

GRID = ["--n", "512..10240:512", "--block-kv", "auto,16,32,48,64,96,128,256,512,1024",
        "--block-q", "auto,32,64,128,256", "--d", "32,64,96,128,256",
        "--gpu", "a100,h100,h200,l4", "--heads", "1,8,16,32,64", "--batch", "1,4,16,64,128",
        "--causal", "no,yes"]

FORMATS = ("table", "csv", "jsonl", "json")


def _tree_pss_mb(pid: int) -> float | None:
    """The summed Pss (MB) of process `pid` and its children, or None where /proc has none."""
    total, pids = 0, [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            pids += [int(p) for p in children.read().split()]
    except OSError:
        return None
    for each in pids:
        try:
            with open(f"/proc/{each}/smaps_rollup") as rollup:
                total += sum(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        except OSError:  # ended meanwhile
            pass
    return total / 1024


class PssSampler(threading.Thread):
    """The largest summed Pss of a process tree, sampled every 0.1 s until `stop`."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, None, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            pss = _tree_pss_mb(self.pid)
            if pss is not None:
                self.peak = max(self.peak or 0.0, pss)


def run(fmt: str) -> tuple[float, float, float, float | None, int]:
    """(wall seconds, CPU seconds, peak RSS in MB, peak summed Pss in MB, bytes written) of one
    `iosim sweep --format fmt`. CPU seconds (user + system of the child and its own child) are
    the figure to compare on a shared machine, where the wall time also counts the other
    processes' turns."""
    command = [sys.executable, "-m", "iosim", "sweep", *GRID, "--format", fmt]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink)
        sampler = PssSampler(proc.pid)
        sampler.start()
        assert proc.stdout is not None
        size = 0
        while chunk := proc.stdout.read(1 << 20):
            size += len(chunk)
        sampler.done.set()
        sampler.join()
        proc.wait()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed with status {proc.returncode}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    # ru_maxrss of the children is the largest of any child so far: runs go smallest first
    return seconds, cpu, max(usage.ru_maxrss, before) / 1024, sampler.peak, size


def main(formats: list[str]) -> None:
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    for fmt in formats:
        seconds, cpu, peak_mb, pss_mb, size = run(fmt)
        pss = "-" if pss_mb is None else f"{pss_mb:.0f}"
        print(f"--format {fmt:<6} {seconds:6.1f} s wall  {cpu:6.1f} s CPU  peak RSS "
              f"{peak_mb:6.0f} MB  Pss {pss:>5} MB  {size / 1e6:8.1f} MB written  "
              f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(FORMATS))
