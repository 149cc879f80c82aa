"""Flash-Decoding (split-KV): FlashAttention-2's forward with the key/value sequence split too.

The Flash-Decoding blog (Dao, Haziza, Massa, Sizov): "1. First, we split the keys/values in
smaller chunks. 2. We compute the attention of the query with each of these splits in parallel
using FlashAttention. We also write 1 extra scalar per row and per split: the log-sum-exp of the
attention values. 3. Finally, we compute the actual output by reducing over all the splits" —
"2 separate kernels". As FlashAttention-2's CUDA code runs it (flash_fwd_kernel.h
`compute_attn_1rowblock_splitkv`, flash_fwd_launch_template.h `run_flash_splitkv_fwd`):

  split kernel, grid (num_m_block, num_splits, b·h): program (i, k)
      if split k holds a key block row block i sees:   load Q_i
        for each key block j of split k (nb = ⌈T_c/splits⌉ blocks per split): load K_j, V_j
      write O_partial[k]_i (fp32, d per row) and lse_partial[k]_i (fp32)   — an empty split
      writes its zero output and −∞ log-sum-exp without loading anything
  combine kernel (`combine_attn_seqk_parallel`): read every split's lse_partial and O_partial,
      write O (input dtype) and L (fp32)
With one split the kernel writes O and L itself and there is no combine kernel. K and V are
read once in total per (query head, query block); Q is read once per split; the partial
buffers (flash_api.cpp `out_accum` [s, b, h, N_q, d], `softmax_lse_accum` [s, b, h, N_q], fp32)
are written once and read once: 2·s·b·h·N_q·(d + 1) fp32 elements. (FA2 pads d to its kernel's
head dimension, 32/64/96/128/...; iosim counts d.)

Decoding with GQA (flash_api.cpp `seqlenq_ngroups_swapped`: N_q = 1 and heads > kv_heads): "Faster
to transpose q from (b, 1, (nheads_kv ngroups), d) to (b, ngroups, nheads_kv, d)": the g query
heads of a KV head become g rows of one query tile, so K and V are read once per KV head.

The number of splits is --splits, or flash_api.cpp's `num_splits_heuristic`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from iosim.algorithms.base import Algorithm
from iosim.algorithms.blocks import cdiv
from iosim.algorithms.flash1 import FORWARD_FLOPS
from iosim.algorithms.loopnest import Access, FlopCount, Kernel
from iosim.errors import IosimError
from iosim.inputs.workload import Tiling, Workload

MAX_SPLITS = 128
"""flash_api.cpp: num_splits_heuristic(..., 128) and TORCH_CHECK(num_splits <= 128)."""


def num_splits_heuristic(batch_nheads_mblocks: int, num_sms: int, num_n_blocks: int,
                         max_splits: int) -> int:
    """flash_api.cpp `num_splits_heuristic`, line for line.

    "If we have enough to almost fill the SMs, then just use 1 split"; otherwise the smallest
    eligible split count whose wave efficiency n_waves/⌈n_waves⌉ is within 85% of the best.
    A count is not eligible when it leaves the blocks per split unchanged from one split fewer.
    The caller passes num_sms = 2 × the SM count ("We multiply number of SMs by 2 to hard-code
    the fact that we're using 128 threads per block").
    """
    if batch_nheads_mblocks >= 0.8 * num_sms:
        return 1
    max_splits = min(max_splits, num_sms, num_n_blocks)

    def eligible(splits: int) -> bool:
        return splits == 1 or cdiv(num_n_blocks, splits) != cdiv(num_n_blocks, splits - 1)

    efficiency = []
    for splits in range(1, max_splits + 1):
        if not eligible(splits):
            efficiency.append(0.0)
            continue
        n_waves = batch_nheads_mblocks * splits / num_sms
        efficiency.append(n_waves / -(-n_waves // 1))
    best = max(efficiency, default=0.0)
    for splits in range(1, max_splits + 1):
        if eligible(splits) and efficiency[splits - 1] >= 0.85 * best:
            return splits
    return 1


def packs_heads(workload: Workload) -> bool:
    """flash_api.cpp `seqlenq_ngroups_swapped`: one query token and more query than KV heads."""
    return workload.n == 1 and workload.group_size > 1


class SplitKV(Algorithm):
    name = "splitkv"
    title = ("Flash-Decoding (split-KV FlashAttention-2): K/V split across programs, partial "
             "outputs combined; GQA heads packed when N = 1")
    tiled = True
    outer = "q"

    def kernels(self, workload: Workload, tiling: Tiling | None = None) -> tuple[Kernel, ...]:
        if workload.pass_ != "fwd":
            raise IosimError("splitkv is an inference (forward-only) kernel; use --pass fwd, "
                             "or flash2 for the backward pass")
        return self.forward(workload, tiling.splits if tiling else 1)

    def forward(self, workload: Workload, splits: int = 1) -> tuple[Kernel, ...]:
        if splits > 1:
            outputs = (
                Access("O_partial", "write", "outer_end", "q", "d",
                       "split kernel: write O_partial (fp32 out_accum, one per split)",
                       element="fp32", per_split=True),
                Access("lse_partial", "write", "outer_end", "q", "1",
                       "blog step 2: write 1 extra scalar per row and per split (log-sum-exp)",
                       element="fp32", per_split=True),
            )
        else:
            outputs = (
                Access("O", "write", "outer_end", "q", "d", "FA2 Alg. 1 line 14: write O_i"),
                Access("L", "write", "outer_end", "q", "1", "FA2 Alg. 1 line 15: write L_i",
                       element="fp32"),
            )
        split = Kernel("splitkv_attn", "split-KV attn", "fused", (
            Access("Q", "read", "outer", "q", "d", "FA2 Alg. 1 line 4: load Q_i (once per split)"),
            Access("K", "read", "inner", "kv", "d", "FA2 Alg. 1 line 7: load K_j (of this split)"),
            Access("V", "read", "inner", "kv", "d", "FA2 Alg. 1 line 7: load V_j (of this split)"),
            *outputs,
        ), FORWARD_FLOPS, loop="q", split=True, pack_heads=packs_heads(workload), grid="blocks")
        if splits == 1:
            return (split,)
        combine = Kernel("splitkv_combine", "combine splits", "elementwise", (
            Access("lse_partial", "read", "prologue", "q", "1",
                   "combine_attn_seqk_parallel: read every split's log-sum-exp", element="fp32",
                   per_split=True),
            Access("O_partial", "read", "prologue", "q", "d",
                   "combine_attn_seqk_parallel: read every split's partial output",
                   element="fp32", per_split=True),
            Access("O", "write", "prologue", "q", "d", "blog step 3: write the reduced output O"),
            Access("L", "write", "prologue", "q", "1", "combine: write the final log-sum-exp L",
                   element="fp32"),
        ), (FlopCount("elementwise", "q", 3, "max, exp and sum of the split LSEs", per_split=True),
            FlopCount("elementwise", "q_d", 2, "scale and add each split's output",
                      per_split=True)))
        return split, combine

    def split_class(self, splits: Any) -> Any:
        """The kernel list depends on the split count only through splits > 1 (the combine
        kernel's accesses and FLOPs scale by Dims.splits), so 2 stands for every count above 1."""
        return np.minimum(splits, 2)

    def finish_tiling(self, tiling: Tiling | None, workload: Workload, *, sm_count: int | None,
                      splits: int | None, blocks_given: bool = False) -> Tiling | None:
        """The number of splits: --splits (checked) or flash_api.cpp's heuristic."""
        assert tiling is not None
        rows = workload.n * (workload.group_size if packs_heads(workload) else 1)
        heads = workload.heads_kv if packs_heads(workload) else workload.heads
        m_blocks = cdiv(rows, tiling.block_q)
        n_blocks = cdiv(workload.seq_kv, tiling.block_kv)
        if splits is not None:
            if isinstance(splits, bool) or not isinstance(splits, int) or splits < 1:
                raise IosimError(f"--splits must be a whole number of at least 1, got {splits!r}")
            if splits > n_blocks:
                raise IosimError(
                    f"--splits {splits} is more than the {n_blocks} key blocks (N_kv "
                    f"{workload.seq_kv} in blocks of B_c = {tiling.block_kv}); use 1 to {n_blocks}")
            return replace(tiling, splits=splits, splits_rule="--splits")
        if sm_count is None:
            raise IosimError("the GPU's YAML has no sm_count, which the split heuristic needs; "
                             "give --splits")
        grid = workload.batch * heads * m_blocks
        chosen = num_splits_heuristic(grid, 2 * sm_count, n_blocks, MAX_SPLITS)
        rule = (f"flash_api.cpp num_splits_heuristic({workload.batch}·{heads}·{m_blocks} = {grid} "
                f"programs, 2 × {sm_count} SMs, {n_blocks} key blocks, max {MAX_SPLITS})")
        return replace(tiling, splits=chosen, splits_rule=rule)
