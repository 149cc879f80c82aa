"""Occupancy and waves: how many programs an SM holds at once, and what a partial wave costs.

The roofline times assume the whole GPU is busy. A kernel of P programs (CTAs) on S SMs, each
holding c of them at once (its occupancy), runs in ⌈P / (c·S)⌉ waves; an SM reaches its full
rate only with c programs resident (c is the occupancy the kernel was built for: fewer resident
programs hide less latency), so a program takes one wave's time whether its wave is full or
not. The kernel's time is therefore its full-GPU roofline time divided by

    utilisation u = P / (⌈P / (c·S)⌉ · c·S)       (1 when the waves are full)

and a grid of 13 programs on 108 SMs (c = 1) runs at 13/108 of the GPU's rate. c comes from the
per-SM limits of the kernel's resources (shared memory, registers, threads, resident blocks) as
CUDA's occupancy calculator computes it.

Per-SM limits, CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
65,536 32-bit registers per SM (every 7.x-9.x part); 2,048 resident threads per SM on 7.0, 8.0,
9.0 and 10.0 (1,024 on 7.5, 1,536 on 8.6/8.9); 32 resident blocks per SM on 7.x/8.0/9.0/10.0
(16 on 7.5 and 8.6, 24 on 8.9). Ints or arrays throughout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from iosim.inputs.ints import Int, cdiv, imax, imin

REGISTERS_PER_SM = 65536
DEFAULT_THREADS_PER_SM = 2048
DEFAULT_BLOCKS_PER_SM = 32


def compute_capability(architecture: str | None) -> int:
    """80 from a hardware YAML's architecture text such as 'Ampere (sm_80)' (0 if none)."""
    found = re.search(r"sm_?(\d{2,3})", architecture or "")
    return int(found.group(1)) if found else 0


@dataclass(frozen=True, slots=True)
class SmLimits:
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


def programs_per_sm(limits: SmLimits, *, shared_bytes: Int, warps: Int,
                    registers_per_thread: Int = 0) -> Int:
    """Programs one SM holds at once: the tightest of its shared memory, threads, registers
    (0 = not declared: not a limit) and resident-block limits; at least 1 (a program that
    launches at all runs one at a time). Ints or arrays."""
    threads = 32 * imax(warps, 1)
    by_smem = limits.shared_bytes // imax(shared_bytes, 1)
    by_threads = limits.threads // threads
    by_regs = np.where(np.asarray(registers_per_thread) > 0,
                       limits.registers // imax(np.asarray(registers_per_thread) * threads, 1),
                       limits.blocks)
    per_sm = imax(imin(imin(imin(by_smem, by_threads), by_regs), limits.blocks), 1)
    return per_sm if isinstance(per_sm, np.ndarray) else int(per_sm)


def waves(programs: Int, per_sm: Int, sm_count: Int) -> Int:
    """⌈P / (c·S)⌉: the waves of a grid."""
    return cdiv(programs, imax(per_sm * sm_count, 1))


def utilisation(programs: Any, per_sm: Any, sm_count: Any) -> Any:
    """u = P / (⌈P/(c·S)⌉·c·S), the share of the GPU's rate a grid reaches over its waves; 1
    where the grid or the SM count is unknown (0 or None). Floats or float arrays."""
    if programs is None or sm_count is None:
        return 1.0
    p = np.asarray(programs, dtype=np.float64)
    slots = np.asarray(per_sm, dtype=np.float64) * np.asarray(sm_count, dtype=np.float64)
    known = (p > 0) & (slots > 0)
    safe_slots = np.where(known, slots, 1.0)
    u = np.where(known, p / (np.ceil(p / safe_slots) * safe_slots), 1.0)
    return float(u) if u.ndim == 0 else u
