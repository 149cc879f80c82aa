"""Cascade (shared-prefix) attention for a decoding batch: the prefix attended once for every
request's query, each request's suffix apart, then a log-sum-exp merge.

FlashInfer's cascade inference (Ye et al., "Cascade Inference: Memory Bandwidth Efficient Shared
Prefix Batch Decoding", flashinfer.ai blog, 2024; `MultiLevelCascadeAttentionWrapper`, and
`merge_state` in flashinfer/cascade.py) and vLLM's cascade attention (vllm/v1/attention/backends/
flash_attn.py `cascade_attention`: a prefix call with every query packed as one sequence, a
suffix call per request, then `merge_attn_states`) run the same three steps. A shared-prefix
batch (inputs/decoding.py) of B requests, L prefix tokens and s_b own tokens, as iosim counts it
(tensors token-major as FlashInfer and vLLM hold them: Q, O [B tokens, heads, d]; one K and one
V cache [L + Σ s_b, kv_heads, d] holding the prefix once, then each request's suffix in turn):

  prefix kernel, one problem of B query rows per head (the g query heads of a KV head packed
  too: B·g rows, as FA2's `seqlenq_ngroups_swapped` packs one request's): split-KV over the L
  keys, `splits` programs per query block (FA2's heuristic on this problem, or --splits):
      program (i, k): load Q_i; for each of its prefix key blocks: load K_j, V_j;
      write O_prefix[k]_i, lse_prefix[k]_i (fp32)
  suffix kernel, per (request, KV head) its g query rows packed, split-KV over its own s_b
  keys with the same number of splits (a batch-decode kernel, as FlashInfer's, splits too):
      program (b, k): load Q_b; for each of its key blocks: load K_j, V_j;
      write O_suffix[k]_b, lse_suffix[k]_b (fp32)
  merge kernel (`merge_state`), per (request, head): read every split's lse and O of the
      prefix and of the suffix; L = log(Σ exp lse), O = Σ exp(lse − L)·O; write O, L (fp32)
The split count is --splits, or the larger of FA2's heuristic on the prefix problem and on the
suffix problem (batch × KV heads programs over the longest suffix): one count for both kernels,
so that the merge reads 2 × splits states; a split with no key block (a short suffix, a short
prefix) writes a zero output and a −∞ log-sum-exp without loading anything.

So the prefix's K/V are read once per query block of the packed problem — ⌈B·g/B_r⌉ times per KV
head, not B times — which is what cascade saves over split-KV across each request's full KV
(algorithms/segments.py); it pays the partial states' writes and reads and a third launch.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import numpy as np

from iosim.algorithms.base import Algorithm
from iosim.algorithms.flash1 import FORWARD_FLOPS
from iosim.algorithms.loopnest import Access, FlopCount, Kernel, Segment
from iosim.algorithms.packing import packed_problem, packs_heads
from iosim.algorithms.splitkv import (
    MAX_SPLITS,
    SplitKV,
    num_splits_heuristic,
    refuse_too_many_splits,
)
from iosim.errors import IosimError, arg
from iosim.inputs.code_tiles import CodeTiles
from iosim.inputs.ints import Int, both, cdiv, select
from iosim.inputs.tiling import Tiles, Tiling, TilingInputs
from iosim.inputs.workload import Workload
from iosim.record import replace

_FI = "FlashInfer cascade"
_MERGE = "merge_state (FlashInfer cascade.py; vLLM merge_attn_states)"


def _problems(p: TilingInputs, tiles: Tiles) -> tuple[tuple[Int, Int], tuple[Int, Int]]:
    """((programs, key blocks) of the prefix kernel, the same of the suffix kernel). Prefix: B
    query rows per head, the g query heads of a KV head packed (B·g rows), over the L prefix
    keys; suffix: B requests × heads (KV heads when packed) of g rows, over the longest suffix
    N_kv − L."""
    packed = packs_heads(1, p.heads, p.kv_heads)
    rows, heads = packed_problem(p.batch, p.heads, p.kv_heads, packed)
    own_rows, _ = packed_problem(1, p.heads, p.kv_heads, packed)
    prefix = (heads * cdiv(rows, tiles.block_q), cdiv(p.prefix_len, tiles.block_kv))
    suffix = (p.batch * heads * cdiv(own_rows, tiles.block_q),
              cdiv(p.n_kv - p.prefix_len, tiles.block_kv))
    return prefix, suffix


class Cascade(Algorithm):
    """Cascade attention over a shared-prefix batch: prefix, suffix and merge kernels."""
    name = "cascade"
    title = ("cascade attention (FlashInfer, vLLM): the shared prefix attended once for every "
             "request's query, each suffix apart, merged by log-sum-exp")
    tiled = True
    outer = "q"
    kernel_axes = frozenset({"pass_", "n", "heads", "kv_heads", "batch", "prefix_len",
                             "suffix_lens", "splits"})

    def kernels(self, workload: Workload, tiling: Tiling | None = None) -> tuple[Kernel, ...]:
        """The three kernels at the tiling's split count (forward only)."""
        if workload.pass_ != "fwd":
            raise IosimError(f"cascade is a decoding (forward) kernel; use {arg('pass_', 'fwd')}")
        return self.forward(workload, tiling.splits if tiling else 1)

    def forward(self, workload: Workload, splits: int = 1) -> tuple[Kernel, ...]:
        """The prefix, suffix and merge kernels of a shared-prefix batch."""
        if workload.prefix_len is None or workload.suffix_lens is None:
            raise IosimError(f"cascade attends a shared prefix once for a decoding batch; give "
                             f"{arg('prefix_len')} and {arg('suffix_lens')}", param="prefix_len")
        batch, prefix, suffixes = workload.batch, workload.prefix_len, workload.suffix_lens
        pack = bool(packs_heads(1, workload.heads, workload.kv_heads))
        split = splits > 1
        prefix_kernel = Kernel("cascade_prefix", "shared prefix attn", "fused", (
            Access("Q", "read", "outer", "q", "d", f"{_FI}: load every request's Q_i (once per "
                   "split)"),
            Access("K", "read", "inner", "kv", "d", f"{_FI}: load the shared prefix's K_j"),
            Access("V", "read", "inner", "kv", "dv", f"{_FI}: load the shared prefix's V_j"),
            Access("O_prefix", "write", "outer_end", "q", "dv",
                   f"{_FI}: write the prefix state's output (fp32, one per split)",
                   element="fp32", per_split=split),
            Access("lse_prefix", "write", "outer_end", "q", "1",
                   f"{_FI}: write the prefix state's log-sum-exp (one per split)",
                   element="fp32", per_split=split),
        ), FORWARD_FLOPS, loop="q", split=split, grid="blocks", pack_heads=pack,
            segments=(Segment(0, 1, batch, prefix),))
        starts = [0, *accumulate(suffixes)]
        suffix_kernel = Kernel("cascade_suffix", "per-request suffix attn", "fused", (
            Access("Q", "read", "outer", "q", "d", f"{_FI}: load request b's Q"),
            Access("K", "read", "inner", "kv", "d", f"{_FI}: load request b's own K_j"),
            Access("V", "read", "inner", "kv", "dv", f"{_FI}: load request b's own V_j"),
            Access("O_suffix", "write", "outer_end", "q", "dv",
                   f"{_FI}: write the suffix state's output (fp32, one per split)",
                   element="fp32", per_split=split),
            Access("lse_suffix", "write", "outer_end", "q", "1",
                   f"{_FI}: write the suffix state's log-sum-exp (one per split)",
                   element="fp32", per_split=split),
        ), FORWARD_FLOPS, loop="q", split=split, grid="blocks", pack_heads=pack,
            segments=tuple(Segment(0, 1, 1, s, q_start=b, kv_start=prefix + starts[b])
                           for b, s in enumerate(suffixes)))
        merge = Kernel("cascade_merge", "merge states", "elementwise", (
            Access("lse_prefix", "read", "prologue", "q", "1", f"{_MERGE}: read the prefix's "
                   "log-sum-exp (every split's)", element="fp32", per_split=split),
            Access("O_prefix", "read", "prologue", "q", "dv", f"{_MERGE}: read the prefix's "
                   "output (every split's)", element="fp32", per_split=split),
            Access("lse_suffix", "read", "prologue", "q", "1",
                   f"{_MERGE}: read the suffix's log-sum-exp (every split's)", element="fp32",
                   per_split=split),
            Access("O_suffix", "read", "prologue", "q", "dv", f"{_MERGE}: read the suffix's "
                   "output (every split's)", element="fp32", per_split=split),
            Access("O", "write", "prologue", "q", "dv", f"{_MERGE}: write the merged O",
                   element="out"),
            Access("L", "write", "prologue", "q", "1", f"{_MERGE}: write the merged "
                   "log-sum-exp", element="fp32"),
        ), (FlopCount("elementwise", "q", 6, "max, exp and sum of the prefix's and the suffix's "
                      "split LSEs", per_split=True),
            FlopCount("elementwise", "q_dv", 4, "scale and add each prefix and suffix state's "
                      "output", per_split=True)),
            segments=(Segment(0, 1, batch, 1),))
        return prefix_kernel, suffix_kernel, merge

    def code_tiles(self, inputs: TilingInputs) -> CodeTiles | None:
        """splitkv's tiles (FA2's split-KV kernel: 64 × 256 / 128 / 64 by head dim) for both
        attention kernels."""
        return SplitKV().code_tiles(inputs)

    def split_class(self, splits: Any) -> Any:
        """As splitkv: the kernels depend on the split count only through splits > 1."""
        return np.minimum(splits, 2)

    def choose_tiles(self, tiles: Tiles, inputs: TilingInputs) -> Tiles:
        """The splits of the prefix and suffix kernels: the requested count (at most the key
        blocks of the longer of the prefix and the longest suffix) or the larger of FA2's
        heuristic on either problem."""
        p = inputs
        if np.any(np.asarray(p.prefix_len) <= 0):
            raise IosimError(f"cascade needs a shared-prefix batch; give {arg('prefix_len')} "
                             f"and {arg('suffix_lens')}", param="prefix_len")
        (prefix_grid, prefix_blocks), (suffix_grid, suffix_blocks) = _problems(p, tiles)
        longest = np.maximum(p.prefix_len, p.n_kv - p.prefix_len)
        refuse_too_many_splits(p.splits, longest, tiles.block_kv)
        if np.all(np.asarray(p.splits) > 0):
            return replace(tiles, splits=p.splits)
        if np.any(both(np.asarray(p.splits) == 0, np.asarray(p.sm_count) == 0)):
            raise IosimError(f"the GPU's YAML has no sm_count, which the split heuristic needs; "
                             f"give {arg('splits')}")
        auto = np.maximum(
            num_splits_heuristic(prefix_grid, 2 * p.sm_count, prefix_blocks, MAX_SPLITS),
            num_splits_heuristic(suffix_grid, 2 * p.sm_count, suffix_blocks, MAX_SPLITS))
        chosen = select(p.splits > 0, p.splits, auto)
        return replace(tiles, splits=int(chosen) if np.ndim(chosen) == 0 else chosen)

    def describe_tiles(self, tiling: Tiling, tiles: Tiles, inputs: TilingInputs) -> Tiling:
        """The split count and how it was chosen (--splits, or the two heuristics' inputs)."""
        if inputs.splits:
            return replace(tiling, splits=int(tiles.splits),
                           splits_rule="--splits (prefix and suffix kernels)")
        (pg, pb), (sg, sb) = _problems(inputs, tiles)
        rule = (f"the larger of flash_api.cpp num_splits_heuristic for the prefix ({pg} "
                f"programs, {pb} key blocks) and the suffixes ({sg} programs, {sb} key blocks), "
                f"2 × {inputs.sm_count} SMs, max {MAX_SPLITS}")
        return replace(tiling, splits=int(tiles.splits), splits_rule=rule)
