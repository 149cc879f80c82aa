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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    exe = shutil.which("iosim")
    command = [exe] if exe else [sys.executable, "-m", "iosim"]
    command += ["compare", "--n", "4096", "--gpu", "a100"]
    subprocess.run(command, check=True, capture_output=True)  # warm the OS file cache once
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(f"{' '.join(command[-5:])}: median {statistics.median(times) * 1e3:.0f} ms, "
          f"max {max(times) * 1e3:.0f} ms over {args.runs} fresh processes")


if __name__ == "__main__":
    main()
