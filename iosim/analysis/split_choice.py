"""`--splits auto`: splitkv's predicted time at every split count, the best pick, and the
FlashAttention-2 heuristic's pick beside it.

For each split count s = 1 .. min(128, T_c) (flash_api.cpp refuses more than 128 splits; a split
needs a key block) the split kernel and, for s > 1, the combine kernel are counted and placed on
the roofline exactly as `compare` places them (its own function runs per count). The split
kernel's time is then divided by the utilisation of its grid (batch × heads × query blocks × s
programs) over the GPU's resident *slots*, c programs per SM × the SMs,

    u_slots = P / (c·S · ⌈P / (c·S)⌉),

not over the SMs alone as `compare` divides it (estimates/occupancy.py, measured on
FlashAttention-2's prefill, whose programs reach an SM's rate one at a time). A decoding split
kernel is memory-bound with a few query rows per program: its DRAM rate follows the loads in
flight, so every resident program adds to it until the slots are full (Little's law). On the
H200 record of issue 14 (tests/data/h200-variants.json, 10 decode shapes timed at every split
count) the slot rule's pick is within 5 % of the fastest measured count on 8 shapes, the SM
rule's on 5, FA2's heuristic's on 6 (docs/variants-decoding.md; the rule was chosen on those
same shapes, so it is not yet judged on held-out ones). The best pick is the count with the
least total time (the smallest such count on a tie), among the counts FA2 would run: a count
that leaves the blocks per split of one split fewer (so that a split is empty) is skipped. FA2's heuristic
(splitkv.num_splits_heuristic) instead asks for the smallest count whose wave efficiency is
within 85 % of the best, and for 1 split whenever the grid already holds 80 % of 2 × the SMs: it
never weighs the extra partial-output traffic and the combine kernel against the waves, and its
"SMs" are doubled (two 128-thread programs per SM), so it can stop short of (or go past) the
count that fills the GPU.
"""

from __future__ import annotations

from typing import Any

from iosim.algorithms.splitkv import MAX_SPLITS
from iosim.analysis.compare import compare
from iosim.analysis.comparison import AlgorithmEstimate, Comparison
from iosim.errors import IosimError, arg
from iosim.estimates.occupancy import utilisation
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import cdiv
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

SCHEMA = "iosim.splits/1"


class SplitRow(Record):
    """splitkv at one split count."""

    splits: int
    blocks_per_split: int
    programs: int
    utilisation: float
    """u_slots of the split kernel's grid (1.0 when every resident slot of every SM is busy in
    every wave)."""
    split_kernel_s: float
    """The split kernel's time at u_slots (compare's time × its u over the SMs ÷ u_slots)."""
    combine_s: float
    hbm_bytes: int
    compare_s: float = 0.0
    """splitkv's total time as `compare` reports it (u over the SMs alone)."""
    eligible: bool = True
    """False where the count leaves the blocks per split of one split fewer (then a split is
    empty: FA2's heuristic skips such counts, and so does the pick)."""

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
                      "time_s": r.time_s, "compare_time_s": r.compare_s,
                      "hbm_bytes": r.hbm_bytes, "eligible": r.eligible}
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


def choose_splits(workload: Workload, hardware: Hardware | str, **options: Any) -> SplitChoice:
    """splitkv at every split count 1 .. min(128, T_c) for `workload` on `hardware`; `options`
    are compare's (block_q, block_kv, sram, sram_elements, profile, tiles), not `algorithms`,
    `splits` or `impl`."""
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
    options = {k: v for k, v in options.items() if k not in ("algorithms", "splits", "impl")}
    first = _splitkv(compare(workload, hw, algorithms=["splitkv"], **options))
    tiling = first.tiling
    assert tiling is not None
    heuristic = int(tiling.splits)
    key_blocks = int(cdiv(workload.n_kv, tiling.block_kv))
    top = min(MAX_SPLITS, key_blocks)
    bound = (f"1 to {top}: " + (f"FA2's limit of {MAX_SPLITS} splits" if top == MAX_SPLITS
                                else f"the {key_blocks} key blocks of B_c = {tiling.block_kv}"))
    rows = []
    for s in range(1, top + 1):
        est = _splitkv(compare(workload, hw, algorithms=["splitkv"], splits=s, **options))
        kernels = {k.name: k for k in est.kernels}
        split = kernels["splitkv_attn"]
        combine = kernels.get("splitkv_combine")
        occupancy = next(o for o in est.occupancy if o.kernel == "splitkv_attn")
        programs = occupancy.programs
        slots = float(utilisation(programs, hw.sm_count * occupancy.per_sm))
        per_split = int(cdiv(key_blocks, s))
        eligible = s == 1 or per_split != int(cdiv(key_blocks, s - 1))
        rows.append(SplitRow(s, per_split, programs, slots,
                             split.time_s * split.utilisation / slots,
                             combine.time_s if combine else 0.0, est.hbm_bytes, est.time_s,
                             eligible))
    return SplitChoice(workload, hw.name, hw.sm_count, str(options.get("profile", "spec")),
                       tuple(rows), heuristic, bound)
