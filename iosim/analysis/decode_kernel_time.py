"""The decoding time model of one kernel: what a decoding step's kernel takes beyond the roofline
of `compare` (the launch, the ramp, L2 hits at the L2's rate, each split program's walk over its key
blocks). analysis/decode_time.py applies it to split-KV and cascade at each split count.

Each kernel k of an estimate (compare's counts at the kernels' own tiles and split counts):

    T_k = t_launch + t_ramp + √(S_k² + C_k²)
    S_k = max(B_DRAM / (η·BW_HBM) + (B_L2 − B_DRAM) / (η·BW_L2), F_mm / P_mm + F_el / P_el)
    C_k = W_k · n_k · (t_block + F_block / r_mma · (1 + κ·(c_k − 1)))

  t_launch  one launch inside a CUDA graph, measured with empty kernels back to back
            (measured.launch_overhead; calibrate/decode_microbench.py). Cascade launches three
            kernels, split-KV one or two: at a small batch this is most of the difference.
  B_DRAM    the L2-aware DRAM estimate of the kernel (estimates/l2.py with shared_prefix_dram's
            rule: a shared prefix comes from DRAM once), over the measured HBM bandwidth.
  B_L2      every load and store of the kernel, which all pass through L2: the L2-oblivious
            count; B_L2 − B_DRAM of it hits in L2, at the L2's read rate measured by a
            microbenchmark (measured.l2_bandwidth). The two times add: a load waiting on DRAM
            holds its slot as long as DRAM's latency, one hitting in L2 as long as L2's.
  F         the executed matmul and elementwise FLOPs over the measured matmul peak (of the
            workload's dtype) and the fitted softmax rate.
  C_k       the chain: a split kernel's program walks its n_k key blocks one after another,
            each a dependent round trip of t_block (load the tiles, the next load waits) plus
            its two dots, F_block = 2·B_r·B_c·(d + d_v) FLOPs at the query tile's B_r rows
            (padding rows included: the tensor cores run the whole tile), at one program's
            matmul rate r_mma;
            the grid runs W_k = ⌈P / slots⌉ waves of its P programs over the slots the GPU
            holds at once (c programs per SM × SMs, the tiling's programs_per_sm, or the
            compiled kernel's where its registers bind first: Tiles.programs_per_sm). On the
            H200 a decoding program walks a 16 × 64 block in 1.3-1.5 µs whatever the head dim
            (batch 1, one split: 22 GB/s per program at d = 128, 12 GB/s at d = 64), so most
            of t_block is a latency, not a byte rate; MLA's 32 × 32 blocks of 576 + 512 columns
            take 3.1 µs (mla-b1-32k-h16, one split), their dots 4× the decode tile's: the
            matmul term. The streaming time S_k and the chain C_k bind together near the knee
            (neither hides the other there), far apart the larger alone: their root sum of
            squares (a smooth maximum; on the seen decode and shared-prefix sets the plain
            maximum and the sum fitted worse, objective 0.019 and 0.018 against 0.014). One
            split per KV head walks every key block alone (batch 1: 20× the fastest count), a
            few splits per head already stream at the HBM rate, and a split count past one wave
            of slots adds a wave.
            This term replaces the earlier division of the busy time by the grid's share of
            the slots, which never let a grid that streams at the HBM rate with fewer programs
            than slots (batch 16, 32 MHA heads: 512 programs, 660 slots) stay at one split:
            it over-split (issue 14: 3 of 10 fresh decode shapes within 5 %).
            n_k = ⌈T_c / s⌉ for split-KV at s splits (T_c the longest request's key blocks);
            the prefix and suffix kernels of cascade use their own lengths and split counts.
  κ, c_k     MLA's latent-cache kernel only (Workload.latent_kv): c_k programs share an SM in a
            full wave (⌈min(P, slots) / SMs⌉: 2 at 256 programs and more, the kernel's 2 per SM)
            and their dots share its tensor cores, each taking 1 + κ(c_k − 1) times as long
            (measured.decode_fit.mla_shared_dots, κ = 0.45 on the H200: fitted alone by
            benchmarks/mla_fit_h200.py on every timed split count of the seen MLA shapes, the
            four constants below kept). MLA's 32 × 32 blocks carry 576 + 512-column dots, 4×
            the decode tile's; without κ the model was 10-22 % fast at every MLA shape whose
            fastest count fills the SMs twice and within 5 % at one split (one program per SM).
            The decode kernels keep κ = 0 (their fit was made without it).
  t_ramp, η, t_block, r_mma  fitted (measured.decode_fit): the time a kernel takes beyond its
            launch before its roofs bind, the share of the two memory rates the decoding kernels
            reach, a program's latency per key block and its matmul rate
            (benchmarks/decode_fit_h200.py: fitted
            on the seen sets of tests/data/h200-variants.json, every split count of the decode
            and MLA shapes and both methods of the shared-prefix batches at their fastest counts;
            frozen at tag var4-frozen and judged on a fresh set: docs/variants-decoding.md).

Without a measured block time (a GPU YAML without decode_fit.block_us) there is no chain, and
the busy time is divided by the grid's share of the slots instead (the earlier
rule), so `--splits auto` still weighs waves there. Without the measured L2 rate and launch
cost the model runs on the spec profile's roofs with no launch cost, its L2 hits at the YAML's
l2_bandwidth (else at the HBM rate, as the roofline charges every byte).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from iosim.analysis.comparison import AlgorithmEstimate
from iosim.analysis.decode_counts_lean import LeanEstimate
from iosim.estimates.occupancy import utilisation
from iosim.estimates.roofline import roofs_for
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import cdiv, is_array
from iosim.inputs.workload import Workload
from iosim.record import Record


class Ceilings(Record):
    """The rates, the launch cost and the fitted constants the decoding time model charges."""

    hbm_bytes_per_s: float
    l2_bytes_per_s: float | None
    """None: L2 hits cost nothing beyond the DRAM time (no measured L2 rate)."""
    matmul_flops_per_s: float
    vector_flops_per_s: float
    launch_s: float
    ramp_s: float = 0.0
    efficiency: float = 1.0
    block_s: float | None = None
    """t_block: a split-KV program's latency per key block (None: the slot-share rule instead)."""
    program_flops_per_s: float | None = None
    """r_mma: one split-KV program's matmul rate on its walk (None: its dots cost nothing)."""
    shared_dots: float = 0.0
    """κ: an MLA program's dots take 1 + κ·(c − 1) times as long with c programs on its SM."""


