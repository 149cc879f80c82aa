"""The time of a decoding step's kernels with the costs the roofline of `compare` leaves out, and
the two choices it makes: `--splits auto`'s split count (analysis/split_choice.py) and the
cascade-vs-split-KV verdict of a shared-prefix batch (issue 14). `compare`, `sweep`, `report`
and the Python API all take both from here.

The time of each kernel is analysis/decode_kernel_time.py's (launch + ramp + √(streaming² + chain²)).

Cascade's prefix and suffix kernels run their own split counts (the measured kernels do:
benchmarks/variants_h200.py times every pair of 1, 2, 4, ..., 64 prefix and 1, ..., 32 suffix
splits), and its prefix kernel its own query tile (64 rows, the suffix and split-KV kernels 16:
the kernels' decode_config). The merge kernel reads s_p prefix states and s_s suffix states of
one size each (one per query row and split), so its bytes at (s_p, s_s) are the mean of
cascade's merge at (s_p, s_p) and at (s_s, s_s) exactly.

Speed: every (kernel, split count) is counted once by compare and kept (DecodeCounts); the
model's time of any constants is arithmetic on those counts, so a verdict or a split table
costs one count per split count it weighs, and a fit none after the first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.analysis.compare import compare
from iosim.analysis.comparison import AlgorithmEstimate
from iosim.analysis.decode_counts_lean import (
    LeanEstimate,
    forward_tiling,
    lean_estimate,
    split_dram_at,
    split_store_bytes,
)
from iosim.analysis.decode_kernel_time import (
    Ceilings,
    KernelTime,
    ceilings,
    kernel_times,
    matmul_peak,
    profile_of,
)
from iosim.errors import IosimError
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import cdiv
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

POWERS = (1, 2, 4, 8, 16, 32, 64, 128)


class Timed(Record):
    """One method at one split choice: its kernels' times and total."""

    method: str
    splits: tuple[int, ...]
    """(s,) for split-KV; (prefix splits, suffix splits) for cascade."""
    kernels: tuple[KernelTime, ...]
    roofline_s: float = 0.0
    """`compare`'s roofline time of the same kernels (their sum; a column beside the model)."""

    @property
    def time_s(self) -> float:
        """The kernels' times added (they run one after another)."""
        return sum(k.time_s for k in self.kernels)

    @property
    def dram_bytes(self) -> float:
        """The kernels' DRAM estimates added."""
        return sum(k.dram_bytes for k in self.kernels)

    @property
    def hbm_bytes(self) -> float:
        """The kernels' loads and stores added (the L2-oblivious count compare reports)."""
        return sum(k.l2_bytes for k in self.kernels)

    def label(self) -> str:
        """'8' or '16+2'."""
        return "+".join(str(s) for s in self.splits)

    def under(self, c: Ceilings) -> Timed:
        """The same counts under other ceilings (a fit's trial constants)."""
        return replace(self, kernels=tuple(replace(k, ceilings=c) for k in self.kernels))


class Tiles(Record):
    """The measured kernels' tiles (calibrate/kernels_variants.py DecodeConfig): query rows per
    tile of the split-KV and suffix kernels, the most of the prefix kernel, keys per tile."""

    block_q: int = 16
    prefix_block_q: int = 64
    block_kv: int = 64
    programs_per_sm: tuple[tuple[int, int], ...] = ()
    """(head dim, programs per SM) of the compiled kernels where it differs from the tiling's
    shared-memory figure (their registers bind first); empty: the tiling's."""
    paged_programs_per_sm: tuple[tuple[int, int], ...] = ()
    """The same of the paged split kernel (its block-table gather, compiled apart) where it
    differs from programs_per_sm's; empty: programs_per_sm's."""

    def per_sm(self, d: int, paged: bool = False) -> int | None:
        """The compiled kernels' programs per SM at head dim `d`, of the paged kernel where
        `paged` (None: the tiling's)."""
        own = dict(self.paged_programs_per_sm).get(d) if paged else None
        return own if own is not None else dict(self.programs_per_sm).get(d)

    def prefix_rows(self, workload: Workload) -> int:
        """The prefix kernel's query tile: its B·g rows (B per head unpacked) rounded up to a
        power of two, at least 16 (tl.dot's least) and at most prefix_block_q, as the kernel's
        decode_split picks BLOCK_R."""
        g = workload.heads // workload.kv_heads
        rows = workload.batch * (g if g > 1 else 1)
        return max(16, min(self.prefix_block_q, 1 << max(0, rows - 1).bit_length()))


