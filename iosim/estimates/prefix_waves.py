"""The shared prefix re-read by later waves of a split-KV decoding grid (issue 14's var10).

shared_prefix_dram.prefix_once charges a shared prefix's K and V once: the requests' programs
that read one key chunk of it run together. Where the grid runs in several waves, a chunk is
read again by the requests whose programs start a wave later, and those reads come from DRAM
when the chunk left the L2 in between (H200: cas-b32-p16k-s16 −83 %, jcas-b12-p50000-s1000
−78 %, mcas-b28-p6000-s200-gqa8 −29 % under the rule alone). This rule counts them from the
launch order and the L2's soft cutoff, with no constant of its own:

1. **Who reads a chunk, and in which wave.** The split kernel's grid is (splits, KV heads,
   requests × row blocks), the split index fastest (calibrate/kernels_variants.py
   decode_split; FA2's flash_fwd_splitkv_kernel likewise). Every request's splits are
   ⌈⌈L_max/B_c⌉/S⌉ key blocks long (the kernel sizes them by the longest request, as FA2 does
   with params.seqlen_k), so the prefix's chunk k of KV head h is read by sequence q (request ·
   row block) at launch position x_q = q·Δ + h·S + k, Δ = H·S programs apart. Programs of
   equal length run in lockstep waves of W (SMs × programs per SM, the compiled split kernel's
   where its registers bind first: analysis/decode_time.py MEASURED_TILES, 8 at d 64 on the
   H200 where its shared memory gives 10; var12): x's wave is ⌊x / W⌋. The
   readers in one wave read the chunk together (one DRAM read); the chunk's readers span
   ⌊x_last / W⌋ − ⌊x_first / W⌋ + 1 waves where Δ ≤ W (no wave between two readers is
   skipped), every reader its own wave where Δ > W. Each wave after the first re-reads it.
2. **Whether the re-read misses.** Between the reads of one chunk by two waves the L2 sees one
   wave's reads: every chunk of the prefix (a wave of W ≥ Δ programs covers all H·S of them)
   and each of its sequences' own suffix. A line read by the SMs of both L2 partitions is held
   twice (l2_model.SHARED_COPIES; the A100 whitepaper's "each L2 partition localizes and caches
   data for memory accesses from SMs in the GPCs directly connected to the partition"); a
   chunk that k programs of a wave read, each on a partition at random, is held in
   n·(1 − (1 − 1/n)^k) of the n = SHARED_COPIES partitions on average, k = W / Δ (the
   sequences a wave holds, at least one). The reuse distance is therefore
   D = prefix K+V · copies(k) + the own K/V of the max(W, Δ) / Δ sequences of a wave, and the
   re-read misses with l2_cutoff.miss_probability(D, L2).

MHA (one query head per KV head) packs nothing, and its grid is the same (splits, heads,
requests) at one row block (decode_split at group 1), so the rule reads it so (var13: var12's
pcas-b12-p22000-s150-mha-d64, a 90 MB prefix over 1.5-5.8 waves, was −50 … −83 % at one read;
judged fresh on cascade_fresh9: 22 → 30 of 38 split-KV points within ±10 % of ncu, MHA in 8
of its 11 batches; reports/variants-h200.md, "Issue 14, var13"). An unpacked grid with more
query than KV heads (a mask's) is not read: shared prefixes refuse masks (inputs/decoding.py
refuse_unmodelled).

The extra bytes, per chunk, are (waves its readers span − 1) × its prefix K+V × P_miss(D),
added to the split kernel's K and V in proportion to their widths. Nothing changes for one
wave, one request, a prefill, or a kernel other than split-KV's split kernel over a shared
prefix. Judged on cascade_fresh6 (reports/variants-h200.md, "Issue 14, var10"): within ±10 % of
ncu on 24 of 35 split-KV points, against 12 with prefix_once alone. The copies term moves few
of them (2 copies always: the same counts; 1 copy: 17); what is left is over-counted prefixes of
about 0.45 of the L2 and many short splits (docs/variants-decoding.md, "What is not modelled").
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms.loopnest import Kernel
from iosim.estimates.l2_cutoff import miss_probability
from iosim.estimates.l2_model import SHARED_COPIES, DramTerm
from iosim.inputs.ints import cdiv
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

SPLITKV_KERNEL = "splitkv_attn"
NOTE = ("shared prefix: from DRAM once, and again by each later wave whose requests find it "
        "evicted (the launch order, the L2's cutoff)")


class PrefixGrid(Record):
    """A split-KV decoding grid over a shared prefix, as rule 1 of the module docstring reads
    it: `sequences` (requests × row blocks) of `kv_heads` × `splits` programs each, `slots`
    programs at once, each split `chunk_keys` keys of the `prefix_len` shared ones."""

    sequences: int
    kv_heads: int
    splits: int
    slots: int
    chunk_keys: int
    prefix_len: int


def prefix_grid(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                concurrent: int) -> PrefixGrid | None:
    """The grid of split-KV's split kernel over a shared-prefix decoding batch, or None where
    the rule does not apply (no prefix, one request, a prefill, no split kernel or tiling)."""
    if (workload.prefix_len is None or workload.suffix_lens is None or workload.batch < 2
            or workload.n != 1 or tiling is None):
        return None
    split = next((k for k in kernels if k.name == SPLITKV_KERNEL and k.split), None)
    if split is None:
        return None
    g = workload.heads // workload.kv_heads
    # MHA (g = 1) packs nothing and its grid is rule 1's: (splits, heads, requests), one query
    # row a program (kernels_variants.py decode_split at group 1; var13). An unpacked grid
    # with g > 1 (a mask) puts g programs on one KV head's chunk: not the grid rule 1 reads
    if not split.pack_heads and g != 1:
        return None
    row_blocks = int(cdiv(g, int(tiling.block_q)))
    splits = max(1, int(tiling.splits or 1))
    block = int(tiling.block_kv)
    longest = workload.prefix_len + max(workload.suffix_lens)
    chunk = int(cdiv(cdiv(longest, block), splits)) * block
    return PrefixGrid(sequences=workload.batch * row_blocks, kv_heads=workload.kv_heads,
                      splits=splits, slots=max(1, concurrent), chunk_keys=chunk,
                      prefix_len=workload.prefix_len)


def waves_spanned(grid: PrefixGrid, offset: int) -> int:
    """The waves the readers of the chunk at launch offset `offset` (h·S + k) fall in."""
    spacing = grid.kv_heads * grid.splits
    if spacing > grid.slots:
        return grid.sequences
    last = offset + (grid.sequences - 1) * spacing
    return last // grid.slots - offset // grid.slots + 1


FAR_COPY_SHARE = 0.65
"""The share of a line that each further partition's copy of a prefix chunk takes of the L2 in
a wave's reuse distance (issue 14's var11): fitted, not a hardware fact. var10 counted every
copy whole (1.0); the seen records want less, the same at every split count: solving each
over-counted seen point (prefixes of 0.45-0.7 of the L2, 8-32 splits) for the copies that give
ncu's bytes, 1 + s·(copies − 1) gives s ≈ 0.6-0.7 at k = 2.6, 5.2 and 10.3 readers a wave (the
copies var10 counted 1.67, 1.95 and 2.0; the data 1.4, 1.6 and 1.7). Why less than whole is not
known (a far partition's copy replaced sooner than a near one's would read so). Fitted on a
grid 0.5-1.0 by 0.05 over the 128 seen shared-prefix split-KV points (`python benchmarks/
var11_prefix_judge.py --fit`): 123 within ±10 % of ncu with the protocol residue (1.0, var10:
112); 0.6 or 0.7 → 122 or 121, 0.55 or 0.75 → 118 or 119, 0.5 → 112, 0.8 → 116. Re-checked by var12
at the paged split kernel's compiled occupancy (analysis/decode_time.py MEASURED_TILES, 8
programs per SM at d 64) over the 163 seen points (cascade_fresh7 included; `python benchmarks/
var12_prefix_judge.py --fit`): still the best, 148 (0.6 / 0.7 → 145 / 144, 1.0 → 129); kept,
not refitted. var12 tested one named alternative and dropped it: a re-read reaching DRAM only
when every partition holding the line lost it (P_miss^copies at whole copies): 135 of 163."""


def partition_copies(readers: float, partitions: int = SHARED_COPIES) -> float:
    """The partitions that hold a line `readers` programs of a wave read, each on one of
    `partitions` at random: the expected count of distinct ones (at least one reader)."""
    k = max(1.0, readers)
    return float(partitions * (1.0 - (1.0 - 1.0 / partitions) ** k))


def held_copies(readers: float, far_share: float | None = None) -> float:
    """The L2 a prefix line takes in a wave's reuse distance, in lines: its first copy whole and
    each further partition's copy (partition_copies) at FAR_COPY_SHARE of a line."""
    share = FAR_COPY_SHARE if far_share is None else far_share
    return 1.0 + share * (partition_copies(readers) - 1.0)


