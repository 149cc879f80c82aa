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
(reports/backward-h200.md).
"""

from __future__ import annotations

from iosim.algorithms.blocks import cdiv
from iosim.algorithms.closedform import kernel_blocks
from iosim.algorithms.loopnest import Kernel
from iosim.estimates.schedule import program_steps
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record


class Alg4Time(Record):
    """The fitted constants of Algorithm 4's per-tile latency model (none is a hardware fact)."""

    solo_flops_per_s: float
    """Matmul FLOP/s of one program walking its tiles alone on an SM."""
    program_bytes_per_s: float
    """DRAM bytes/s one program streams (one tile's loads in flight at a time)."""
    shared_sm_slowdown: float
    """Per extra program resident on the same SM, the fraction each program runs slower."""


ALG4_TIME = Alg4Time(1.15e12, 1.02e11, 0.33)
"""Fitted by `fit_alg4_time` (calibrate/fresh_bwd.py) on tests/data/backward-h200-fresh.json."""
ALG4_PROGRAMS_PER_SM = {64: 2, 128: 1}
"""Programs of kernels_fa1_bwd's fused kernel one SM holds, by head dim (Fa1Tiles: 4 warps at
d = 64, 8 at d = 128; up to 255 registers a thread: 32,640 and 65,280 of an SM's 65,536)."""


def tiles_per_program(kernel: Kernel, workload: Workload, tiling: Tiling | None) -> int:
    """Visited tiles of one head: the inner steps of all its key blocks."""
    return sum(program_steps(kernel, workload, tiling))


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

    def time_s(self, sm_count: int, constants: Alg4Time = ALG4_TIME) -> float:
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
                      dram_bytes: float, sm_count: int, constants: Alg4Time = ALG4_TIME) -> float:
    """Algorithm 4's fused kernel's time by the per-tile latency model (module docstring)."""
    return alg4_shape(kernel, workload, tiling, dram_bytes).time_s(sm_count, constants)