MEASURED_TILES = Tiles(programs_per_sm=((64, 9),), paged_programs_per_sm=((64, 8),))
"""The tiles of benchmarks/variants_h200.py's kernels (its record's decode_config). Their
occupancy at d = 64: the split kernel compiles to 56 registers × 128 threads (ncu's
launch__registers_per_thread, tests/data/h200-variants.json counters: fdec-b1-128000-mha-d64),
so 65,536 / 7,168 = 9 programs per SM, where its 20 KiB of shared memory alone would allow 10
(the tiling's figure); the measured sweeps step up a wave past 9 × 132 = 1,188 programs
(jdec-b6-131000-gqa8-d64: 1.04× the fastest at 24 splits of 48 programs, 1.21× at 25). The
paged split kernel (every shared-prefix batch's, page 16) compiles to 64 registers at d = 64
in all 37 d 64 split-KV counts over a shared prefix in that record (17 before var12's fresh
set, 20 in it): 65,536 / (64 × 128) = 8 programs per SM
(issue 14's var12; tests/test_decode_occupancy.py reads both off the record). At d = 128 the
paged kernel's 80-96 registers and its 38 KiB of shared memory both give 5, the tiling's
figure (the contiguous kernel's 102-register compiles would hold 4: not modelled)."""


def _hardware(hardware: Hardware | str) -> Hardware:
    return resolve_hardware(hardware).hardware if isinstance(hardware, str) else hardware


