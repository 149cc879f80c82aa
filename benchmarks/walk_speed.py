"""Speed of the tile walk: one head at N = 16,384, d = 64, fp16, the default A100 tiling.

Target (issue 4): under 2 s. Run from the repository root:

    python benchmarks/walk_speed.py

The tiling is `iosim compare`'s for --gpu a100 (Alg. 1 line 1 from the A100's 163 KiB per block:
flash1 B_r × B_c = 64 × 326, flash2 326 × 64). Each figure is the best of 5 runs; `walk` is
consumed to the end (every TileAccess built) and its bytes summed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.tilestream import walk_arrays
from iosim.algorithms.tilewalk import walk
from iosim.analysis.compare import tiling_for
from iosim.analysis.requests import sram_budget
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.workload import Workload

TARGET_S = 2.0
REPEATS = 5


def best_of(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    hardware = resolve_hardware("a100").hardware
    worst = 0.0
    print(f"{'algorithm':<10} {'mask':<11} {'blocks':>8} {'accesses':>9} {'walk':>8} "
          f"{'walk_arrays':>12}")
    for causal in (False, True):
        workload = Workload(16384, d=64, causal=causal)
        sram, source = sram_budget(hardware, workload.element_bytes)
        for name in ("standard", "flash1", "flash2"):
            algorithm = ALGORITHMS[name]
            tiling = tiling_for(algorithm, workload, sram, source)
            kernels = algorithm.kernels(workload)
            count = sum(1 for _ in walk(kernels, workload, tiling))
            t_walk = best_of(lambda k=kernels, t=tiling, w=workload:
                             sum(a.bytes for a in walk(k, w, t)))
            t_arrays = best_of(lambda k=kernels, t=tiling, w=workload:
                               walk_arrays(k, w, t).bytes.sum())
            worst = max(worst, t_walk, t_arrays)
            blocks = "—" if tiling is None else f"{tiling.block_q}×{tiling.block_kv}"
            print(f"{name:<10} {'causal' if causal else 'non-causal':<11} {blocks:>8} {count:>9,} "
                  f"{t_walk:>7.3f}s {t_arrays:>11.4f}s")
    verdict = "within" if worst < TARGET_S else "OVER"
    print(f"slowest: {worst:.3f} s ({verdict} the {TARGET_S:g} s target)")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
