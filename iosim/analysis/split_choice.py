"""`--splits auto`: splitkv's predicted time at every split count FA2 would run, the best pick,
and the FlashAttention-2 heuristic's pick beside it.

For each split count s = 1 .. min(128, T_c) (flash_api.cpp refuses more than 128 splits; a split
needs a key block) that leaves no split empty (a count that leaves the blocks per split of one
split fewer is skipped, as FA2's heuristic skips it) the split kernel and, for s > 1, the
combine kernel are counted by `compare` and timed by the decoding time model
(analysis/decode_time.py: launch, ramp, DRAM and L2 time, and the waves of one program's walk
over its ⌈T_c/s⌉ key blocks), the one rule the cascade verdict uses too. The best pick is the
count with the least total time (the smallest such count on a tie). `compare`'s roofline time
of each count stays as a column. FA2's heuristic (splitkv.num_splits_heuristic) instead asks for
the smallest count whose wave efficiency is within 85 % of the best, and for 1 split whenever the
grid already holds 80 % of 2 × the SMs: it never weighs the extra partial-output traffic and the
combine kernel against the waves, nor a program's walk over its blocks.
"""

from __future__ import annotations

import math
from typing import Any

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.splitkv import MAX_SPLITS
from iosim.analysis.compare import compare, finished_tiling
from iosim.analysis.comparison import AlgorithmEstimate, Comparison
from iosim.analysis.decode_kernel_time import chain_seconds, co_resident_programs
from iosim.analysis.decode_time import DecodeCounts, Tiles
from iosim.analysis.requests import sram_budget
from iosim.errors import IosimError, arg
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import cdiv
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

SCHEMA = "iosim.splits/2"


class SplitRow(Record):
    """splitkv at one split count."""

    splits: int
    blocks_per_split: int
    programs: int
    utilisation: float
    """The split kernel's grid over the GPU's resident slots, over its waves (1.0 when every
    resident slot is busy in every wave)."""
    split_kernel_s: float
    """The split kernel's time under the decoding time model (analysis/decode_time.py)."""
    combine_s: float
    hbm_bytes: int
    compare_s: float = 0.0
    """splitkv's total time as `compare`'s roofline reports it (a column beside the model)."""
    eligible: bool = True
    """Every row is a count FA2 would run (the others are not weighed)."""
    waves: int = 1
    """⌈programs / resident slots⌉ of the split kernel."""
    chain_s: float = 0.0
    """The split kernel's walk term (waves × blocks per program × tile bytes / program rate)."""

    @property
    def time_s(self) -> float:
        """The split kernel's time at u_slots plus the combine kernel's."""
        return self.split_kernel_s + self.combine_s