class DecodeCounts:
    """compare's counts of one decoding workload's kernels, each (algorithm, split count,
    query tile) counted once and kept; the model's times come from them under any ceilings.
    `options` are compare's (sram, sram_elements, profile: the roofline column's; tile_rule:
    compare's `tiles`, "code" or "alg1")."""

    def __init__(self, workload: Workload, hardware: Hardware | str,
                 tiles: Tiles = MEASURED_TILES, *, tile_rule: str = "code",
                 **options: Any) -> None:
        self.workload, self.hw, self.tiles = workload, _hardware(hardware), tiles
        self.c = ceilings(self.hw)
        self.peak = matmul_peak(self.hw, workload)
        self.options = {"profile": profile_of(self.hw), **options, "tiles": tile_rule}
        self._kept: dict[tuple[str, int, int], AlgorithmEstimate] = {}
        self._lean: dict[int, LeanEstimate] = {}
        self._forward: tuple[Tiling | None] | None = None  # splitkv's forward blocks, once

    def estimate(self, algorithm: str, splits: int, block_q: int) -> AlgorithmEstimate:
        """compare's estimate of `algorithm` at `splits` splits and B_r = `block_q` (kept)."""
        key = (algorithm, splits, block_q)
        if key not in self._kept:
            result = compare(self.workload, self.hw, algorithms=[algorithm], block_q=block_q,
                             block_kv=self.tiles.block_kv, splits=splits, **self.options)
            est = next(a for a in result.algorithms if a.algorithm == algorithm)
            self._kept[key] = self._at_split_occupancy(algorithm, est)
        return self._kept[key]

    @property
    def split_per_sm(self) -> int | None:
        """The split kernel's programs per SM as compiled (Tiles.per_sm; None: the tiling's): the
    paged kernel's for a paged cache or a shared prefix (benchmarks/variants_h200.py runs
    split-KV over a shared prefix through page tables, as prefix caching stores it)."""
        w = self.workload  # a shared prefix is read through a block table: the paged kernel
        return self.tiles.per_sm(w.d, paged=w.page_size is not None or w.prefix_len is not None)

    def _at_split_occupancy(self, algorithm: str, est: Any) -> Any:
        """`est` (compare's or the lean estimate of `algorithm`) with split-KV's DRAM estimate
        at the split kernel's compiled occupancy, where it is known and not the tiling's: the
        waves the L2 rules count (prefix_waves, launch_order_dram) are the compiled kernel's,
        as its time's are (kernel_times' per_sm)."""
        per_sm = self.split_per_sm
        if (algorithm != "splitkv" or per_sm is None or est.dram is None or est.tiling is None
                or per_sm == est.tiling.programs_per_sm):
            return est
        return replace(est, dram=split_dram_at(self.workload, self.hw, est.tiling, per_sm))

    def key_blocks(self, length: int) -> int:
        """⌈length / B_c⌉."""
        return int(cdiv(length, self.tiles.block_kv))

    def block_flops(self, block_q: int) -> float:
        """The two dots of one key block at a B_r-row query tile: 2·B_r·B_c·(d + d_v)."""
        w = self.workload
        return 2.0 * block_q * self.tiles.block_kv * (w.d + w.d_v)

    def splitkv_chain(self, splits: int) -> tuple[int, float]:
        """(key blocks one split program walks, FLOPs of one block's dots) at `splits` splits:
        ⌈T_c / s⌉ of the longest request's key blocks, at the split kernel's query tile."""
        return (int(cdiv(self.key_blocks(self.workload.n_kv), splits)),
                self.block_flops(self.tiles.block_q))

    def lean_splitkv(self, splits: int) -> LeanEstimate:
        """What the model reads of estimate("splitkv", splits, tiles.block_q), without the rest
        of compare (decode_counts_lean.py; kept)."""
        if splits not in self._lean:
            self._lean[splits] = self._at_split_occupancy("splitkv", lean_estimate(
                "splitkv", self.workload, self.hw, self._splitkv_forward(), splits=splits,
                blocks_given=True, tiles=self.options["tiles"]))
        return self._lean[splits]

    def split_stores(self, counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """splitkv's split kernel's stores and its combine kernel's loads and stores at each of
        `counts` (> 1), on arrays (decode_counts_lean.split_store_bytes)."""
        return split_store_bytes(self.workload, self.hw, self._splitkv_forward(), counts,
                                 tiles=self.options["tiles"])

    def _splitkv_forward(self) -> Tiling | None:
        if self._forward is None:  # compare's forward blocks of splitkv at these tiles, once
            self._forward = (forward_tiling("splitkv", self.workload, self.hw,
                                            block_q=self.tiles.block_q,
                                            block_kv=self.tiles.block_kv, **self.options),)
        return self._forward[0]

    def splitkv(self, splits: int, *, lean: bool = False) -> Timed:
        """Split-KV over each request's full KV at `splits` splits; `lean`: its kernels' times
        from lean_splitkv (the same), without compare's roofline column (roofline_s 0)."""
        est = (self.lean_splitkv(splits) if lean
               else self.estimate("splitkv", splits, self.tiles.block_q))
        kernels = kernel_times(est, self.c, self.peak, {"splitkv_attn": self.splitkv_chain(splits)},
                               self.split_per_sm,
                               shared_sm=self.workload.latent_kv)
        return Timed("splitkv", (splits,), kernels,
                     0.0 if isinstance(est, LeanEstimate) else est.time_s)

    def _cascade(self, splits: int, block_q: int) -> tuple[AlgorithmEstimate, dict[str, KernelTime]]:
        w = self.workload
        assert w.prefix_len is not None and w.suffix_lens is not None
        est = self.estimate("cascade", splits, block_q)
        flops = self.block_flops(block_q)
        chains = {"cascade_prefix": (int(cdiv(self.key_blocks(w.prefix_len), splits)), flops),
                  "cascade_suffix": (int(cdiv(self.key_blocks(max(w.suffix_lens)), splits)),
                                     flops)}
        kernels = kernel_times(est, self.c, self.peak, chains, self.tiles.per_sm(w.d))
        return est, {k.kernel: k for k in kernels}

    def cascade(self, prefix_splits: int, suffix_splits: int) -> Timed:
        """Cascade's three kernels at (prefix_splits, suffix_splits): the prefix kernel at its
        own query tile, the merge's terms the mean of its terms at either count (its two state
        sets are one size each)."""
        p_est, p = self._cascade(prefix_splits, self.tiles.prefix_rows(self.workload))
        s_est, s = self._cascade(suffix_splits, self.tiles.block_q)
        merge_p = self._cascade(prefix_splits, self.tiles.block_q)[1]["cascade_merge"]
        merge_s = s["cascade_merge"]
        merge = replace(merge_s, dram_bytes=(merge_s.dram_bytes + merge_p.dram_bytes) / 2,
                        l2_bytes=(merge_s.l2_bytes + merge_p.l2_bytes) / 2,
                        compute_s=(merge_s.compute_s + merge_p.compute_s) / 2)
        roof = {k.name: k.time_s for k in p_est.kernels}
        roof_s = {k.name: k.time_s for k in s_est.kernels}
        roofline = roof["cascade_prefix"] + roof_s["cascade_suffix"] + roof_s["cascade_merge"]
        return Timed("cascade", (prefix_splits, suffix_splits),
                     (p["cascade_prefix"], s["cascade_suffix"], merge), roofline)


def splitkv_timed(workload: Workload, hardware: Hardware | str, splits: int,
                  tiles: Tiles = MEASURED_TILES) -> Timed:
    """Split-KV over each request's full KV at `splits` splits."""
    return DecodeCounts(workload, hardware, tiles).splitkv(splits)


class CascadeTimer(DecodeCounts):
    """Cascade's kernels at any (prefix, suffix) split pair (DecodeCounts.cascade)."""

    def timed(self, prefix_splits: int, suffix_splits: int) -> Timed:
        """DecodeCounts.cascade."""
        return self.cascade(prefix_splits, suffix_splits)


def counts_up_to(blocks: int, top: int) -> list[int]:
    """1, 2, 4, ... up to min(blocks, top): the split counts the measured kernels time."""
    return [s for s in POWERS if s <= min(blocks, top)]


class TimedVerdict(Record):
    """Each method at the split choice the model finds fastest, and the winner."""

    splitkv: Timed
    cascade: Timed

    @property
    def winner(self) -> str:
        """'cascade' or 'splitkv' (split-KV on a tie: one launch fewer)."""
        return "cascade" if self.cascade.time_s < self.splitkv.time_s else "splitkv"

    @property
    def loser(self) -> str:
        """The other method."""
        return "splitkv" if self.winner == "cascade" else "cascade"

    @property
    def ratio(self) -> float:
        """The loser's time over the winner's (≥ 1)."""
        a, b = self.splitkv.time_s, self.cascade.time_s
        return max(a, b) / min(a, b)


def timed_verdict(workload: Workload, hardware: Hardware | str, tiles: Tiles = MEASURED_TILES,
                  *, splitkv_top: int = 128, prefix_top: int = 64, suffix_top: int = 32,
                  counts: DecodeCounts | None = None, **options: Any) -> TimedVerdict:
    """Split-KV at 1, 2, 4, ..., splitkv_top splits and cascade at every pair of 1, ...,
    prefix_top and 1, ..., suffix_top (as benchmarks/variants_h200.py times them), each at
    its fastest under the model; `options` are DecodeCounts' (sram, sram_elements, profile,
    tile_rule)."""
    if workload.prefix_len is None or workload.suffix_lens is None:
        raise IosimError("the cascade verdict needs a shared-prefix batch (prefix_len and "
                         "suffix_lens)", param="prefix_len")
    dc = counts or DecodeCounts(workload, hardware, tiles, **options)
    split = min((dc.splitkv(s) for s in counts_up_to(dc.key_blocks(workload.n_kv), splitkv_top)),
                key=lambda t: t.time_s)
    pairs = [(p, s) for p in counts_up_to(dc.key_blocks(workload.prefix_len), prefix_top)
             for s in counts_up_to(dc.key_blocks(max(workload.suffix_lens)), suffix_top)]
    cascade = min((dc.cascade(p, s) for p, s in pairs), key=lambda t: t.time_s)
    return TimedVerdict(split, cascade)
