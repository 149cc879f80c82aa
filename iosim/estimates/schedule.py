"""Compute time of a tiled kernel by scheduling its programs, as fitted on iosim's Triton backward.

A GPU's block scheduler hands the programs of a launch, in grid order, to the first free slot
(SM count × programs per SM). A program of s inner steps takes

    s · (matmul FLOPs per step / matmul peak + elementwise FLOPs per step / vector rate)
      · slots / efficiency  +  overhead

(the step at the whole GPU's rate shared among the slots; the overhead is its prologue, epilogue
and pipeline fill), and the kernel's compute time is the makespan of that list schedule. It sees
what a plain roofline does not: fewer programs than slots, the last partial wave, and causal
programs of unequal length. The efficiency and overhead are fitted on the H200 backward record
(calibrate/backward_fit.py) and kept in a hardware YAML's `measured.backward_schedule`.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Sequence

from iosim.algorithms.blocks import cdiv, visited_kv_blocks
from iosim.algorithms.closedform import kernel_blocks
from iosim.algorithms.loopnest import Kernel
from iosim.inputs.hardware import BackwardSchedule
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload


def makespan(lengths: Sequence[float], slots: int) -> float:
    """Programs in launch order, each taking the first free slot."""
    if len(lengths) <= slots:
        return max(lengths, default=0.0)
    if min(lengths) == max(lengths):
        return -(-len(lengths) // slots) * lengths[0]
    free = [0.0] * slots
    for length in lengths:
        heapq.heappush(free, heapq.heappop(free) + length)
    return max(free)


def program_steps(kernel: Kernel, workload: Workload, tiling: Tiling | None) -> list[int]:
    """Inner steps of each program of one head, in launch order (outer block order)."""
    n_q, n_kv = workload.n, workload.n_kv
    block_q, block_kv = kernel_blocks(kernel, tiling, n_q, n_kv)
    n_i = visited_kv_blocks(n_q, n_kv, block_q, block_kv, workload.causal)
    if kernel.loop == "q":
        return list(n_i)
    return [len(n_i) - bisect_right(n_i, j) for j in range(cdiv(n_kv, block_kv))]


def scheduled_compute_s(kernel: Kernel, workload: Workload, tiling: Tiling | None, schedule: BackwardSchedule,
                        *, sm_count: int, matmul_peak: float, vector_peak: float) -> float:
    """The kernel's compute time by the list schedule (see the module docstring)."""
    block_q, block_kv = kernel_blocks(kernel, tiling, workload.n, workload.n_kv)
    tile = block_q * block_kv
    width = {"score": 1, "score_d": workload.d, "score_dv": workload.d_v}
    matmul = sum(f.coefficient * width[f.per]
                 for f in kernel.flops if f.kind == "matmul" and f.per in width)
    elementwise = sum(f.coefficient for f in kernel.flops
                      if f.kind == "elementwise" and f.per == "score")
    slots = sm_count * schedule.per_sm(workload.d)
    step_s = (matmul * tile / matmul_peak + elementwise * tile / vector_peak) * slots
    lengths = [s * step_s / schedule.efficiency + schedule.program_overhead_s
               for s in program_steps(kernel, workload, tiling)]
    return makespan(lengths * (workload.batch * workload.heads), slots)
