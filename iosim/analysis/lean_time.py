"""cuDNN's lean decode kernel timed from what it does (issue 11, round cudnn9), where sdpa-cudnn's
calibration has the figures (`measured.impls.sdpa-cudnn`'s LEAN_TERMS); its split rule and
counts are analysis/stream_k.py's.

What the kernel does (`cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_
16x128xD_1x4x1`, the name in every recorded lean decode step; Lean Attention, arXiv:2405.10480):
a stream-K grid of CTAs, each taking an equal run of the step's iterations, an iteration being
one 16 × 128 tile — 16 query rows (the g query heads of a KV head, padded to 16: a step with
g < 16 wastes the rest of the tile, one with g > 16 takes ⌈g / 16⌉ row blocks, each streaming
the KV head's keys again) against 128 keys, for which it streams a K and a V tile of
128 · d elements each. So

    iterations I = batch · kv_heads · ⌈g / 16⌉ · ⌈N_kv / 128⌉   (stream_k.stream_k_problem)
    CTAs       C = CTAS_PER_SM[d] · SMs
    R          = ⌈g / 16⌉ row blocks per KV head
    time         = lean_program_s_per_dim · d
                   + ⌈I / C⌉ · C · 2 · 128 · d · element_bytes
                     · (1 / (R · lean_stream_dD) + (R − 1) / (R · L2 rate))

ncu records the one lean launch it profiled (tests/data/h200-impl-launches-rw.csv, b1 h32/8
N_kv 32,768 d 128): 128 threads, 184 registers and 87,360 B of shared memory per CTA, two CTAs
per SM (the registers' and shared memory's limit alike), grid 32 × 8 = 256 CTAs, which is
⌈2,048 / ⌈2,048 / 264⌉⌉: 2,048 iterations, 8 per CTA on at most 2 · 132 = 264 CTAs. Every CTA
runs ⌈I / C⌉ iterations at once with the others, so the step takes ⌈I / C⌉ rounds, each moving
the K and V tiles of all C CTAs (an iteration whose tile another row block just read comes from
the L2, but waits its turn the same) at the rate such a read-mostly kernel reaches
(`lean_stream_dD`, per head-dim bucket: the tile's shape sets how many bytes a CTA keeps in
flight), plus a cost per CTA that grows with d (its Q rows, its fp32 partial output and
log-sum-exp, the first tile's latency: `lean_program_s_per_dim`). At d = 256 the K and V tiles
alone are 128 KiB, more than half of an SM's 228 KiB: one CTA per SM (no ncu record of it; the
seen records' d = 256 times fit one CTA per SM better than two, calibrate/cudnn_lean_fit.py).

Row blocks after the first (round cudnn10): of a KV head's R row blocks, the first streams
each (KV head, key block)'s K and V tiles from HBM at `lean_stream_dD`; the other R − 1 read the
same tiles again while they are in the L2 (a KV head's tiles are one 128 · d strip per
iteration, far less than the 60 MiB L2), so a 1 / R share of the rounds' tile bytes moves at the
streaming rate and (R − 1) / R at the L2 rate the project measured (`measured.l2_bandwidth`,
9.58 TB/s: calibrate/decode_microbench.py, a split-KV re-read of 16 KiB tiles). At g ≤ 16
(R = 1) the rule is round cudnn9's. CUDNNFRESH9's MQA steps were too slow by +88 % (g 64, R 4)
and +50 % (g 48, R 3) when every row block was charged at the streaming rate. Without a
measured L2 rate every row block streams at `lean_stream_dD` (round cudnn9's rule).

The SM's side of a tile (round cudnn11): a byte of a K or V tile costs the CTA its delivery
(HBM or L2) and then its own work on it (shared memory to registers, the 16-row MMAs; one CTA
per SM at d 256, two below). The fitted rates say the second part grows with the tile's shape:
d 128's kernel streams fastest, so its SM side is taken as free and its rate as what the HBM
delivers to this kernel; a bucket streaming slower pays 1 / lean_stream_dD − 1 / lean_stream_max
seconds per byte on the SM (`lean_sm_s_per_byte`, no new figure). A byte re-read from the L2
pays that SM share too: 1 / L2 rate + the SM's share. CUDNNFRESH10's two-row-block d 256 steps
(#3 −22 %, #9 −19 % with the L2 share free of it) ask for it: at d 256 the SM share is about
two thirds of the L2's cost per byte (reports/impl-validation/cudnn11-fresh.md).

The figures are fitted on the seen records' lean kernels only (calibrate/cudnn_lean_fit.py,
benchmarks/cudnn9_fit.py). Where they are missing the kernel stays on its roofline
(`memory_splitkv_attn`, round 10).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from iosim.analysis.impl_kernels import HEAD_DIM_BUCKETS, head_dim_bucket
from iosim.analysis.stream_k import RULE as STREAM_K
from iosim.analysis.stream_k import stream_k_problem
from iosim.estimates.roofline import KernelEstimate
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload
from iosim.record import replace

LEAN_KERNEL = "splitkv_attn"
"""The loop nest's name for the lean (split) kernel (algorithms/splitkv.py)."""
CTAS_PER_SM = {64: 2, 128: 2, 256: 1}
"""CTAs of the lean kernel one SM holds, by head-dim bucket (module docstring: 2 at d 128 from
ncu's launch__occupancy_limit_registers/shared_mem; 2 at d 64, where the registers alone limit
it to 2; 1 at d 256, its K and V tiles over half the SM's shared memory)."""
LEAN_TERMS = ("lean_program_s_per_dim", "lean_stream_d64", "lean_stream_d128",
              "lean_stream_d256")
"""The fitted figures, all needed for the model to apply: seconds per CTA per head-dim unit and
the streaming rate (B/s) per head-dim bucket."""


