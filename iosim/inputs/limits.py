"""The input boundary: the range of every value iosim accepts, and why, in one place.

Every number from a flag, a YAML file or the Python API passes one of the checks below (or one
of api_values.py's, given a bound from here) before any model code runs. The bounds are where
the model stays exact and fast (docs/input-limits.md lists them with their reasons):

* Counts in `compare`, `verify` and `roofline` are Python ints, exact at any size. Sweeps and
  reports count in numpy int64 while the grid's largest N·N_kv·d·batch·heads is below
  `INT64_SCORE_PRODUCT` (2^53: the largest count, the FLOPs of a forward+backward with
  recomputation or the bytes of an unfused standard pipeline, is below 2^10 times that product,
  so below 2^63); at or above it they count in Python ints (numpy object arrays), exact too. So
  no bound on the product itself: each of its factors has its own bound below, and the largest
  product they allow (2^132, counts below 2^142) is far inside float64's range for times.
* Every value that a sweep turns into int64 (block sizes, SRAM bytes and elements, splits) has
  an upper bound here, far below 2^63, so that the products the tiling forms (working sets,
  elements × bytes) cannot wrap.
* Hardware figures are finite numbers within physical reason (at least 1 in their base unit,
  at most `MAX_FIGURE`), so that no time, ratio or ridge point can be 0, infinite or NaN.
* `verify` sizes its arrays before allocating them against `MAX_EXECUTOR_BYTES`.

Messages follow the CLI's style: what is wrong (naming the flag, or the file and key), then
how to fix it; values are quoted through `excerpt` (excerpts.py), never whole.
"""

from __future__ import annotations

import math
from typing import Final

from iosim.errors import IosimError, arg
from iosim.inputs.api_values import as_whole, check_int
from iosim.inputs.excerpts import excerpt

MAX_LENGTH: Final = 1 << 26
"""Sequence lengths N and N_kv: 64M tokens."""

MAX_HEAD_DIM: Final = 1 << 20
"""Head dimension d (real models use 64 to 256)."""

MAX_HEADS: Final = 1 << 20
"""Query (and KV) heads."""

MAX_BATCH: Final = 1 << 40
"""Batch size (the product bound below is the one that binds in practice)."""

INT64_SCORE_PRODUCT: Final = 1 << 53
"""N·N_kv·d·batch·heads below which every count of every algorithm fits int64 with 2^10 spare:
a sweep's grid below it counts in int64, at or above it in Python ints (object arrays). Not a
bound: a workload of any product the per-value bounds allow is counted exactly."""

MAX_SEQLENS: Final = 1 << 16
"""Sequences in one packed varlen batch (Workload.seqlens): 65,536, some 100 times the batches
serving stacks pack; the mask's sums, the walk and the executor each hold one entry per sequence
and per row block, and a flag or JSON value with more entries is refused before it is parsed
further."""

MAX_SRAM_BYTES: Final = 1 << 40
"""An SRAM budget M (--sram, --sram-elements × element size, a YAML's sram_per_block): 1 TiB,
some 10^6 times any real one; Alg. 1's default blocks then stay below 2^38 rows."""

MAX_BLOCK: Final = MAX_LENGTH
"""A given block size B_r or B_c (a block longer than the sequence is one block)."""

MAX_SPLITS: Final = MAX_LENGTH
"""splitkv's --splits (it must also be at most the number of key blocks)."""

MAX_AUTO_SPLIT_POINTS: Final = 10_000
"""Grid points (every axis but splits) of a `sweep --splits auto`: each point's count is chosen
as compare chooses it before the progress bar moves. When this bound was set that took about
30 ms a point (2,970 points took 2 min 47 s on a loaded 2-core machine; a million-point grid was
eight silent hours, which reads as a hang). On arrays (analysis/split_choice_grid.py) it is a
fraction of a millisecond a point now, but a window, packed sequences or a shared prefix still
take the per-point search, a few milliseconds a point (benchmarks/sweep_splits_auto_speed.py),
so the bound stands."""

MAX_SCHEDULED_PROGRAMS: Final = 1 << 22
"""Programs of one kernel that the measured profile's list schedule of iosim's Triton backward
(estimates/schedule.py) places one by one: batch · heads · programs per head. 4M programs took
about 5 s on this loaded 2-core machine (compare --n 65536 --d 64 --heads 64 --batch 64 --pass
bwd --causal --profile measured --algo triton: 4.9 s); 2^30 (a 1M-token backward of 64 heads,
batch 64, accepted once the 2^53 product bound went, review6) was minutes of silence."""


