"""The L2 model's result types and the rules its two forms share.

`dram_estimate` (l2.py, the closed form) and `simulate` (l2_simulate.py, the model itself) both
charge tiles by these rules; the model they implement is described in l2.py's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from iosim.algorithms.loopnest import (
    Access,
    Kernel,
)
from iosim.algorithms.traffic import Op, ReadWriteTotals
from iosim.inputs.hardware import Hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload

SHARED_COPIES = 2
"""Copies of a tile that programs on both L2 partitions read (see the module docstring).
Re-derived on data the forward's choice did not use, the Triton backward's H200 record
(benchmarks/NOTES.md, issue 10): of its 161 kernels of ≥ 50 MB, 14 / 6 / 3 / 6 / 12 fall outside
±10 % of ncu with 1 / 1.5 / 2 / 2.5 / 3 copies."""

Model = Literal["closed form", "simulation"]


@dataclass(frozen=True, slots=True)
class DramTerm:
    """DRAM bytes of one (kernel, tensor, op), next to what the L2-oblivious count charges it."""

    kernel: str
    tensor: str
    op: Op
    bytes: int
    oblivious_bytes: int
    note: str


@dataclass(frozen=True, slots=True)
class DramEstimate(ReadWriteTotals):
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
    """Whether the closed form covers the kernel: whole-tensor kernels, the forward tiled
    kernels it was built for and checked against ncu (reports/calibration-h200), and backward
    tiled kernels whose parallel programs only read inside their loop (iosim's Triton dK/dV and
    dQ kernels: the forward's schedule with the axes swapped or not; checked against ncu in
    tests/data/backward-h200.json). FA1's and FA2's backward kernels (dQ read-modify-written
    from every key block's program: atomics), split-KV programs and packed heads follow other
    schedules; they keep their L2-oblivious count, and say so."""
    if kernel.segments:
        return False  # a ragged launch: its own sizes, not the workload's
    if kernel.loop is None:
        return True
    if kernel.split or kernel.pack_heads:
        return False
    if kernel.blocks == "forward" and kernel.tile is None:
        return True
    return not any(a.where == "inner" and a.op == "write" for a in kernel.accesses)


def runs_serially(kernel: Kernel) -> bool:
    """Whether the kernel rewrites inner-axis tiles (Alg. 1's O_i): one program per head."""
    return any(a.where == "inner" and a.rows != kernel.loop and a.op == "write"
               for a in kernel.accesses)


def shared_tile(kernel: Kernel, access: Access) -> bool:
    """An inner-loop tile on the other axis, read by every parallel program of a head."""
    return (kernel.loop is not None and not runs_serially(kernel) and access.where == "inner"
            and access.rows != kernel.loop)


def hit_fraction(alpha: float, beta: float, capacity: float) -> float:
    """Fraction of x ∈ [0, 1] with alpha + beta·x ≤ capacity (a reuse distance linear in x)."""
    if beta == 0:
        return 1.0 if alpha <= capacity else 0.0
    root = (capacity - alpha) / beta
    inside = root if beta > 0 else 1.0 - root
    return min(1.0, max(0.0, inside))