class KernelTime(Record):
    """One kernel's counts and the model's seconds for them under `ceilings`."""

    kernel: str
    ceilings: Ceilings
    dram_bytes: float
    """The DRAM estimate the dram term charges (a mean of two counts for cascade's merge)."""
    l2_bytes: float
    """Every load and store of the kernel (the L2-oblivious count)."""
    compute_s: float
    programs: int = 0
    """The grid's programs (0: no modelled grid)."""
    slots: int = 0
    """Programs the GPU holds at once (0: no modelled grid)."""
    blocks_per_program: int = 0
    """Key blocks one program walks (0: not a split kernel)."""
    block_flops: float = 0.0
    """F_block: the two dots of one key block at the query tile, 2·B_r·B_c·(d + d_v)."""
    co_resident: int = 1
    """c: the programs one SM holds in a full wave of an MLA split kernel (1 otherwise)."""

    @property
    def launch_s(self) -> float:
        """The launch cost and the ramp."""
        return self.ceilings.launch_s + self.ceilings.ramp_s

    @property
    def dram_s(self) -> float:
        """The DRAM estimate at η × the HBM rate."""
        return float(dram_seconds(self.ceilings, self.dram_bytes))

    @property
    def l2_hit_s(self) -> float:
        """The bytes that hit in L2 (every load and store less the DRAM estimate) at η × the L2
        rate (0 without a measured L2 rate)."""
        return float(l2_hit_seconds(self.ceilings, self.dram_bytes, self.l2_bytes))

    @property
    def l2_s(self) -> float:
        """Every byte at η × the L2 rate (0 without one)."""
        return float(l2_seconds(self.ceilings, self.l2_bytes))

    @property
    def memory_s(self) -> float:
        """The DRAM bytes at the HBM rate plus the L2 hits at the L2 rate, and never less than
        every byte at the L2 rate."""
        return float(memory_seconds(self.ceilings, self.dram_bytes, self.l2_bytes))

    @property
    def waves(self) -> int:
        """⌈programs / slots⌉ (1 without a modelled grid)."""
        return int(grid_waves(self.programs, self.slots))

    @property
    def utilisation(self) -> float:
        """The grid's share of the resident slots over its waves (1 without a modelled grid)."""
        return float(grid_utilisation(self.programs, self.slots))

    @property
    def chain_s(self) -> float:
        """W · n · (t_block + F_block / r_mma): the waves of one program's walk over its key
        blocks (0 for a kernel that is not a split kernel, or without a measured block time)."""
        return float(chain_seconds(self.ceilings, self.waves, self.blocks_per_program,
                                   self.block_flops, self.co_resident))

    @property
    def busy_s(self) -> float:
        """√(S² + C²) of the streaming time S (memory or compute, the larger) and the chain C
        (S divided by the grid's slot share instead where there is no block time)."""
        return float(busy_seconds(self.ceilings, self.memory_s, self.compute_s,
                                  self.utilisation, self.chain_s))

    @property
    def time_s(self) -> float:
        """The launch plus the busy time."""
        return self.launch_s + self.busy_s

    @property
    def bound(self) -> str:
        """Which term is largest: chain, compute, dram or l2."""
        if self.chain_s > max(self.memory_s, self.compute_s):
            return "chain"
        if self.compute_s >= self.memory_s:
            return "compute"
        return "dram" if self.dram_s >= self.l2_hit_s else "l2"