class SplitChoice(Record):
    """Every split count's prediction, the best one and FA2's heuristic's."""

    workload: Workload
    gpu: str
    sm_count: int | None
    profile: str
    rows: tuple[SplitRow, ...]
    heuristic: int
    """flash_api.cpp num_splits_heuristic's count for this workload and GPU."""
    bound: str
    """Why the table stops where it does."""

    @property
    def best(self) -> SplitRow:
        """The eligible count of least predicted time (the smallest on a tie)."""
        return min((r for r in self.rows if r.eligible), key=lambda r: (r.time_s, r.splits))

    def row(self, splits: int) -> SplitRow:
        """The row of one split count."""
        return next(r for r in self.rows if r.splits == splits)

    @property
    def heuristic_slowdown(self) -> float:
        """The heuristic's predicted time over the best's (1.0: it picks as well)."""
        return self.row(self.heuristic).time_s / self.best.time_s

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (compare's key splits_auto, schema iosim.splits/1)."""
        best = self.best
        return {
            "schema": SCHEMA, "gpu": self.gpu, "sm_count": self.sm_count,
            "profile": self.profile, "workload": self.workload.describe(), "bound": self.bound,
            "best": best.splits, "heuristic": self.heuristic,
            "heuristic_time_over_best": self.heuristic_slowdown,
            "rows": [{"splits": r.splits, "blocks_per_split": r.blocks_per_split,
                      "programs": r.programs, "utilisation": r.utilisation,
                      "split_kernel_s": r.split_kernel_s, "combine_s": r.combine_s,
                      "time_s": r.time_s, "roofline_time_s": r.compare_s,
                      "waves": r.waves, "chain_s": r.chain_s, "hbm_bytes": r.hbm_bytes}
                     for r in self.rows],
        }


def with_best_pick(result: Comparison, choice: SplitChoice, **options: Any) -> Comparison:
    """`result` (a comparison run with each algorithm's own split rule) with its splitkv run
    at the best pick of `choice` instead; `options` are compare's, as for choose_splits. The
    other algorithms that split (cascade) keep their own rule."""
    best = _splitkv(compare(result.workload, result.hardware, algorithms=["splitkv"],
                            splits=choice.best.splits, **options))
    assert best.tiling is not None  # splitkv is tiled
    best = replace(best, tiling=replace(
        best.tiling, splits_rule="--splits auto: the fastest predicted count"))
    return replace(result, algorithms=tuple(best if a.algorithm == "splitkv" else a
                                            for a in result.algorithms))


def _splitkv(result: Comparison) -> AlgorithmEstimate:
    return next(a for a in result.algorithms if a.algorithm == "splitkv")


class _Counts(Record, frozen=False):
    """What every split count's row is computed from (one workload, GPU and options)."""

    hw: Hardware
    counts: DecodeCounts
    heuristic: int
    block_q: int
    key_blocks: int
    top: int
    profile: str


def check_choice(workload: Workload, hardware: Hardware | str, options: dict[str, Any]
                 ) -> Hardware:
    """The GPU (resolved), or the one-line error of a choice `--splits auto` cannot make: compare
    options it overrides, a backward pass, a GPU without an SM count."""
    for name in ("algorithms", "splits", "impl"):
        if options.get(name) is not None:
            raise IosimError(f"{arg('splits', 'auto')} tries every split count of splitkv; drop "
                             f"{arg(name)}", param=name)
    hw = resolve_hardware(hardware).hardware if isinstance(hardware, str) else hardware
    if workload.pass_ != "fwd":
        raise IosimError(f"{arg('splits', 'auto')} chooses splitkv's KV splits, a forward "
                         f"(decoding) kernel; use {arg('pass_', 'fwd')}", param="splits")
    if hw.sm_count is None:
        raise IosimError(f"{arg('splits', 'auto')} weighs waves over the GPU's SMs, and "
                         f"{hw.path} has no sm_count; give {arg('splits')} a number",
                         param="splits")
    return hw


def _counts(workload: Workload, hardware: Hardware | str,
            programs_per_sm: tuple[tuple[int, int], ...], options: dict[str, Any]) -> _Counts:
    hw = check_choice(workload, hardware, options)
    options = {k: v for k, v in options.items() if k not in ("algorithms", "splits", "impl")}
    block_q, block_kv = options.pop("block_q", None), options.pop("block_kv", None)
    profile = str(options.get("profile", "spec"))
    rule = options.pop("tiles", "code")
    # the tiling compare runs splitkv at (its blocks, and FA2's heuristic's split count)
    tiling = finished_tiling(ALGORITHMS["splitkv"], workload, hw, *sram_budget(
        hw, workload.element_bytes, sram=options.get("sram"),
        sram_elements=options.get("sram_elements")), block_q=block_q, block_kv=block_kv,
        tiles=rule, splits=None)
    assert tiling is not None
    counts = DecodeCounts(workload, hw, Tiles(int(tiling.block_q), int(tiling.block_q),
                                              int(tiling.block_kv), programs_per_sm),
                          tile_rule=rule, **options)
    key_blocks = int(cdiv(workload.n_kv, tiling.block_kv))
    return _Counts(hw, counts, int(tiling.splits), int(tiling.block_q), key_blocks,
                   min(MAX_SPLITS, key_blocks), profile)


def _row(c: _Counts, s: int) -> SplitRow:
    """splitkv at s splits under the decoding time model (and compare's roofline column)."""
    timed = c.counts.splitkv(s)
    kernels = {k.kernel: k for k in timed.kernels}
    split = kernels["splitkv_attn"]
    combine = kernels.get("splitkv_combine")
    est = c.counts.estimate("splitkv", s, c.block_q)
    return SplitRow(s, int(cdiv(c.key_blocks, s)), split.programs, split.utilisation,
                    split.time_s, combine.time_s if combine else 0.0, est.hbm_bytes,
                    timed.roofline_s, True, split.waves, split.chain_s)


def choose_splits(workload: Workload, hardware: Hardware | str, *,
                  programs_per_sm: tuple[tuple[int, int], ...] = (), **options: Any
                  ) -> SplitChoice:
    """splitkv at every eligible split count 1 .. min(128, T_c) for `workload` on `hardware`;
    `options` are compare's (block_q, block_kv, sram, sram_elements, profile, tiles), not
    `algorithms`, `splits` or `impl`; `programs_per_sm` the compiled kernel's occupancy per
    head dim where it is known to differ from the tiling's (decode_time.Tiles)."""
    c = _counts(workload, hardware, programs_per_sm, options)
    bound = (f"1 to {c.top}: " + (f"FA2's limit of {MAX_SPLITS} splits" if c.top == MAX_SPLITS
                                  else f"the {c.key_blocks} key blocks of B_c = "
                                       f"{c.counts.tiles.block_kv}"))
    rows = tuple(_row(c, s) for s in eligible_counts(c.key_blocks, c.top))
    return SplitChoice(workload, c.hw.name, c.hw.sm_count, c.profile, rows, c.heuristic, bound)


def best_split_count(workload: Workload, hardware: Hardware | str, *,
                     programs_per_sm: tuple[tuple[int, int], ...] = (), **options: Any) -> int:
    """choose_splits(...).best.splits, without compare: every count timed at once on arrays
    (split_choice_grid.best_split_counts, with this one point: what `sweep --splits auto`
    runs over all of its points), or, for a workload it does not cover (a window, packed
    sequences, a shared prefix, `programs_per_sm` given), best_split_walk.
    tests/test_split_choice_grid.py, test_sweep_equals_compare.py and test_decode_counts_lean.py
    hold each equal to choose_splits."""
    hw = check_choice(workload, hardware, options)
    if not programs_per_sm:
        from iosim.analysis.split_choice_grid import best_split_counts

        (pick,) = best_split_counts([workload], hw, options)
        if pick is not None:
            return pick
    return best_split_walk(workload, hw, programs_per_sm=programs_per_sm, **options)


def best_split_walk(workload: Workload, hardware: Hardware | str, *,
                    programs_per_sm: tuple[tuple[int, int], ...] = (), **options: Any) -> int:
    """choose_splits(...).best.splits, without timing every count: the counts in order of a
    lower bound on their time (time_bounds), stopping once the bound exceeds the best time
    found (tests/test_decode_counts_lean.py holds the two equal). Each count it times is timed
    on decode_counts_lean's counts, compare's own numbers without the rest of compare. Without
    a measured block time (no chain) every count is timed."""
    c = _counts(workload, hardware, programs_per_sm, options)
    counts = eligible_counts(c.key_blocks, c.top)
    bounds = time_bounds(c, counts)
    if bounds is None:
        return min(counts, key=lambda s: (lean_time_s(c, s), s))
    best: tuple[float, int] | None = None  # (time, count)
    for s in sorted(counts, key=lambda s: (bounds[s], s)):
        if best is not None and bounds[s] > best[0] * (1 + 1e-12):
            break  # every count left is bounded above the best found
        if best is None or (lean_time_s(c, s), s) < best:
            best = (lean_time_s(c, s), s)
    assert best is not None
    return best[1]


def lean_time_s(c: _Counts, s: int) -> float:
    """A row's time_s (the split kernel's and the combine's), from decode_counts_lean's counts
    (the same numbers as compare's)."""
    kernels = {k.kernel: k for k in c.counts.splitkv(s, lean=True).kernels}
    combine = kernels.get("splitkv_combine")
    return kernels["splitkv_attn"].time_s + (combine.time_s if combine else 0.0)


def time_bounds(c: _Counts, counts: list[int]) -> dict[int, float] | None:
    """A lower bound on the time of each count (None without a chain: no measured block time).
    The bound of s splits: the launch and ramp of its one or two kernels, plus
    √(S(s)² + C(s)²), where C(s) is the split kernel's chain at s (its programs s × those at one
    split, ⌈T_c/s⌉ blocks each: exactly the term the row charges) and S(s) the DRAM time of
    its K and V reads at one split, which the L2 model charges at every count alike (each key
    chunk once per KV head: estimates/shared_prefix_dram.split_terms), plus that of its stores
    at s, which split_terms charges at their L2-oblivious count (decode_counts_lean
    .split_store_bytes; s > 1): the row's streaming time is at least that DRAM time; plus
    the combine kernel's loads and stores at the L2's rate, which its memory time never goes
    below (KernelTime.memory_s; 0 without an L2 rate)."""
    one = {k.kernel: k for k in c.counts.splitkv(1, lean=True).kernels}["splitkv_attn"]
    ceil = one.ceilings
    if ceil.block_s is None or not one.programs or not one.slots:
        return None
    dram = c.counts.lean_splitkv(1).dram
    kv = 0.0 if dram is None else sum(t.bytes for t in dram.of_kernel("splitkv_attn").terms
                                      if t.tensor in ("K", "V") and t.op == "read")
    rate = ceil.efficiency * ceil.hbm_bytes_per_s
    many = [s for s in counts if s > 1]
    stores, combine = dict.fromkeys(counts, 0.0), dict.fromkeys(counts, 0.0)
    if many:
        split_bytes, combine_bytes = c.counts.split_stores(many)
        stores.update(zip(many, split_bytes.tolist(), strict=True))
        combine.update(zip(many, combine_bytes.tolist(), strict=True))
    l2_rate = None if ceil.l2_bytes_per_s is None else ceil.efficiency * ceil.l2_bytes_per_s
    sm_count = int(c.hw.sm_count or 1)
    out = {}
    for s in counts:
        programs = s * one.programs
        blocks, flops = c.counts.splitkv_chain(s)
        chain = chain_seconds(ceil, int(cdiv(programs, one.slots)), blocks, flops,
                              co_resident_programs(programs, one.slots, sm_count)
                              if c.counts.workload.latent_kv else 1)
        out[s] = (one.launch_s * (2 if s > 1 else 1) + math.hypot((kv + stores[s]) / rate, chain)
                  + (combine[s] / l2_rate if l2_rate else 0.0))
    return out


def eligible_counts(key_blocks: int, top: int) -> list[int]:
    """1 .. top, less each count that leaves the blocks per split of one split fewer (so that a
    split is empty): the counts FA2's heuristic weighs."""
    return [s for s in range(1, top + 1)
            if s == 1 or int(cdiv(key_blocks, s)) != int(cdiv(key_blocks, s - 1))]
