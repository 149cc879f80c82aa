"""Wall time of `sweep --splits auto` on a decoding grid (batch × KV length, GQA 32/8, d 128,
the H200's measured profile), against the same sweep at FA2's heuristic (no --splits).

    python benchmarks/sweep_splits_auto_speed.py [--batches 100] [--lengths 100] [--csv FILE]

In this process, after one warm call: the sweep of batches × lengths points (10,000 by
default) with and without `splits=("auto",)` (analysis/sweep_splits.py: every point's choice
at once on arrays, split_choice_grid.best_split_counts; wall time, and the process's CPU time,
which other jobs on a shared machine inflate less; the machine's load average before the
run), and the per-point cost of the choice alone (best_split_count with one point, and
choose_splits' full table, over 12 points). `--csv FILE`: every point's split count and
splitkv's times and bytes of the `--splits auto` sweep, each float as repr writes it, to diff
against another checkout's (PYTHONPATH=/other/checkout python ... --csv other.csv). Over
MAX_AUTO_SPLIT_POINTS (10,000) the `--splits auto` sweep is refused (the line is printed) and
FA2's heuristic still timed (`--batches 1000`: 100,000 points). The
issues' targets: a 10,000-point decode sweep in about 30 s (issue 11), ≤ 20 s for this one
(docs/variants-decoding.md records the figures).
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import time
from typing import Any

import numpy as np

from iosim import Workload
from iosim.analysis.split_choice import best_split_count, choose_splits
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.errors import IosimError


def spec(batches: int, lengths: int, splits: tuple) -> SweepSpec:
    kv = tuple(int(v) for v in np.unique(np.geomspace(1000, 131072, lengths).astype(int)))
    return SweepSpec(n=(1,), gpu=("h200",), n_kv=kv, d=(128,), heads=(32,), kv_heads=(8,),
                     batch=tuple(range(1, batches + 1)), algorithms=("splitkv",),
                     profile="measured", splits=splits)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--lengths", type=int, default=100)
    parser.add_argument("--csv", help="write the --splits auto sweep's points to this file")
    args = parser.parse_args()
    sweep(spec(2, 2, ("auto",)))  # warm: imports, tables
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for label, splits in (("FA2's heuristic (no --splits)", (None,)), ("--splits auto", ("auto",))):
        s = spec(args.batches, args.lengths, splits)
        start, cpu = time.perf_counter(), time.process_time()
        try:
            result = sweep(s)
        except IosimError as e:  # over MAX_AUTO_SPLIT_POINTS: refused at once, one line
            print(f"sweep, {label}: {s.points:,} points refused in "
                  f"{time.perf_counter() - start:.2f} s: {e}")
            continue
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        if args.csv and splits == ("auto",):
            write_points(result, args.csv)
        print(f"sweep, {label}: {s.points:,} points in {wall:.1f} s "
              f"({wall / s.points * 1e3:.2f} ms a point; this process's CPU time {cpu:.1f} s; "
              f"its peak resident memory so far "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
    sample = [Workload(1, n_kv=n, d=128, heads=32, kv_heads=8, batch=b)
              for n in (1500, 9000, 40000, 120000) for b in (1, 5, 17)]
    for label, choose in (("best_split_count", lambda w: best_split_count(
            w, "h200", profile="measured")), ("choose_splits (the full table)", lambda w: choose_splits(
            w, "h200", profile="measured").best.splits)):
        start = time.perf_counter()
        for w in sample:
            choose(w)
        print(f"{label}: {(time.perf_counter() - start) / len(sample) * 1e3:.1f} ms a point "
              f"(mean of {len(sample)})")


COLUMNS = ("splits", "time_s", "memory_time_s", "compute_time_s", "hbm_read_bytes",
           "hbm_write_bytes")


def write_points(result: Any, path: str) -> None:
    """Every point's (batch, KV length) and splitkv's COLUMNS, floats as repr writes them."""
    grid = next(a for a in result.algorithms if a.name == "splitkv")
    spec_ = result.spec
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["batch", "n_kv", *COLUMNS])
        points = [(b, n) for b in spec_.batch for n in spec_.n_kv]  # batch is the slower axis
        for i, (b, n) in enumerate(points):
            out.writerow([b, n, *(repr(getattr(grid, c)[i].item()) for c in COLUMNS)])


if __name__ == "__main__":
    main()