# The model's arithmetic, on floats (one kernel: KernelTime's properties) or on float arrays
# (analysis/split_choice_grid.py: every point of a sweep at every split count), the same IEEE
# operations in the same order either way, so that both give the same doubles.


def dram_seconds(c: Ceilings, dram_bytes: Any) -> Any:
    """KernelTime.dram_s: the DRAM bytes at η × the HBM rate."""
    return dram_bytes / (c.efficiency * c.hbm_bytes_per_s)


def l2_hit_seconds(c: Ceilings, dram_bytes: Any, l2_bytes: Any) -> Any:
    """KernelTime.l2_hit_s: every load and store less the DRAM bytes at η × the L2 rate."""
    rate = c.l2_bytes_per_s
    if rate is None:
        return 0.0 * dram_bytes
    return _max(0.0, l2_bytes - dram_bytes) / (c.efficiency * rate)


def l2_seconds(c: Ceilings, l2_bytes: Any) -> Any:
    """KernelTime.l2_s: every byte at η × the L2 rate (0 without one)."""
    rate = c.l2_bytes_per_s
    return 0.0 * l2_bytes if rate is None else l2_bytes / (c.efficiency * rate)


def memory_seconds(c: Ceilings, dram_bytes: Any, l2_bytes: Any) -> Any:
    """KernelTime.memory_s."""
    return _max(dram_seconds(c, dram_bytes) + l2_hit_seconds(c, dram_bytes, l2_bytes),
                l2_seconds(c, l2_bytes))


def grid_waves(programs: Any, slots: Any) -> Any:
    """KernelTime.waves: ⌈programs / slots⌉, 1 without a modelled grid (0 programs or slots)."""
    if not is_array(programs, slots):
        return int(cdiv(programs, slots)) if programs and slots else 1
    known = (np.asarray(programs) > 0) & (np.asarray(slots) > 0)
    return np.where(known, cdiv(programs, np.where(known, slots, 1)), 1)


def grid_utilisation(programs: Any, slots: Any) -> Any:
    """KernelTime.utilisation: the grid's share of the resident slots over its waves (1 without
    a modelled grid)."""
    if not is_array(programs, slots):
        return 1.0 if not programs or not slots else float(utilisation(programs, slots))
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 where no grid: np.where's 1
        return utilisation(programs, slots)


def chain_seconds(c: Ceilings, waves: Any, blocks_per_program: Any, block_flops: Any,
                  co_resident: Any = 1) -> Any:
    """KernelTime.chain_s of a grid of `waves` waves whose programs walk `blocks_per_program`
    key blocks of `block_flops` FLOPs each (0 without a measured block time or blocks)."""
    block = c.block_s
    if block is None:
        return 0.0 * blocks_per_program
    if not is_array(blocks_per_program) and not blocks_per_program:
        return 0.0
    rate = c.program_flops_per_s
    dots = block_flops / rate if rate else 0.0 * block_flops
    dots = dots * (1.0 + c.shared_dots * (co_resident - 1))
    return waves * blocks_per_program * (block + dots)  # 0 where blocks_per_program is 0


def busy_seconds(c: Ceilings, memory_s: Any, compute_s: Any, utilisation_: Any,
                 chain_s: Any) -> Any:
    """KernelTime.busy_s: √(S² + C²) of the streaming time S = max(memory, compute) and the
    chain C; S over the slot share without a block time."""
    busy = _max(memory_s, compute_s)
    if c.block_s is None:
        return busy / utilisation_
    if not is_array(busy, chain_s):
        return math.hypot(busy, chain_s)
    return _HYPOT(*np.broadcast_arrays(busy, chain_s)).astype(np.float64)


