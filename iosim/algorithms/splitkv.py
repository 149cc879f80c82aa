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

from typing import Any

import numpy as np

from iosim.algorithms.base import Algorithm
from iosim.algorithms.flash1 import FORWARD_FLOPS
from iosim.algorithms.fp8 import program_scales, tile_scale
from iosim.algorithms.loopnest import Access, FlopCount, Kernel, v_tile
from iosim.algorithms.packing import packed_problem, packs_heads
from iosim.algorithms.paging import PAGED_CITE, block_table_read
from iosim.algorithms.segments import per_request
from iosim.errors import IosimError, arg
from iosim.inputs.code_tiles import CodeTiles, implementation_or_default, lookup
from iosim.inputs.ints import Int, at_first, both, cdiv, is_array, select
from iosim.inputs.tiling import Tiles, Tiling, TilingInputs
from iosim.inputs.workload import Workload
from iosim.record import replace

MAX_SPLITS = 128
"""flash_api.cpp: num_splits_heuristic(..., 128) and TORCH_CHECK(num_splits <= 128)."""


def num_splits_heuristic(batch_nheads_mblocks: Int, num_sms: Int, num_n_blocks: Int,
                         max_splits: int) -> Int:
    """flash_api.cpp `num_splits_heuristic`, on ints (one workload) or arrays (a sweep).

    "If we have enough to almost fill the SMs, then just use 1 split"; otherwise the smallest
    eligible split count whose wave efficiency n_waves/⌈n_waves⌉ is within 85% of the best.
    A count is not eligible when it leaves the blocks per split unchanged from one split fewer,
    or exceeds min(max_splits, num_sms, num_n_blocks). The caller passes num_sms = 2 × the SM
    count ("We multiply number of SMs by 2 to hard-code the fact that we're using 128 threads
    per block"). Every candidate 1..max_splits is one row of an array, so a grid of points is
    decided at once.
    """
    scalar = not is_array(batch_nheads_mblocks, num_sms, num_n_blocks)
    grid, sms, blocks = (np.asarray(v, dtype=np.int64) for v in np.broadcast_arrays(
        batch_nheads_mblocks, num_sms, num_n_blocks))
    if grid.size > 1:
        # decided once per distinct (grid, SMs, key blocks): a sweep's 640,000 points hold a
        # few thousand, and max_splits rows over every point took 2 GB and most of its time
        code = np.zeros(grid.size, dtype=np.int64)
        for values in (grid, sms, blocks):  # one 1-D factorisation each (a sort of ints)
            distinct, index = np.unique(values.ravel(), return_inverse=True)
            code = np.unique(code * len(distinct) + index.reshape(-1), return_inverse=True)[1]
        first = np.zeros(int(code.max()) + 1, dtype=np.intp)
        first[code] = np.arange(grid.size)  # one point of each distinct triple
        chosen = _heuristic(grid.ravel()[first], sms.ravel()[first], blocks.ravel()[first],
                            max_splits)
        return chosen[code].reshape(grid.shape)
    result = _heuristic(grid, sms, blocks, max_splits)
    return int(result) if scalar else result


def _heuristic(grid: np.ndarray, sms: np.ndarray, blocks: np.ndarray,
               max_splits: int) -> np.ndarray:
    """num_splits_heuristic on arrays of one shape: every candidate split count a row."""
    splits = np.arange(1, max_splits + 1).reshape(-1, *([1] * grid.ndim))
    limit = np.minimum(np.minimum(max_splits, sms), blocks)
    eligible = (splits <= limit) & (
        (splits == 1) | (cdiv(blocks, splits) != cdiv(blocks, np.maximum(splits - 1, 1))))
    n_waves = grid * splits / sms
    efficiency = np.where(eligible, n_waves / np.ceil(n_waves), 0.0)
    good = eligible & (efficiency >= 0.85 * efficiency.max(axis=0))
    chosen = np.where(good.any(axis=0), good.argmax(axis=0) + 1, 1)
    return np.where(grid >= 0.8 * sms, 1, chosen)


def refuse_too_many_splits(splits: Int, n_kv: Int, block_kv: Int) -> None:
    """Raises unless every given split count (0: not given) is at most the key blocks ⌈N_kv/B_c⌉
    it splits (ints or arrays; the message quotes the first point that has too many)."""
    n_blocks = cdiv(n_kv, block_kv)
    too_many = both(splits > 0, splits > n_blocks)
    if np.any(too_many):
        given, blocks, kv, bkv = at_first(too_many, splits, n_blocks, n_kv, block_kv)
        raise IosimError(f"{arg('splits', given)} is more than the {blocks} key blocks (N_kv {kv} "
                         f"in blocks of B_c = {bkv}); use 1 to {blocks}")


