"""The time of FlashAttention-2's split-KV combine kernel (flash_fwd_splitkv_combine_kernel).

Its launch (flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h,
run_mha_fwd_splitkv_dispatch): `kBlockM = kHeadDim % 128 == 0 ? 4 : (kHeadDim % 64 == 0 ? 8 :
16)` rows per program, `grid_combine((b * h * seqlen_q + kBlockM - 1) / kBlockM)` programs of
`Kernel_traits::kNThreads` = 128 threads and no dynamic shared memory; ncu on the H200 recorded
grids of 8 (32 query heads decoding, d = 128) and 1,024 (one head × 4,096 rows) of 128 threads
(tests/data/h200-impl-launches.csv). Each program reads every split's log-sum-exp of its rows,
reduces them, then every split's fp32 partial output of them, and writes O.

So the kernel is latency-bound, not a bandwidth roof: a decode step's few programs each stream
their rows' partials at a per-program rate, after a fixed latency (the launch and the dependent
log-sum-exp pass), and a prefill's thousands of programs are held by the bandwidth they reach
together. Its time, with the three figures fitted per implementation on the kernel's device
times (torch.profiler) in the fit records (calibrate/impl_fit.py:fit_combine):

    latency + max(waves × bytes per program ÷ combine_program_bandwidth,
                  bytes ÷ (HBM bandwidth × combine_memory))

bytes being all the kernel loads and stores (the L2-oblivious count: whether L2 or DRAM serves
a load, the program waits for it), waves ⌈programs ÷ (PROGRAMS_PER_SM × SMs)⌉. A program's rate
scales with the elements each of its threads loads at once, kBlockM × d ÷ 128 (4 at d = 64 and
128, the fit's head dims; 8 at d = 256, where kBlockM stays 4): `elements_in_flight`. Measured
(torch.profiler, seen records): d = 256 decode steps stream 15-23 GB/s per program against
10-12 GB/s at d = 128 (validation3 point 36: 21.5 µs where one rate for all head dims
predicted 40). The roofline
charged it its DRAM bytes, about nothing where the partials are read back from L2: 0.0-2.2 µs
against 3.6-24 µs measured.

cuDNN's lean decode (analysis/stream_k.py) runs its own reduction,
`cudnn::fusion::lean_reduction_kernel`, timed by the same three figures fitted on its times.
Round cudnn11 tried it without FA2's rows-per-program rule (`in_flight=False`: the rate not
doubled at d 256): on the seen d 256 reductions (17, 2.9-7.2 µs) median |error| 33 → 20 %
(python benchmarks/cudnn11_reduction.py), on the fresh CUDNNFRESH11 no better (the 7 at d 256:
median 12 % both, worst 35 → 52 %; reports/impl-validation/cudnn11-fresh.md). Not shipped:
every implementation's combine keeps the rule; `in_flight` stays an option of this function.
"""

from __future__ import annotations

from collections.abc import Mapping

from iosim.inputs.ints import cdiv
from iosim.inputs.workload import Workload

KERNEL = "splitkv_combine"
THREADS = 128
"""Kernel_traits::kNThreads of every forward kernel trait the split path uses (4 warps)."""
PROGRAMS_PER_SM = 2048 // THREADS
"""Resident programs per SM: 2,048 threads per SM on sm80/sm90, the kernel's registers and
static shared memory (kBlockM × (kMaxSplits + 1) floats) well within the SM's."""
TERMS = ("combine_latency_s", "combine_program_bandwidth", "combine_memory")
"""The fitted figures (measured.impls.NAME), all three or none."""


def rows_per_program(d: int) -> int:
    """kBlockM of the combine kernel at head dim d (the module docstring)."""
    return 4 if d % 128 == 0 else 8 if d % 64 == 0 else 16


REFERENCE_ELEMENTS = 4
"""Elements per thread at which combine_program_bandwidth is quoted (d = 64 and 128)."""


def elements_in_flight(d: int) -> float:
    """Elements of a row tile each of the kernel's threads loads: kBlockM × d ÷ THREADS."""
    return rows_per_program(d) * d / THREADS


def combine_programs(workload: Workload) -> int:
    """The combine kernel's grid: ⌈batch × heads × query rows ÷ kBlockM⌉ (decoding packs a
    group's heads into rows, which leaves the product b·h·n unchanged)."""
    rows = workload.batch * workload.heads * workload.n
    return int(cdiv(rows, rows_per_program(workload.d)))


def combine_time_s(workload: Workload, kernel_bytes: float, sm_count: int,
                   hbm_bandwidth: float, terms: Mapping[str, float], *,
                   in_flight: bool = True) -> float:
    """The combine kernel's time under the fitted `terms` (the module docstring); `in_flight`
    False: the per-program rate stays at the fitted one at every head dim (cuDNN's reduction)."""
    programs = combine_programs(workload)
    waves = cdiv(programs, PROGRAMS_PER_SM * sm_count)
    boost = max(1.0, elements_in_flight(workload.d) / REFERENCE_ELEMENTS) if in_flight else 1.0
    rate = terms["combine_program_bandwidth"] * boost
    streamed = waves * kernel_bytes / programs / rate
    together = kernel_bytes / (hbm_bandwidth * terms["combine_memory"])
    return float(terms["combine_latency_s"] + max(streamed, together))