def lean_rounds(iterations: int, ctas: int) -> int:
    """⌈I / C⌉: the iterations each CTA of the stream-K grid runs (the longest share)."""
    return math.ceil(iterations / ctas)


def lean_grid(iterations: int, ctas: int) -> int:
    """The CTAs the kernel launches: as few as carry ⌈I / C⌉ iterations each (ncu's grid of
    256 for 2,048 iterations on 264 slots, module docstring)."""
    return math.ceil(iterations / lean_rounds(iterations, ctas))


def lean_moved_bytes(workload: Workload, iterations: int, sm_count: int, block_kv: int) -> int:
    """⌈I / C⌉ · C · 2 · block_kv · d · element_bytes: the K and V tile bytes of every CTA's
    rounds (module docstring)."""
    ctas = CTAS_PER_SM[head_dim_bucket(workload.d)] * sm_count  # the `16x128xD` tile's D
    tile_bytes = 2 * block_kv * workload.d * workload.element_bytes  # a K and a V tile
    return lean_rounds(iterations, ctas) * ctas * tile_bytes


def lean_sm_s_per_byte(terms: Mapping[str, float], d: int) -> float:
    """The SM's own seconds per tile byte at head dim d (module docstring): 1 / lean_stream_dD
    − 1 / the fastest bucket's rate (0 at that bucket)."""
    fastest = max(terms[f"lean_stream_d{b}"] for b in HEAD_DIM_BUCKETS)
    return 1.0 / terms[f"lean_stream_d{head_dim_bucket(d)}"] - 1.0 / fastest


def lean_reread_s(moved_bytes: float, row_blocks: int, l2_rate: float | None,
                  sm_s_per_byte: float = 0.0) -> float:
    """The (R − 1) / R share of the moved bytes re-read from the L2 by the row blocks after the
    first, each byte at the L2's rate plus the SM's own share (module docstring); 0 without a
    measured L2 rate, which leaves every byte to lean_stream_share."""
    if l2_rate is None:
        return 0.0
    return moved_bytes * (row_blocks - 1) / row_blocks * (1.0 / l2_rate + sm_s_per_byte)


def lean_stream_share(moved_bytes: float, row_blocks: int, l2_rate: float | None) -> float:
    """The moved bytes that stream at `lean_stream_dD`: the first row block's 1 / R share, or
    all of them without a measured L2 rate."""
    return moved_bytes if l2_rate is None else moved_bytes / row_blocks


def lean_time_s(workload: Workload, iterations: int, sm_count: int,
                terms: Mapping[str, float], block_kv: int, row_blocks: int = 1,
                l2_rate: float | None = None) -> float:
    """The module docstring's time of one lean kernel (row_blocks = R = ⌈g / 16⌉)."""
    moved = lean_moved_bytes(workload, iterations, sm_count, block_kv)
    rate = terms[f"lean_stream_d{head_dim_bucket(workload.d)}"]
    return (terms["lean_program_s_per_dim"] * workload.d
            + lean_stream_share(moved, row_blocks, l2_rate) / rate
            + lean_reread_s(moved, row_blocks, l2_rate, lean_sm_s_per_byte(terms, workload.d)))


def lean_row_blocks(workload: Workload, programs: int) -> int:
    """R = ⌈g / 16⌉: stream_k_problem's programs per (batch, KV head)."""
    return programs // (workload.batch * workload.kv_heads)


def measured_l2_rate(hardware: Hardware) -> float | None:
    """The project's measured L2 bandwidth (configs/gpus/*.yaml measured.l2_bandwidth), if any."""
    return hardware.measured.l2_bandwidth_bytes_per_s if hardware.measured is not None else None


def lean_estimates(estimates: tuple[KernelEstimate, ...], impl: Implementation,
                   hardware: Hardware, workload: Workload, sram_bytes: int
                   ) -> tuple[KernelEstimate, ...]:
    """The kernels' estimates with the lean kernel timed by this model (timed_by "lean") where
    the implementation splits a decode step stream-K and its calibration has LEAN_TERMS;
    unchanged elsewhere."""
    impls = hardware.measured.impls if hardware.measured is not None else {}
    fitted = impls.get(impl.name)
    if (fitted is None or impl.split_kv.rule != STREAM_K or hardware.sm_count is None
            or workload.n != 1 or workload.pass_ != "fwd"  # the decode step's kernel only
            or not all(k in fitted.terms for k in LEAN_TERMS)
            or not any(e.name == LEAN_KERNEL for e in estimates)):
        return estimates
    problem = stream_k_problem(impl, workload, sram_bytes)
    if problem is None:
        return estimates
    programs, key_blocks, block_kv = problem
    time_s = lean_time_s(workload, programs * key_blocks, hardware.sm_count, fitted.terms,
                         block_kv, lean_row_blocks(workload, programs), measured_l2_rate(hardware))
    return tuple(replace(e, time_s=time_s, timed_by="lean") if e.name == LEAN_KERNEL else e
                 for e in estimates)


def lean_note(terms: Mapping[str, float]) -> str:
    """The line saying how the lean kernel is timed (compare's notes)."""
    rates = ", ".join(f"d {d} {terms[f'lean_stream_d{d}'] / 1e12:.2f} TB/s" for d in HEAD_DIM_BUCKETS)
    return (f"cuDNN's lean decode kernel: {terms['lean_program_s_per_dim'] * 1e9:.1f} ns × d "
            f"per CTA + ⌈iterations / CTAs⌉ rounds of every CTA's 16×128 K and V tiles at "
            f"{rates}, the row blocks after a KV head's first from the L2 plus the SM's "
            f"share of its bucket's rate "
            f"(analysis/lean_time.py)")
