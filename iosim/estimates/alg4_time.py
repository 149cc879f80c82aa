"""The time of Algorithm 4's fused kernel (the FA1 paper's backward): one program per head.

Algorithm 4 runs one program per (batch, head) that walks its head's visited tiles one after
another (key block j outer, query block i inner) and, at every tile, loads Q_i, O_i, dO_i, dQ_i,
l_i, m_i and writes dQ_i back before the next tile may read it (kernels_fa1_bwd.py: a barrier
between the store and the next load). A program is a chain of dependent tiles: it neither
overlaps one tile's loads with the previous tile's matmuls nor keeps more than one tile's loads
in flight, so its time is its tiles' count times one tile's latency, not the GPU's roofline
(measured on the H200: 1.5-3× flash1's roofline ÷ utilisation, reports/backward-h200.md):

    tile  = matmul FLOPs of a tile / ALG4_SOLO_FLOPS_PER_S
            + DRAM bytes of a tile / ALG4_PROGRAM_BYTES_PER_S
    time  = ⌈P / (S · k)⌉ · tiles per program · tile · (1 + ALG4_SHARED_SM_SLOWDOWN · (k − 1))

with P programs on S SMs, k = min(ALG4_PROGRAMS_PER_SM, ⌈P / S⌉) of them resident on an SM
(co-resident programs hide part of each other's latency but share the SM's issue slots: each
runs slower by the slowdown per extra program), and a tile's DRAM bytes the kernel's L2-aware
estimate (estimates/l2.py: the serial sweeps' re-fetches) over all tiles of all programs.
Every program of the kernel has the same length, causal or not (each walks a whole head).
Elementwise work and the masking of diagonal tiles are folded into the per-tile rates.

The constants are fitted (calibrate/fresh_bwd.py `fit_alg4_time`) on the Algorithm 4 points of
tests/data/backward-h200-fresh.json: the solo rate and per-program bandwidth on those of at
most one program per SM, the slowdown on the one of two; they are judged on a later fresh set
(reports/backward-h200.md), and kept in a hardware YAML's `measured.alg4_time`, where the
measured profile of `compare` and `sweep` reads them (estimates/roofline.py: `alg4_timed`).
"""

from __future__ import annotations

from iosim.algorithms.blocks import block_sums, cdiv
from iosim.algorithms.closedform import kernel_blocks
from iosim.algorithms.loopnest import Kernel
from iosim.inputs.hardware import Alg4Time
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record

__all__ = ["ALG4_PROGRAMS_PER_SM", "Alg4Shape", "Alg4Time", "alg4_fused_time_s", "alg4_kernel",
           "alg4_note", "alg4_shape"]


ALG4_PROGRAMS_PER_SM = {64: 2, 128: 1}
"""Programs of kernels_fa1_bwd's fused kernel one SM holds, by head dim (Fa1Tiles: 4 warps at
d = 64, 8 at d = 128; up to 255 registers a thread: 32,640 and 65,280 of an SM's 65,536)."""


def alg4_kernel(kernel: Kernel) -> bool:
    """Whether the model times the kernel (with a GPU's measured.alg4_time): a fused backward
    kernel of one program per head, flash1's (every other backward runs one per block)."""
    return (kernel.kind == "fused" and kernel.grid == "heads" and kernel.blocks == "backward"
            and kernel.tile is None)


def alg4_note(constants: Alg4Time) -> str:
    """The line saying that flash1's fused backward is timed by this model (a comparison
    prints it only where one of its algorithms runs that kernel)."""
    return ("flash1's fused backward (Alg. 4, one program per head) is timed by its per-tile "
            f"latency model, not its roofline: {constants.solo_flops_per_s / 1e12:g} TFLOP/s "
            f"and {constants.program_bytes_per_s / 1e9:g} GB/s a program, "
            f"+{constants.shared_sm_slowdown:.0%} per extra program on an SM "
            "(estimates/alg4_time.py; fitted at the kernel's 64 × 64 tiles)")


def tiles_per_program(kernel: Kernel, workload: Workload, tiling: Tiling | None) -> int:
    """Visited tiles of one head: the inner steps of all its key blocks (Σ program_steps),
    as the closed form of the visited block pairs (blocks.block_sums), so that compare answers
    at once at any N and block size (the list of steps has ⌈N/B_c⌉ entries)."""
    block_q, block_kv = kernel_blocks(kernel, tiling, workload.n, workload.n_kv)
    return int(block_sums(workload.n, workload.n_kv, block_q, block_kv, workload.causal).pairs)


def matmul_flops_per_tile(kernel: Kernel, workload: Workload, tiling: Tiling | None) -> float:
    """Matmul FLOPs of one B_r × B_c tile of the kernel (its loop nest's FLOP counts)."""
    block_q, block_kv = kernel_blocks(kernel, tiling, workload.n, workload.n_kv)
    width = {"score": 1, "score_d": workload.d, "score_dv": workload.d_v}
    return float(block_q * block_kv * sum(f.coefficient * width[f.per] for f in kernel.flops
                                          if f.kind == "matmul" and f.per in width))


class Alg4Shape(Record):
    """What the model needs of one launch of the fused kernel."""

    programs: int
    tiles: int
    """Visited tiles of one program (one head)."""
    flops_per_tile: float
    dram_bytes: float
    """The kernel's L2-aware DRAM bytes, all programs."""
    programs_per_sm: int

    def time_s(self, sm_count: int, constants: Alg4Time) -> float:
        """The kernel's time by the per-tile latency model (module docstring)."""
        if self.programs == 0 or self.tiles == 0:
            return 0.0
        tile_s = (self.flops_per_tile / constants.solo_flops_per_s
                  + self.dram_bytes / (self.programs * self.tiles) / constants.program_bytes_per_s)
        resident = int(min(self.programs_per_sm, cdiv(self.programs, sm_count)))
        waves = int(cdiv(self.programs, sm_count * resident))
        return waves * self.tiles * tile_s * (1 + constants.shared_sm_slowdown * (resident - 1))


def alg4_shape(kernel: Kernel, workload: Workload, tiling: Tiling | None,
               dram_bytes: float) -> Alg4Shape:
    """The fused kernel's launch as the model sees it."""
    return Alg4Shape(workload.batch * workload.heads, tiles_per_program(kernel, workload, tiling),
                     matmul_flops_per_tile(kernel, workload, tiling), dram_bytes,
                     ALG4_PROGRAMS_PER_SM.get(workload.d, 1))


def alg4_fused_time_s(kernel: Kernel, workload: Workload, tiling: Tiling | None,
                      dram_bytes: float, sm_count: int, constants: Alg4Time) -> float:
    """Algorithm 4's fused kernel's time by the per-tile latency model (module docstring)."""
    return alg4_shape(kernel, workload, tiling, dram_bytes).time_s(sm_count, constants)
