"""Speed of a measured-profile sweep of 10,000 grid points (issue 11 item 4's target: < 30 s).

    python benchmarks/sweep_measured_speed.py            # 3 runs, prints each and the median
    python benchmarks/sweep_measured_speed.py backward   # the training-step grid below
    python benchmarks/sweep_measured_speed.py decode     # the decoding grid below

The measured profile's memory roof charges the L2-aware DRAM estimate, computed point by point
(iosim/analysis/sweep_measured.py); the rest of the sweep stays vectorised. Grid: 50 N × 2 d ×
5 heads × 5 batch × 2 masks × 2 dtypes = 10,000 forward points on the H200 (the shipped GPU with a measured
section), the default algorithms (standard, flash1, flash2): 30,000 rows. `backward`: the same
N, d, heads, batch and masks for a training step (fwd + bwd, fp16), with iosim's Triton kernels
too, whose backward is timed by the fitted list schedule (estimates/schedule.py; a sweep
schedules all its points at once, estimates/list_schedule.py): 10,000 points, 40,000 rows.
`decode`: one query row over 100 KV lengths (1,000-131,072) × batch 1-25 × 4 head layouts (MHA
8/8 and 16/16, GQA 32/8, MQA 16/1), d 128, fp16, the standard path, flash2 and splitkv at FA2's
split heuristic: 10,000 points, 30,000 rows.
Wall and CPU seconds are printed (this machine
is shared: the CPU figure is the one that does not depend on the load). The figures go into
docs/sweeps-benchmarks.md.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time

import numpy as np

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

DECODE_LENGTHS = tuple(int(v) for v in np.unique(np.geomspace(1000, 131072, 100).astype(int)))
DECODE_HEADS = ((8, 8), (16, 16), (32, 8), (16, 1))


def decode_spec(heads: int, kv_heads: int) -> SweepSpec:
    """One head layout of the decoding grid (heads and KV heads vary together: a sweep's axes
    are a product, so each layout is its own sweep; `main` runs the four)."""
    return SweepSpec(n=(1,), n_kv=DECODE_LENGTHS, d=(128,), heads=(heads,), kv_heads=(kv_heads,),
                     batch=tuple(range(1, 26)), gpu=("h200",),
                     algorithms=("standard", "flash2", "splitkv"), profile="measured")


def main(which: str = "forward", runs: int = 3) -> None:
    specs = ([decode_spec(h, kv) for h, kv in DECODE_HEADS] if which == "decode"
             else [{"forward": FORWARD, "backward": BACKWARD}[which]])
    assert sum(s.points for s in specs) == 10_000
    sweep(SweepSpec(n=(1024,), gpu=("h200",), profile="measured"))  # imports, YAML loading
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        results = [sweep(s) for s in specs]
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        points, algorithms = sum(r.points for r in results), len(results[0].algorithms)
        print(f"{which}: {points:,} points × {algorithms} algorithms, "
              f"measured profile: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} s CPU", flush=True)
    print(f"median {statistics.median(walls):.1f} s wall, {statistics.median(cpus):.1f} s CPU "
          f"(Python {platform.python_version()}, {platform.machine()}; target < 30 s)")


if __name__ == "__main__":
    main(*sys.argv[1:2])