def check_scheduled_programs(programs: int) -> None:
    """Refuse a list schedule too long to run (MAX_SCHEDULED_PROGRAMS)."""
    if programs > MAX_SCHEDULED_PROGRAMS:
        raise IosimError(
            f"the measured profile times iosim's Triton backward by a list schedule of every "
            f"program, and this workload has {programs:,} (batch × heads × programs per head), "
            f"beyond the {MAX_SCHEDULED_PROGRAMS:,} it schedules in seconds; lower "
            f"{arg('batch')}, {arg('heads')} or {arg('n')}, or use {arg('profile')} spec")


MAX_RECORDED_CALL_S: Final = 60.0
"""The longest attention call a measurement record may time (`iosim measure --record`,
`calibrate --impl`'s records), exclusive: each times one call, micro- to milliseconds; a minute
is no such call, and a time such as 1e308 s was drawn by `roofline --record` off every axis."""

MAX_LAYERS: Final = 1 << 16
"""Layers of one kind in a model YAML (today's largest models have about 100 to 200)."""

MAX_PAGE_SIZE: Final = 1 << 20
"""Tokens per KV-cache page (--page-size): serving stacks use 1 to 256; a page longer than the
sequence is one partly filled page."""

ALG4_SOLO_TFLOPS: Final = (0.0, 1000.0)
"""measured.alg4_time.solo_tflops, open below: one program's matmul rate is a share of one SM's
(the H200's whole GPU peaks near 1,000 TFLOP/s dense fp16)."""

ALG4_PROGRAM_GB_PER_S: Final = (0.0, 10000.0)
"""measured.alg4_time.program_gb_per_s, open below: one program's DRAM stream, at most a GPU's
whole HBM bandwidth (the H200's is 4,800 GB/s)."""

MLA_PREFILL_SCALE: Final = (0.0, 10.0)
"""measured.mla_prefill_time.scale, open below: the factor on the MLA prefill kernel's roofline
time (estimates/mla_prefill_time.py); a fit far from 1 says the roofline is wrong."""
MLA_PREFILL_US: Final = (0.0, 1000.0)
"""measured.mla_prefill_time.wave_us and launch_us, closed: microseconds per wave and per
launch (a launch is a few µs; a millisecond is no fixed cost)."""
ALG4_SHARED_SM_SLOWDOWN: Final = (0.0, 4.0)
"""measured.alg4_time.shared_sm_slowdown, closed: 0 is programs on one SM not slowing each
other; above 1, a second program more than doubles each one's time (no fit has said so)."""

MAX_REQUESTS: Final = 1 << 16
"""Requests of a shared-prefix batch (--suffix-lens): each is a term of the exact sums."""

MAX_WARPS: Final = 32
"""Warps of one program in an implementation profile's tile row: 1,024 threads, the most a
CUDA thread block (and a HIP workgroup) may have (CUDA C++ Programming Guide, "Compute
Capabilities", maximum number of threads per block: 1024)."""

MAX_REGISTERS_PER_THREAD: Final = 255
"""A tile row's registers_per_thread: the most a thread may have (CUDA C++ Programming Guide,
"Compute Capabilities", maximum number of 32-bit registers per thread: 255)."""

MAX_SPILL_BYTES: Final = 512 * 1024 * 1024
"""A spill row's bytes (estimates/spills.py: local memory per key block or per program): CUDA
gives a thread at most 512 KiB of local memory (CUDA C++ Programming Guide, "Compute
Capabilities", maximum amount of local memory per thread: 512 KB), so 1,024 threads of a
program hold at most 512 MiB."""

MAX_PROGRAMS_PER_SM: Final = 32
"""Programs (thread blocks) resident on one SM at once, as a GPU YAML's
measured.backward_schedule.programs_per_sm gives them: CUDA allows at most 32 (CUDA C++
Programming Guide, "Compute Capabilities", maximum number of resident blocks per SM: 32 for
compute capability 8.0 and 9.0, fewer on others)."""

MAX_STAGES: Final = 64
"""A tile row's pipeline stages (real kernels use 1 to 8)."""

MAX_SHARED_TILES: Final = 64
"""An implementation profile's shared_memory tile counts (q_tiles, kv_tiles, score_tiles; real
kernels hold 0 to 3 of each)."""

MAX_SM_COUNT: Final = 1 << 12
"""A YAML's sm_count (today's largest GPUs have 100 to 300)."""

MAX_FIGURE: Final = 1e24
"""Any hardware figure in its base unit (bytes, bytes/s, FLOP/s): 10^24 is 10^6 times the
largest real one; the smallest accepted is 1."""