class SplitKV(Algorithm):
    """Flash-Decoding: FlashAttention-2 with the key axis split across `splits` programs per query
    block, each writing a partial output and its logsumexp, then a combine kernel."""

    name = "splitkv"
    title = ("Flash-Decoding (split-KV FlashAttention-2): K/V split across programs, partial "
             "outputs combined; GQA heads packed when N = 1")
    tiled = True
    outer = "q"
    kernel_axes = frozenset({"pass_", "n", "heads", "kv_heads", "splits", "latent_kv", "dtype",
                             "fp8_scales", "window", "page_size", "prefix_len", "suffix_lens"})
    """Packing (n, heads, kv_heads; none under a window), the combine kernel (splits), MLA's
    latent cache (no V), FP8's scales, a paged cache's block table, a shared-prefix batch's
    requests."""

    def kernels(self, workload: Workload, tiling: Tiling | None = None) -> tuple[Kernel, ...]:
        """The split kernel, and the combine kernel when the tiling has more than one split (forward only)."""
        if workload.pass_ != "fwd":
            raise IosimError(f"splitkv is an inference (forward-only) kernel; use "
                             f"{arg('pass_', 'fwd')}, or flash2 for the backward pass")
        return self.forward(workload, tiling.splits if tiling else 1)

    def forward(self, workload: Workload, splits: int = 1) -> tuple[Kernel, ...]:
        """The split-KV kernels for `splits` KV splits per query block."""
        if splits > 1:
            outputs = (
                Access("O_partial", "write", "outer_end", "q", "dv",
                       "split kernel: write O_partial (fp32 out_accum, one per split)",
                       element="fp32", per_split=True),
                Access("lse_partial", "write", "outer_end", "q", "1",
                       "blog step 2: write 1 extra scalar per row and per split (log-sum-exp)",
                       element="fp32", per_split=True),
            )
        else:
            outputs = (
                Access("O", "write", "outer_end", "q", "dv", "FA2 Alg. 1 line 14: write O_i",
                       element="out"),
                Access("L", "write", "outer_end", "q", "1", "FA2 Alg. 1 line 15: write L_i",
                       element="fp32"),
            )
        split = Kernel("splitkv_attn", "split-KV attn", "fused", (
            Access("Q", "read", "outer", "q", "d", "FA2 Alg. 1 line 4: load Q_i (once per split)"),
            *program_scales(workload, "outer", "q"),
            *block_table_read(workload, PAGED_CITE),
            Access("K", "read", "inner", "kv", "d", "FA2 Alg. 1 line 7: load K_j (of this split)"),
            *tile_scale(workload, "K", "inner", "kv"),
            *v_tile(workload, Access("V", "read", "inner", "kv", "dv",
                                     "FA2 Alg. 1 line 7: load V_j (of this split)")),
            *tile_scale(workload, "V", "inner", "kv"),
            *outputs,
        ), FORWARD_FLOPS, loop="q", split=True, grid="blocks",
            # flash_api.cpp packs only without a window (window_size_left < 0 &&
            # window_size_right < 0); iosim packs no packed-sequence batch either
            pack_heads=packs_heads(workload.n, workload.heads, workload.kv_heads)
            and not workload.masked)
        if splits == 1:
            return per_request((split,), workload)
        combine = Kernel("splitkv_combine", "combine splits", "elementwise", (
            Access("lse_partial", "read", "prologue", "q", "1",
                   "combine_attn_seqk_parallel: read every split's log-sum-exp", element="fp32",
                   per_split=True),
            Access("O_partial", "read", "prologue", "q", "dv",
                   "combine_attn_seqk_parallel: read every split's partial output",
                   element="fp32", per_split=True),
            Access("O", "write", "prologue", "q", "dv", "blog step 3: write the reduced output O",
                   element="out"),
            Access("L", "write", "prologue", "q", "1", "combine: write the final log-sum-exp L",
                   element="fp32"),
        ), (FlopCount("elementwise", "q", 3, "max, exp and sum of the split LSEs", per_split=True),
            FlopCount("elementwise", "q_dv", 2, "scale and add each split's output",
                      per_split=True)))
        return per_request((split, combine), workload)

    def code_tiles(self, inputs: TilingInputs) -> CodeTiles | None:
        """The split kernel's tiles: flash_fwd_launch_template.h run_mha_fwd_splitkv_dispatch
        (64 × 256 / 128 / 64 by head dim) via the implementation's split_kv table (sdpa-flash's
        by default), unless --tiles alg1."""
        if inputs.tile_rule == "alg1":
            return None
        impl = implementation_or_default(inputs.impl)
        if not impl.split_kv.tiles:
            impl = implementation_or_default(None)
        p = inputs
        code = lookup(impl.split_kv.tiles, impl.shared_memory, d=p.d, causal=p.causal,
                      dtype=p.dtype, element_bytes=p.element_bytes, cc=p.cc,
                      smem_per_block=p.sram_bytes, smem_per_sm=p.sram_bytes)
        return flashmla_tiles(code, p) if p.latent_kv else code

    def split_class(self, splits: Any) -> Any:
        """The kernel list depends on the split count only through splits > 1 (the combine
        kernel's accesses and FLOPs scale by Dims.splits), so 2 stands for every count above 1."""
        return np.minimum(splits, 2)

    def _split_problem(self, tiles: Tiles, inputs: TilingInputs) -> tuple[Int, Int, Int]:
        """(heads, query blocks, key blocks) of one split kernel's problem (packed for GQA
        decoding): what the split rule reads."""
        p = inputs
        packed = both(packs_heads(p.n, p.heads, p.kv_heads), np.logical_not(p.masked))
        rows, heads = packed_problem(p.n, p.heads, p.kv_heads, packed)
        if p.varlen is not None:
            # mha_varlen_fwd: set_params_splitkv(batch = sequences, max_seqlen_q, max_seqlen_k)
            longest = max(p.varlen)
            return heads, len(p.varlen) * cdiv(longest, tiles.block_q), cdiv(longest,
                                                                            tiles.block_kv)
        return heads, cdiv(rows, tiles.block_q), cdiv(p.n_kv, tiles.block_kv)

    def choose_tiles(self, tiles: Tiles, inputs: TilingInputs) -> Tiles:
        """The number of splits: the requested one (checked) or flash_api.cpp's heuristic."""
        p = inputs
        heads, m_blocks, n_blocks = self._split_problem(tiles, p)
        refuse_too_many_splits(p.splits, p.n_kv, tiles.block_kv)
        if np.all(np.asarray(p.splits) > 0):
            return replace(tiles, splits=p.splits)
        if np.any(both(np.asarray(p.splits) == 0, np.asarray(p.sm_count) == 0)):
            raise IosimError(f"the GPU's YAML has no sm_count, which the split heuristic needs; "
                             f"give {arg('splits')}")
        auto = num_splits_heuristic(p.batch * heads * m_blocks, 2 * p.sm_count, n_blocks,
                                    MAX_SPLITS)
        return replace(tiles, splits=select(p.splits > 0, p.splits, auto))

    def describe_tiles(self, tiling: Tiling, tiles: Tiles, inputs: TilingInputs) -> Tiling:
        """The split count and how it was chosen ('--splits', or the heuristic's inputs)."""
        if inputs.splits:
            return replace(tiling, splits=int(tiles.splits), splits_rule="--splits")
        heads, m_blocks, n_blocks = self._split_problem(tiles, inputs)
        grid = inputs.batch * heads * m_blocks
        rule = (f"flash_api.cpp num_splits_heuristic({inputs.batch}·{heads}·{m_blocks} = {grid} "
                f"programs, 2 × {inputs.sm_count} SMs, {n_blocks} key blocks, max {MAX_SPLITS})")
        return replace(tiling, splits=int(tiles.splits), splits_rule=rule)