_HYPOT = np.frompyfunc(math.hypot, 2, 1)
"""math.hypot element by element: np.hypot differs from it in the last bit at about 0.2 % of
arguments, and a sweep's pick must be compare's to the last bit."""


def _max(a: Any, b: Any) -> Any:
    """max(a, b) (Python's, for floats; np.maximum for arrays: the same double)."""
    return np.maximum(a, b) if is_array(a, b) else max(a, b)


def ceilings(hardware: Hardware) -> Ceilings:
    """The measured profile's roofs, the measured L2 rate, launch cost and decode_fit of
    `hardware`; the spec roofs, the YAML's L2 bandwidth (else the HBM rate) and no launch cost
    where it has none measured."""
    m = hardware.measured
    if m is None or m.l2_bandwidth_bytes_per_s is None or m.launch_overhead_s is None:
        # the L2 hits at the YAML's L2 bandwidth (its datasheet figure), else at the HBM rate
        # (every byte at HBM, as the roofline charges it): never free
        roofs = roofs_for(hardware, "fp16", "spec")
        l2 = hardware.l2_bandwidth_bytes_per_s or roofs.hbm_bandwidth_bytes_per_s
        return Ceilings(roofs.hbm_bandwidth_bytes_per_s, l2, roofs.matmul_flops_per_s,
                        roofs.vector_flops_per_s, 0.0)
    roofs = roofs_for(hardware, "fp16", "measured")
    fit = m.decode_fit
    return Ceilings(roofs.hbm_bandwidth_bytes_per_s, m.l2_bandwidth_bytes_per_s,
                    roofs.matmul_flops_per_s, roofs.vector_flops_per_s, m.launch_overhead_s,
                    fit.ramp_s if fit else 0.0, fit.efficiency if fit else 1.0,
                    fit.block_s if fit else None, fit.program_flops_per_s if fit else None,
                    fit.latent_shared_dots if fit else 0.0)


def profile_of(hardware: Hardware) -> Literal["spec", "measured"]:
    """The profile the model runs on: measured where the GPU's YAML has a measured launch cost."""
    m = hardware.measured
    return "measured" if m is not None and m.launch_overhead_s is not None else "spec"


def kernel_times(estimate: AlgorithmEstimate | LeanEstimate, c: Ceilings, matmul_flops_per_s: float,
                 chains: dict[str, tuple[int, float]] | None = None, per_sm: int | None = None,
                 *, shared_sm: bool = False) -> tuple[KernelTime, ...]:
    """Every kernel of `estimate` (compare's, or the same fields from decode_counts_lean) under
    the model (matmul at the workload dtype's peak);
    `chains` maps a split kernel's name to (key blocks one of its programs walks, FLOPs of one
    block's dots); `per_sm` replaces the tiling's programs per SM of the split kernels;
    `shared_sm` (MLA's latent cache) counts the programs a full wave puts on one SM."""
    out = []
    for k in estimate.kernels:
        dram = estimate.dram.of_kernel(k.name).bytes if estimate.dram is not None else k.hbm_bytes
        occupancy = next((o for o in estimate.occupancy if o.kernel == k.name), None)
        slots = occupancy.slots if occupancy is not None else None
        if occupancy is not None and per_sm and occupancy.sm_count and k.name in (chains or {}):
            slots = per_sm * occupancy.sm_count
        compute = k.matmul_flops / matmul_flops_per_s + k.elementwise_flops / c.vector_flops_per_s
        blocks, flops = (chains or {}).get(k.name, (0, 0.0))
        programs = occupancy.programs if occupancy else 0
        co_resident = 1
        if shared_sm and blocks and occupancy is not None and occupancy.sm_count and slots:
            co_resident = co_resident_programs(programs, slots, occupancy.sm_count)
        out.append(KernelTime(k.name, c, float(dram), float(k.hbm_bytes), compute,
                              programs, slots or 0, blocks, flops, co_resident))
    return tuple(out)


def co_resident_programs(programs: int, slots: int, sm_count: int) -> int:
    """c: a wave of min(P, slots) programs spread over the SMs, the fullest SM's count."""
    return int(cdiv(min(programs, slots), sm_count))


def matmul_peak(hardware: Hardware, workload: Workload) -> float:
    """The matmul peak of the workload's dtype (and mask: roofs_for) under that profile
    (FLOP/s)."""
    return roofs_for(hardware, workload.dtype, profile_of(hardware),
                     causal=workload.causal).matmul_flops_per_s
