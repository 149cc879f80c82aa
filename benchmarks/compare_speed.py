"""Wall time of `iosim compare --n 4096 --gpu a100` as a fresh process (issue 2: well under 0.5 s).

    python benchmarks/compare_speed.py [--runs 20]

Prints the median and the worst of the runs; the README records the figure.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def iosim_command(*words: str) -> list[str]:
    """The `iosim` console script with `words`, or `python -m iosim` where it is not on PATH."""
    exe = shutil.which("iosim")
    return ([exe] if exe else [sys.executable, "-m", "iosim"]) + list(words)


def fresh_process_report(label: str, command: list[str], runs: int) -> str:
    """'LABEL: median .. ms, max .. ms over RUNS fresh processes' of `command`, run once first
    to warm the OS file cache."""
    subprocess.run(command, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return (f"{label}: median {statistics.median(times) * 1e3:.0f} ms, "
            f"max {max(times) * 1e3:.0f} ms over {runs} fresh processes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    command = iosim_command("compare", "--n", "4096", "--gpu", "a100")
    print(fresh_process_report(" ".join(command[-5:]), command, args.runs))

if __name__ == "__main__":
    main()