FLASHMLA_SOURCE = ("FlashMLA csrc/flash_fwd_mla_kernel.h run_mha_fwd_splitkv_mla: "
                   "Flash_fwd_kernel_traits_mla<576, 64, 64, 8, T, 512>")
"""FlashMLA's decoding kernel: 64 query rows (packed heads) × 64 keys, 8 warps, d 576, d_v 512."""


def flashmla_tiles(code: CodeTiles, inputs: TilingInputs) -> CodeTiles:
    """MLA's absorbed decoding (latent_kv) at DeepSeek's dims (d = 576, d_v = 512) tiles as
    FlashMLA does; other dims keep the table's `code`. Shared memory from its SharedStorageMLA:
    Q (64 × 576), K double-buffered (2 × 64 × 576; V is a view of it), P (4,096 elements) in the
    input dtype, and 256 fp32 row scales. Ints or arrays."""
    p = inputs
    mla = both(p.d == 576, p.dv == 512)
    shared = (3 * 64 * 576 + 4096) * p.element_bytes + 256 * 4
    source = FLASHMLA_SOURCE if not is_array(mla) and mla else code.source
    return CodeTiles(select(mla, 64, code.block_q), select(mla, 64, code.block_kv),
                     select(mla, True, code.found), select(mla, shared, code.shared_bytes),
                     select(mla, 8, code.warps), select(mla, 0, code.registers_per_thread),
                     source)
