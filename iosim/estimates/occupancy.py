"""Occupancy and waves: how many programs an SM holds at once, and what a partial wave costs.

The roofline times assume the whole GPU is busy. A kernel of P programs (CTAs) on S SMs, each
holding c of them at once (its occupancy: shared memory, registers, threads and resident-block
limits, as CUDA's occupancy calculator computes it), runs in ⌈P / (c·S)⌉ waves. Its time is its
full-GPU roofline time divided by the utilisation

    u = P / (S · ⌈P / S⌉)      (1 when every SM gets the same number of programs)

because an SM reaches its full rate with one resident program and shares it among the
programs it holds: the busiest SM runs ⌈P/S⌉ programs' work while the GPU's rate assumes P/S.
That is what the H200 measured (tests/data/h200-impl-validation.json): FlashAttention-2 with
128 programs on 132 SMs, 2 per SM possible, ran at the full-GPU rate (points 1, 16), and a grid
of 13 programs on 108 SMs runs at 13/108 of the GPU's rate. So c sets the waves the output
reports and how many programs are resident, not the rate (a model where an SM needs c programs
to reach its rate predicted those points 2× too slow).

One schedule underlies every estimate: the programs of a launch, in grid order, each to the
first free slot (`makespan`, the list schedule). For the forward's utilisation a slot is an SM,
whose full rate one program reaches, so u = W / (S · makespan) with W the programs' work: for P
equal programs the makespan is ⌈P/S⌉ programs and u above is its exact closed form
(tests/test_occupancy.py holds the two equal); for causal grids the closed form below is within
3 % of it. The fitted time of iosim's Triton backward (estimates/schedule.py) runs the same
schedule program by program, on its own slots (programs per SM of them per SM, each at that
share of the SM's rate: the rule its record supports; that module says where the two differ).

Causal kernels' programs are unequal: query block i of a causal FlashAttention-2 forward visits
about i + 1 key blocks, and the grid launches the blocks of a head in ascending order, so the
longest programs come last. Their list schedule ends at about

    makespan ≈ W/S + 0.62 · ℓ_max      (P > S;  ℓ_max when P ≤ S)

in units of one key block's step, W the steps of all programs and ℓ_max those of the longest;
the 0.62 was read off the exact list schedule over triangular grids of 128-2,048 programs on 132
SMs (3 % at most; tests/test_occupancy.py holds it to the schedule), and u = W / (S · makespan).

Per-SM limits, CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
65,536 32-bit registers per SM (every 7.x-9.x part); 2,048 resident threads per SM on 7.0, 8.0,
9.0 and 10.0 (1,024 on 7.5, 1,536 on 8.6/8.9); 32 resident blocks per SM on 7.x/8.0/9.0/10.0
(16 on 7.5 and 8.6, 24 on 8.9). Ints or arrays throughout.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.estimates.lone_prologue import lone_rate
from iosim.inputs.ints import Int, cdiv, imax, imin
from iosim.record import Record

REGISTERS_PER_SM = 65536
DEFAULT_THREADS_PER_SM = 2048
DEFAULT_BLOCKS_PER_SM = 32


def compute_capability(architecture: str | None) -> int:
    """80 from a hardware YAML's architecture text such as 'Ampere (sm_80)' (0 if none)."""
    found = re.search(r"sm_?(\d{2,3})", architecture or "")
    return int(found.group(1)) if found else 0


class SmLimits(Record):
    """What one SM holds: shared memory (bytes), registers, threads and resident blocks."""

    shared_bytes: int
    registers: int = REGISTERS_PER_SM
    threads: int = DEFAULT_THREADS_PER_SM
    blocks: int = DEFAULT_BLOCKS_PER_SM



def sm_limits(shared_per_sm: Int, cc: Int) -> SmLimits:
    """SmLimits for a compute capability given as an int (80; 0 = unknown), ints or arrays."""
    code = np.asarray(cc)
    threads = np.select([code == 75, (code == 86) | (code == 89)], [1024, 1536],
                        DEFAULT_THREADS_PER_SM)
    blocks = np.select([(code == 75) | (code == 86), code == 89], [16, 24], DEFAULT_BLOCKS_PER_SM)
    if code.ndim == 0:
        return SmLimits(shared_per_sm, REGISTERS_PER_SM, int(threads), int(blocks))
    return SmLimits(shared_per_sm, REGISTERS_PER_SM, threads, blocks)  # type: ignore[arg-type]


RESERVED_SHARED_BYTES = 1024
"""Shared memory the driver reserves per block on compute capability 8.x/9.x (CUDA C++
Programming Guide, "Shared Memory", cudaDevAttrReservedSharedMemoryPerBlock)."""
REGISTER_GRANULE = 8
"""Registers are allocated to a thread 8 at a time (the occupancy calculator's granularity)."""