MAX_MASK_BLOCKS: Final = 1 << 20
"""Row blocks (and key blocks) one (batch, head) of a masked workload (--window, --seqlens) may
have: the mask's exact sums hold one entry per block (algorithms/masks.py), so N = 2^26 in
blocks of B_r = 1 (flash1's Alg. 1 rule at d = 1) took 80 s and gigabytes. 2^20 blocks is N =
2^26 in blocks of 64 (flash1 at d = 64; flash2's code tiles are 64 to 128 rows): about 2 s for
a forward compare on this loaded 2-core machine, well under one unloaded."""

MAX_EXECUTOR_BYTES: Final = 1 << 30
"""Memory `verify` may allocate for one executor run's arrays (inputs, outputs, gradients)."""

EXECUTOR_ARRAYS: Final = 12
"""Arrays of B·H·(N or N_kv)·d float64 values a run holds at most (Q, K, V, O, dO, dQ, dK, dV,
the reference's copies), counted against MAX_EXECUTOR_BYTES."""

MAX_FILE_NAME_BYTES: Final = 255
"""Longest file name (one path component) the common file systems take (ext4, APFS, NTFS)."""

MAX_EXPLAIN_SCORES: Final = 1024
"""`iosim explain softmax --scores`: numbers in one row (its tables have a line per score)."""

MAX_EXPLAIN_MAGNITUDE: Final = 1e9
"""`iosim explain softmax`: the largest |score| and |value component|. Beyond it a score's
difference s − m or a sum of 1,024 weighted values can leave float64 (±1e308 gave an output of
inf beside the one-pass 1e308, and numpy's overflow warnings), and the tables' fixed-point
columns would print hundreds of digits."""

MAX_EXPLAIN_VALUE_DIM: Final = 64
"""`iosim explain softmax --values`: components of each value vector."""

def check_block(name: str, value: object, *, error: type[IosimError] = IosimError) -> int:
    """A block size B_r or B_c (block_q, block_kv, a backward's blocks): a whole number from 1
    to MAX_BLOCK, for compare, sweep and verify alike."""
    value = as_whole(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(f"{arg(name)} must be a whole number of at least 1, got {excerpt(value)}")
    return check_int(name, value, high=MAX_BLOCK, error=error)


MAX_SEED: Final = 2**64 - 1
"""numpy's generators take seeds 0 … 2^64 − 1 (and no negative one)."""


def check_seed(value: object, *, error: type[IosimError] = IosimError) -> int:
    """A random seed (verify, the executor's inputs and dropout): a whole number 0 … MAX_SEED;
    a float, text or list was taken by numpy (or by nothing: an executor without dropout
    ignored seed="abc")."""
    return check_int("seed", value, low=0, high=MAX_SEED, what="numpy's seeds", error=error)


def check_seqlens(value: object, *, error: type[IosimError] = IosimError) -> tuple[int, ...]:
    """Packed sequence lengths: a non-empty list of at most MAX_SEQLENS whole numbers >= 1."""
    if type(value).__name__ == "ndarray":  # numpy's array of lengths: its entries, in order
        value = value.tolist()  # type: ignore[attr-defined]  # a 0-d array: its one number
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise error(f"{arg('seqlens')} must be a list of sequence lengths, got {excerpt(value)}; "
                    f"e.g. [512, 3000, 77]", param="seqlens")
    if not value:
        raise error(f"{arg('seqlens')} is empty; give at least one sequence length, or leave "
                    f"it unset for one sequence", param="seqlens")
    if len(value) > MAX_SEQLENS:
        raise error(f"{arg('seqlens')} has {len(value):,} sequences, beyond the "
                    f"{MAX_SEQLENS:,} iosim models in one packed batch; pack fewer",
                    param="seqlens")
    lengths = [as_whole(length) for length in value]
    for position, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, int):
            raise error(f"{arg('seqlens')} entry {position + 1} must be a whole number of "
                        f"tokens, got {excerpt(length)}", param="seqlens")
        if not 1 <= length <= MAX_LENGTH:
            raise error(f"{arg('seqlens')} entry {position + 1} is {excerpt(length)}; each "
                        f"length must be between 1 and {MAX_LENGTH:,}", param="seqlens")
    return tuple(int(length) for length in lengths)


def check_sram_bytes(name: str, value: int) -> int:
    """An SRAM budget in bytes (from sram, sram_elements × element bytes, or a YAML)."""
    if value > MAX_SRAM_BYTES:
        # an int past float's range (a 400-digit flag) has no :g form: give its digit count
        size = f"{value:.3g}" if value < 10**300 else f"a {len(str(value))}-digit number of"
        raise IosimError(f"{arg(name)} gives an SRAM of {size} bytes, beyond the "
                         f"{MAX_SRAM_BYTES:,} (1 TiB) iosim models; use a smaller {arg(name)}")
    return value


