"""Speed of a closed-form sweep of 1,000,000 grid points (the issue-5 target: < 2 s, no plotting).

    python benchmarks/sweep_bench.py            # 5 runs, prints each and the median

Grid: 20 N × 10 B_c × 5 B_r × 5 d × 4 GPUs × 5 heads × 5 batch × 2 masks = 1,000,000 points,
all three algorithms (3,000,000 rows), the roofline time of every kernel, SRAM fit marks. The figure
goes into the README (section "sweep / plots / report").
"""

from __future__ import annotations

import platform
import statistics
import time

import numpy as np

from iosim.analysis.sweep import SweepSpec, sweep

SPEC = SweepSpec(
    n=tuple(range(512, 10241, 512)),                          # 20
    block_kv=(None, 16, 32, 48, 64, 96, 128, 256, 512, 1024),  # 10
    block_q=(None, 32, 64, 128, 256),                         # 5
    d=(32, 64, 96, 128, 256),                                 # 5
    gpu=("a100", "h100", "h200", "l4"),                       # 4
    heads=(1, 8, 16, 32, 64),                                 # 5
    batch=(1, 4, 16, 64, 128),                                # 5
    causal=(False, True),                                     # 2
)


def main(runs: int = 5) -> None:
    assert SPEC.points == 1_000_000
    sweep(SweepSpec(n=(1024,), gpu=("a100",)))  # imports and YAML loading out of the timing
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = sweep(SPEC)
        times.append(time.perf_counter() - start)
        print(f"{result.points:,} points × {len(result.algorithms)} algorithms: "
              f"{times[-1]:.2f} s")
    print(f"median {statistics.median(times):.2f} s, best {min(times):.2f} s "
          f"(numpy {np.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()})")


if __name__ == "__main__":
    main()
