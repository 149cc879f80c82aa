"""Time of `compare(..., profile="measured")` of sdpa-flash's profile with the descending walk
(estimates/l2_launch_walk.py; benchmarks/descending_fit.py's profile(walk=True): the shipped
profile does not declare it), in one process after a first call (the YAML caches warm).

    python benchmarks/descending_speed.py [--runs 5]

Issue 11 asks compare to answer well under a second. The shapes: the seen record's heaviest
(CAUSALPROBE7's 2 × 73,728 and 8 × 40,960), 64/8 heads at 65,536 (the walk stops at
MAX_STEPS and repeats its last GQA period), 8 × 262,144 (beyond walk_fits: the ascending closed
form) and 128 × 4,096 × 4.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.descending_fit import profile
from iosim.analysis.compare import compare
from iosim.inputs.workload import Workload

SHAPES = (Workload(73728, d=128, heads=2, causal=True), Workload(40960, d=128, heads=8,
                                                                 causal=True),
          Workload(65536, d=128, heads=64, kv_heads=8, causal=True),
          Workload(262144, d=128, heads=8, causal=True),
          Workload(4096, d=128, heads=128, batch=4, causal=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    impl = profile(walk=True)
    for w in SHAPES:
        compare(w, "h200", impl=impl, profile="measured")
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            compare(w, "h200", impl=impl, profile="measured")
            times.append(time.perf_counter() - start)
        print(f"b{w.batch} h{w.heads}/{w.kv_heads} N {w.n}: median "
              f"{statistics.median(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms "
              f"over {args.runs} calls", flush=True)


if __name__ == "__main__":
    main()
