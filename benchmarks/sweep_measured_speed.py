"""Speed of a measured-profile sweep of 10,000 grid points (issue 11 item 4's target: < 30 s).

    python benchmarks/sweep_measured_speed.py            # 3 runs, prints each and the median
    python benchmarks/sweep_measured_speed.py backward   # the training-step grid below

The measured profile's memory roof charges the L2-aware DRAM estimate, computed point by point
(iosim/analysis/sweep_measured.py); the rest of the sweep stays vectorised. Grid: 50 N × 2 d ×
5 heads × 5 batch × 2 masks × 2 dtypes = 10,000 forward points on the H200 (the shipped GPU with a measured
section), the default algorithms (standard, flash1, flash2): 30,000 rows. `backward`: the same
N, d, heads, batch and masks for a training step (fwd + bwd, fp16), with iosim's Triton kernels
too, whose backward is timed by the fitted list schedule (estimates/schedule.py; a sweep
schedules all its points at once, estimates/list_schedule.py): 10,000 points, 40,000 rows.
Wall and CPU seconds are printed (this machine
is shared: the CPU figure is the one that does not depend on the load). The figures go into
docs/sweeps-benchmarks.md.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time

from iosim.analysis.sweep import SweepSpec, sweep

FORWARD = SweepSpec(
    n=tuple(range(256, 12801, 256)),          # 50
    d=(64, 128),                              # 2
    heads=(1, 8, 16, 32, 64),                 # 5
    batch=(1, 4, 16, 64, 128),                # 5
    causal=(False, True),                     # 2
    dtype=("fp16", "bf16"),                   # 2
    gpu=("h200",),
    profile="measured",
)
BACKWARD = SweepSpec(
    n=tuple(range(256, 12801, 256)),          # 50
    d=(64, 128),                              # 2
    heads=(1, 8, 16, 32, 64),                 # 5
    batch=(1, 4, 16, 64, 128),                # 5
    causal=(False, True),                     # 2
    pass_=("fwd", "fwdbwd"),                  # 2
    gpu=("h200",),
    algorithms=("standard", "flash1", "flash2", "triton"),
    profile="measured",
)


def main(which: str = "forward", runs: int = 3) -> None:
    spec = {"forward": FORWARD, "backward": BACKWARD}[which]
    assert spec.points == 10_000
    sweep(SweepSpec(n=(1024,), gpu=("h200",), profile="measured"))  # imports, YAML loading
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        result = sweep(spec)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        print(f"{which}: {result.points:,} points × {len(result.algorithms)} algorithms, "
              f"measured profile: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} s CPU", flush=True)
    print(f"median {statistics.median(walls):.1f} s wall, {statistics.median(cpus):.1f} s CPU "
          f"(Python {platform.python_version()}, {platform.machine()}; target < 30 s)")


if __name__ == "__main__":
    main(*sys.argv[1:2])