def reread_keys(grid: PrefixGrid) -> int:
    """Σ over the prefix's chunks (every KV head's) of (waves its readers span − 1) × its
    prefix keys: the key rows later waves read again (rule 1)."""
    total = 0
    chunks = int(cdiv(grid.prefix_len, grid.chunk_keys))
    for h in range(grid.kv_heads):
        for k in range(chunks):
            keys = min(grid.chunk_keys, grid.prefix_len - k * grid.chunk_keys)
            total += (waves_spanned(grid, h * grid.splits + k) - 1) * keys
    return total


def prefix_rereads(terms: Sequence[DramTerm], kernels: Sequence[Kernel], workload: Workload,
                   tiling: Tiling | None, concurrent: int | None,
                   capacity: float | None) -> tuple[DramTerm, ...]:
    """`terms` (prefix_once's) with the split kernel's K and V reads raised by the prefix
    chunks later waves read again from DRAM (the module docstring); unchanged where the rule
    does not apply or no wave re-reads."""
    if concurrent is None or capacity is None:
        return tuple(terms)
    grid = prefix_grid(kernels, workload, tiling, concurrent)
    if grid is None:
        return tuple(terms)
    again_keys = reread_keys(grid)
    if again_keys <= 0:
        return tuple(terms)
    assert workload.prefix_len is not None and workload.suffix_lens is not None
    key_bytes = (workload.d + workload.d_v) * workload.element_bytes  # K and V of one key row
    prefix = workload.prefix_len * workload.kv_heads * key_bytes
    kv_read = sum(t.bytes for t in terms
                  if t.kernel == SPLITKV_KERNEL and t.op == "read" and t.tensor in ("K", "V"))
    own_per_request = max(0.0, (kv_read - prefix) / workload.batch)
    spacing = grid.kv_heads * grid.splits
    requests_a_wave = max(grid.slots, spacing) / spacing * workload.batch / grid.sequences
    distance = (prefix * held_copies(grid.slots / spacing)
                + own_per_request * requests_a_wave)
    miss = miss_probability(distance, capacity)
    if miss <= 0.0:
        return tuple(terms)
    width = {"K": workload.d, "V": workload.d_v}
    extra_row = again_keys * workload.element_bytes * miss  # per column of K or V
    return tuple(replace(t, bytes=t.bytes + round(extra_row * width[t.tensor]), note=NOTE)
                 if t.kernel == SPLITKV_KERNEL and t.op == "read" and t.tensor in width else t
                 for t in terms)