def programs_per_sm(limits: SmLimits, *, shared_bytes: Int, warps: Int,
                    registers_per_thread: Int = 0) -> Int:
    """Programs one SM holds at once: the tightest of its shared memory (each block's plus the
    reserved 1 KiB), threads, registers (rounded up to 8 per thread; 0 = not declared: not a
    limit) and resident-block limits; at least 1 (a program that launches at all runs one at a
    time). Ints or arrays."""
    threads = 32 * imax(warps, 1)
    by_smem = limits.shared_bytes // (imax(shared_bytes, 0) + RESERVED_SHARED_BYTES)
    by_threads = limits.threads // threads
    regs = -(-np.asarray(registers_per_thread) // REGISTER_GRANULE) * REGISTER_GRANULE
    by_regs = np.where(regs > 0, limits.registers // imax(regs * threads, 1), limits.blocks)
    per_sm = imax(imin(imin(imin(by_smem, by_threads), by_regs), limits.blocks), 1)
    return per_sm if isinstance(per_sm, np.ndarray) and per_sm.ndim else int(per_sm)


CAUSAL_TAIL = 0.62
"""The launch-order tail of ascending causal programs, in units of the longest (see above)."""


def causal_utilisation(programs: Any, steps: Any, longest: Any, sm_count: Any) -> Any:
    """u of P programs of `steps` key-block steps in total, the longest `longest` steps,
    launched shortest first on `sm_count` SMs: W / (S · makespan) with the makespan above.
    Floats or float arrays; 1 where the SM count is unknown."""
    if sm_count is None:
        return 1.0
    p, w, lmax = (np.asarray(v, dtype=np.float64) for v in (programs, steps, longest))
    sms = np.asarray(sm_count, dtype=np.float64)
    known = (p > 0) & (sms > 0) & (lmax > 0)
    safe = np.where(known, sms, 1.0)
    span = np.where(p <= safe, lmax, np.maximum(lmax, w / safe + CAUSAL_TAIL * lmax))
    u = np.where(known, w / (safe * np.where(known, span, 1.0)), 1.0)
    u = np.minimum(u, 1.0)
    return float(u) if u.ndim == 0 else u


def waves(programs: Int, per_sm: Int, sm_count: Int) -> Int:
    """⌈P / (c·S)⌉: the waves of a grid."""
    return cdiv(programs, imax(per_sm * sm_count, 1))


def utilisation(programs: Any, sm_count: Any) -> Any:
    """u = P / (S·⌈P/S⌉), the share of the GPU's rate a grid reaches; 1 where the grid or the
    SM count is unknown (0 or None). Floats or float arrays."""
    if programs is None or sm_count is None:
        return 1.0
    p = np.asarray(programs, dtype=np.float64)
    sms = np.asarray(sm_count, dtype=np.float64)
    known = (p > 0) & (sms > 0)
    safe = np.where(known, sms, 1.0)
    u = np.where(known, p / (np.ceil(p / safe) * safe), 1.0)
    return float(u) if u.ndim == 0 else u


def makespan(lengths: Sequence[float], slots: int) -> float:
    """The list schedule of programs in launch order on `slots` slots, each program to the
    first slot free (the model above): when the last one ends."""
    if len(lengths) <= slots:
        return max(lengths, default=0.0)
    if min(lengths) == max(lengths):
        return -(-len(lengths) // slots) * lengths[0]
    free = [0.0] * slots
    for length in lengths:
        heapq.heappush(free, heapq.heappop(free) + length)
    return max(free)


def lone_program_time(time_s: float, bound: str, programs: int, per_sm: int, sm_count: int,
                      memory_bytes: float, solo_rate: float | None,
                      program_bandwidth: float | None, *, memory_s: float = 0.0,
                      compute_s: float = 0.0, solo_rate_one: float | None = None,
                      prologue_s: float = 0.0) -> float:
    """A kernel's time with the two limits of programs that have an SM to themselves.

    Compute: a grid of at most one program per SM (P ≤ S) leaves each SM one program, which
    cannot hide its own latencies (the softmax between its matmuls, its loads) behind another's:
    the SM runs at `solo_rate` of the rate it reaches when busy, so the time is divided by it
    (fitted per implementation: calibrate/impl_fit.py). Memory: DRAM bandwidth is shared by
    the whole GPU, not split per SM, so a memory-bound kernel is not slowed by its waves'
    utilisation but by what each program can stream: one program moves at most
    `program_bandwidth` bytes/s (the bytes it keeps in flight over the DRAM latency; the H200's
    4-warp stream reaches 16.5 GB/s alone, 8 warps 32 GB/s, against 35 GB/s per SM when all are
    busy: tests/data/h200-sm-bandwidth.json), so the kernel takes the longer of its memory
    roof (`memory_s`, the GPU's bandwidth at the implementation's efficiency) and its busiest
    SM's waves ⌈P / (c·S)⌉ times one program's bytes over it (and at least its compute,
    `compute_s`, already ÷ u) — what a split-KV pass of a few hundred programs and its combine
    kernel of one program per KV head meet. None: no such limit, `time_s` as given."""
    if programs <= 0 or sm_count <= 0:
        return time_s
    if solo_rate is not None and bound == "compute" and programs <= sm_count:
        time_s = time_s / lone_rate(per_sm, solo_rate, solo_rate_one) + prologue_s
    if program_bandwidth is not None and bound == "memory":
        waves = -(-programs // max(per_sm * sm_count, 1))
        floor = waves * memory_bytes / programs / program_bandwidth
        time_s = max(memory_s, compute_s, floor)
    return time_s
