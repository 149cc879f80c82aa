"""The L2 model's result types and the rules its two forms share.

`dram_estimate` (l2.py, the closed form) and `simulate` (l2_simulate.py, the model itself) both
charge tiles by these rules; the model they implement is described in l2.py's docstring.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from iosim.algorithms.loopnest import (
    Access,
    Kernel,
)
from iosim.algorithms.traffic import Op, ReadWriteTotals
from iosim.inputs.hardware import Hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record

SHARED_COPIES = 2
"""Copies of a tile that programs on both L2 partitions read (see the module docstring).
Re-derived on data the forward's choice did not use, the Triton backward's H200 record
(benchmarks/NOTES.md, issue 10): of its 161 kernels of ≥ 50 MB, 14 / 6 / 3 / 6 / 12 fall outside
±10 % of ncu with 1 / 1.5 / 2 / 2.5 / 3 copies."""

Model = Literal["closed form", "simulation"]


class DramTerm(Record):
    """DRAM bytes of one (kernel, tensor, op), next to what the L2-oblivious count charges it."""

    kernel: str
    tensor: str
    op: Op
    bytes: int
    oblivious_bytes: int
    note: str


class DramEstimate(ReadWriteTotals, Record):
    """The L2-aware DRAM bytes of an algorithm's kernels: one DramTerm per (kernel, tensor, op),
    the L2 size (bytes) and concurrency they assume, and which form of the model made them."""

    terms: tuple[DramTerm, ...]
    l2_bytes: float
    concurrent_programs: int
    model: Model

    @property
    def oblivious_bytes(self) -> int:
        """The L2-oblivious count of the same accesses, in bytes."""
        return sum(t.oblivious_bytes for t in self.terms)

    @property
    def unmodelled_kernels(self) -> tuple[str, ...]:
        """Kernels charged their L2-oblivious count because the closed form does not cover them."""
        return tuple(dict.fromkeys(t.kernel for t in self.terms if t.note.startswith("not modelled")))

    def of_kernel(self, kernel: str) -> DramEstimate:
        """The estimate's terms of one kernel."""
        return DramEstimate(tuple(t for t in self.terms if t.kernel == kernel), self.l2_bytes,
                            self.concurrent_programs, self.model)


# ---------------------------------------------------------------------------------------------
# shared helpers


def programs_per_sm_estimate(workload: Workload, tiling: Tiling | None, hardware: Hardware) -> int:
    """Programs per SM of a tiled kernel whose shared memory holds Q_i and two stages of K_j, V_j.

    FlashAttention-2's kernels and Triton's pipeline K/V at least two deep; the calibration
    passes the count its compiled kernels really reach instead (registers and shared memory).
    """
    if tiling is None:
        return 1
    per_sm = hardware.sram_per_sm_bytes or hardware.sram_per_block_bytes
    shared = ((tiling.block_q + 2 * tiling.block_kv) * workload.d
              + 2 * tiling.block_kv * workload.d_v) * workload.element_bytes
    return max(1, int(per_sm // shared))


def modelled(kernel: Kernel) -> bool:
    """Whether the closed form covers the kernel: whole-tensor kernels; tiled kernels whose
    parallel programs only read inside their loop (FA2's forward, iosim's Triton dK/dV and dQ
    kernels: checked against ncu in reports/calibration-h200 and tests/data/backward-h200.json)
    or read-modify-write an accumulator of the other axis with atomics (FA2's backward dQaccum:
    tests/data/backward-h200-torch.json); kernels of one program per head that rewrite the
    other axis's tiles (Alg. 1's O_i, Alg. 4's dQ_i: the serial sweeps, checked against the
    simulation only: no FA1 kernel is measured). Split-KV programs and packed heads follow
    other schedules; they keep their L2-oblivious count, and say so."""
    if kernel.segments:
        return False  # a ragged launch: its own sizes, not the workload's
    if kernel.loop is None:
        return True
    return not (kernel.split or kernel.pack_heads)


def runs_serially(kernel: Kernel) -> bool:
    """Whether one program per head rewrites inner-axis tiles (Alg. 1's O_i, Alg. 4's dQ_i)."""
    return kernel.grid != "blocks" and any(
        a.where == "inner" and a.rows != kernel.loop and a.op == "write" for a in kernel.accesses)


def shared_tile(kernel: Kernel, access: Access) -> bool:
    """An inner-loop tile on the other axis, read (or atomically updated) by every parallel
    program of a head."""
    return (kernel.loop is not None and not runs_serially(kernel) and access.where == "inner"
            and access.rows != kernel.loop)


def accumulator(kernel: Kernel, access: Access) -> bool:
    """A shared tile the parallel programs also write (FA2's dQaccum, atomicAdd in L2)."""
    return shared_tile(kernel, access) and any(
        a.tensor == access.tensor and a.where == "inner" and a.op == "write"
        for a in kernel.accesses)


ACCUMULATOR_COPIES = 1
"""Copies of an atomically updated tile (FA2's dQaccum) in L2: one, at the line's home
partition, where the atomics are performed (the far partition's copies serve reads). Not fitted;
reports/backward-h200.md shows the estimate with 2 as well (SDPA kernels of ≥ 50 MB within
±10 %: 221 of 252 with 1, 230 with 2)."""


def copies_in_l2(kernel: Kernel, access: Access) -> int:
    """Copies of a tile the L2 holds: SHARED_COPIES for a shared read-only tile (one per L2
    partition), ACCUMULATOR_COPIES for an accumulator, one for a program's own tiles."""
    if not shared_tile(kernel, access):
        return 1
    return ACCUMULATOR_COPIES if accumulator(kernel, access) else SHARED_COPIES


def hit_fraction(alpha: Any, beta: Any, capacity: float) -> Any:
    """Fraction of x ∈ [0, 1] with alpha + beta·x ≤ capacity (a reuse distance linear in x).
    Floats, or float arrays (the same doubles: analysis/split_choice_grid.py)."""
    if isinstance(alpha, np.ndarray) or isinstance(beta, np.ndarray):
        alpha, beta = np.broadcast_arrays(np.asarray(alpha, dtype=np.float64),
                                          np.asarray(beta, dtype=np.float64))
        root = (capacity - alpha) / np.where(beta == 0, 1.0, beta)
        inside = np.where(beta > 0, root, 1.0 - root)
        return np.where(beta == 0, np.where(alpha <= capacity, 1.0, 0.0),
                        np.minimum(1.0, np.maximum(0.0, inside)))
    if beta == 0:
        return 1.0 if alpha <= capacity else 0.0
    root = (capacity - alpha) / beta
    inside = root if beta > 0 else 1.0 - root
    return min(1.0, max(0.0, inside))