FP8_CAUSAL_SHARE = (0.5, 1.0)
"""Bounds of measured.peak_flops.fp8_causal as a share of measured.peak_flops.fp8: a causal key
block does the same dots plus the diagonal's masking (var7's ncu probe: 1.16× the active SM
cycles, benchmarks/fp8_ncu_probe_h200.py), so its rate is at most the non-causal one; below half
of it is a typo, not a mask (the H200's fit: 865 / 1,030 = 0.84, benchmarks/fp8_mask_fit.py)."""


def check_fp8_causal_share(causal: float, full: float) -> str | None:
    """Why a causal FP8 matmul rate `causal` beside the non-causal `full` is refused, or None."""
    low, high = FP8_CAUSAL_SHARE
    if not low * full <= causal <= high * full:
        return (f"must be from {low:g}× to {high:g}× measured.peak_flops.fp8 "
                f"({full / 1e12:,.1f} TFLOP/s), got {causal / 1e12:,.1f} TFLOP/s")
    return None


MEASURED_OVER_SPEC: Final = 1.02
"""How far a measured ceiling (measured.hbm_bandwidth, measured.l2_bandwidth,
measured.peak_flops.DTYPE) may lie above the datasheet figure of the same name. A datasheet
rounds to two or three digits (the H200's 4.8 TB/s is 4.81 TB/s by its memory clock and bus,
configs/gpus/h200.yaml), so up to 2 % above it is rounding; more is a measurement that counted
bytes twice or timed too short a run, and every time the measured profile gives would be too
short (hostile9 leftover 1: 10 TB/s on an H200 was accepted, from a YAML or a record). The
shipped measured ceilings lie 5-31 % below theirs (H200: 4,272 of 4,800 GB/s, 686 of 989
TFLOP/s bf16)."""


def check_measured_ceiling(measured: float, spec: float | None, unit: str) -> str | None:
    """Why a measured ceiling `measured` (B/s or FLOP/s) beside the datasheet's `spec` (None:
    the datasheet has no such figure) is refused, or None."""
    from iosim.output.numbers import fmt_rate  # for a refusal only

    if spec is None:
        return ("has no datasheet figure to stand beside (the same key at the top level of the "
                "file); add that figure with its source, or drop this one")
    if measured > spec * MEASURED_OVER_SPEC:
        return (f"{fmt_rate(measured, unit)} is above the datasheet's {fmt_rate(spec, unit)} by "
                f"{measured / spec - 1:.0%}, more than a datasheet's rounding "
                f"({MEASURED_OVER_SPEC - 1:.0%}): no kernel outruns its GPU; check the "
                f"measurement (bytes counted twice, a time too short) or the datasheet figure")
    return None


def check_figure(value: float, shown: object) -> str | None:
    """Why a hardware figure (in its base unit) is refused, or None."""
    if not math.isfinite(value):
        return f"must be a finite number, got {excerpt(shown)}"
    if value < 1:
        return f"must be at least 1 in its base unit (bytes, B/s, FLOP/s), got {excerpt(shown)}"
    if value > MAX_FIGURE:
        return f"{excerpt(shown)} is beyond the {MAX_FIGURE:.0e} iosim accepts for any figure"
    return None


def check_mask_blocks(blocks: int, *, rows: bool, length: int, block: int) -> None:
    """Refuse a masked workload cut into more than MAX_MASK_BLOCKS row (or key) blocks."""
    if blocks > MAX_MASK_BLOCKS:
        name, side = ("block_q", "N") if rows else ("block_kv", "N_kv")
        raise IosimError(
            f"a window or packed sequences over {length:,} tokens ({side}) in blocks of "
            f"{block:,} make {blocks:,} {'row' if rows else 'key'} blocks, beyond the "
            f"{MAX_MASK_BLOCKS:,} the mask's exact sums hold; use a larger {arg(name)} (at "
            f"least {-(-length // MAX_MASK_BLOCKS):,}) or a larger head dim's blocks, or a "
            f"shorter sequence", param=name)


def check_executor_memory(batch: int, heads: int, kv_heads: int, n: int, n_kv: int,
                          d: int) -> None:
    """Refuse an executor run whose arrays would exceed MAX_EXECUTOR_BYTES, before allocating."""
    rows = batch * (heads * n + kv_heads * n_kv)
    need = EXECUTOR_ARRAYS * rows * d * 8
    if need > MAX_EXECUTOR_BYTES:
        raise IosimError(
            f"{arg('d', d)} with these sizes needs about {need / 2**30:,.1f} GiB of arrays for "
            f"an executor run, beyond its {MAX_EXECUTOR_BYTES / 2**30:g} GiB cap; lower "
            f"{arg('d')}, {arg('n')} or {arg('heads')} (for exact counts at any size use iosim "
            f"compare)", param="d")
