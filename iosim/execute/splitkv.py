"""Split-KV (Flash-Decoding) forward executor: FlashAttention-2's forward with the keys split too.

Written by hand from FlashAttention-2's sources (flash_fwd_kernel.h
`compute_attn_1rowblock_splitkv`, `combine_attn_seqk_parallel`; flash_api.cpp), not from
iosim/algorithms/splitkv.py:

  split kernel, one program per (query block i, split k) of each (batch, head):
      split k owns key blocks [k·nb, min((k+1)·nb, T_c)), nb = ⌈T_c/splits⌉ (n_blocks_per_split),
      cut short by the causal mask. A program with no key block to visit exits early: it writes a
      zero partial output and a log-sum-exp of −∞ (+∞ with one split, where it writes O and L
      directly) and loads nothing. Otherwise: load Q_i; for each key block (skipping a
      block-sparse mask's zero pairs): load K_j, V_j, online softmax as FlashAttention-2;
      write O_partial[k]_i = O_i/l_i and lse_partial[k]_i = m_i + log l_i (fp32), or, with one
      split, O_i and L_i.
  combine kernel (splits > 1), per (batch, head): read every split's lse_partial, then every
      split's O_partial; L = log Σ_k exp(lse_k), O = Σ_k exp(lse_k − L)·O_partial[k]; write O, L.

GQA decoding (flash_api.cpp `seqlenq_ngroups_swapped`, N_q = 1 and heads > kv_heads): the g query
heads of a KV head become g rows of one problem, so a program serves a KV head and K, V are read
once per KV head. Packed row r of KV head h is row r mod N_q of query head h·g + r div N_q; a
tile of packed rows is read and written piece by piece, one piece per query head.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.execute.forward import _dropped, _finite_or_zero, load_v_tile, online_step
from iosim.execute.fp8 import quantise, read_block_scale, read_descales
from iosim.execute.numerics import Problem, blocks, dropout_keep
from iosim.execute.paged import read_rows, read_table
from iosim.execute.registry import Run, register

Array = np.ndarray[Any, Any]


def packs_heads(pr: Problem) -> bool:
    """FA2 packs a KV head's query heads when decoding one token with GQA/MQA."""
    return pr.n_q == 1 and pr.group > 1 and not pr.masked  # flash_api.cpp: no window


def _pieces(pr: Problem, packed: bool, h: int, r0: int, r1: int) -> list[tuple[int, int, int]]:
    """(query head, first row, last row + 1) of each piece of rows r0..r1 of program head h."""
    if not packed:
        return [(h, r0, r1)]
    out = []
    row = r0
    while row < r1:
        sub, offset = divmod(row, pr.n_q)
        end = min(r1, (sub + 1) * pr.n_q)
        out.append((h * pr.group + sub, offset, offset + end - row))
        row = end
    return out


def _keep_factor(run: Run, b: int, pieces: list[tuple[int, int, int]], k0: int, k1: int,
                 p: Array) -> Array:
    """P with dropout applied, the mask regenerated row piece by row piece (per query head)."""
    if not run.dropout:
        return p
    if len(pieces) == 1:
        head, s0, s1 = pieces[0]
        return _dropped(run, p, b, head, s0, s1, k0, k1)
    keep = np.concatenate([dropout_keep(run.seed, run.problem, b, head, s0, s1, k0, k1,
                                        run.dropout_p) for head, s0, s1 in pieces])
    return np.where(keep, p / (1.0 - run.dropout_p), 0.0).astype(p.dtype)


@register("splitkv", "fwd")
def splitkv_forward(run: Run) -> None:
    """Flash-Decoding's forward: each query block's keys in `splits` ranges, one program each
    writing a partial O and its logsumexp, then the combine kernel; GQA heads packed when N = 1."""
    hbm, pr, pc, sram = run.hbm, run.problem, run.precision, run.sram
    d, dv, cdt, splits = pr.d, pr.dv, pc.compute, run.splits
    packed = packs_heads(pr)
    # the problem the programs see: g·N_q rows per KV head when packed (every row sees every key,
    # since N_q = 1 and the causal mask is bottom-right aligned)
    grid = Problem(pr.batch, pr.kv_heads, pr.kv_heads, pr.n_q * pr.group, pr.n_kv, d, False,
                   pr.sparsity, pr.d_v, pr.latent_kv, pr.fp8_scales, pr.dtype) if packed else pr
    quantise(run, grid)
    row_blocks, kv_blocks = grid.row_blocks(run.block_q), grid.kv_blocks(run.block_kv)
    # nb = ⌈T_c/splits⌉ key blocks per split, T_c of the longest sequence when packed
    # (flash_fwd_kernel.h n_blocks_per_split uses params.seqlen_k, varlen's max_seqlen_k);
    # split k owns blocks k·nb .. (k+1)·nb − 1 of each sequence's own key blocks
    local = grid.kv_block_in_sequence(run.block_kv)
    per_split = -(-(max(local) + 1) // splits)
    computed = grid.nonzero_blocks(run.block_q, run.block_kv)
    shape = (pr.batch, pr.heads, pr.n_q)
    hbm.allocate("O", (*shape, dv), pc.storage)
    hbm.allocate("L", shape, pc.stats)
    if splits > 1:  # flash_api.cpp out_accum, softmax_lse_accum: fp32, one copy per split
        hbm.allocate("O_partial", (*shape, dv), pc.stats, copies=splits)
        hbm.allocate("lse_partial", shape, pc.stats, copies=splits)
    out_name, lse_name = ("O_partial", "lse_partial") if splits > 1 else ("O", "L")
    empty_lse = -np.inf if splits > 1 else np.inf

    with hbm.kernel("splitkv_attn"):
        for b in range(pr.batch):
            if run.kv_lens is not None:
                # a ragged batch: request b's own keys, cut into `splits` runs of its key blocks
                kv_blocks = blocks(run.kv_len(b), run.block_kv)
                local = list(range(len(kv_blocks)))
                per_split = -(-len(kv_blocks) // splits)
            for h in range(grid.heads):  # a query head, or a KV head when packed
                for i, (r0, r1) in enumerate(row_blocks):
                    rows = r1 - r0
                    pieces = _pieces(pr, packed, h, r0, r1)
                    for k in range(splits):  # program (i, k)
                        mine = [j for j, (k0, k1) in enumerate(kv_blocks)
                                if k * per_split <= local[j] < (k + 1) * per_split
                                and grid.block_visited(r0, r1, k0, k1)]
                        acc = np.zeros((rows, dv), dtype=cdt)
                        l_i = np.zeros(rows, dtype=cdt)
                        m_i = np.full(rows, -np.inf, dtype=cdt)
                        if mine:  # an empty split exits before loading anything
                            q = np.concatenate([hbm.read("Q", b, hq, s0, s1)
                                                for hq, s0, s1 in pieces])
                            kv_head = pr.kv_head(h) if not packed else h
                            qs, ks, vs = read_descales(run, b, kv_head)
                            qs *= read_block_scale(run, "Q_scale", b, h, i)
                            sram.hold("Q_i", rows * d, pc.storage_bytes)
                            sram.hold("O_i", rows * dv, pc.storage_bytes)
                            sram.hold("l_i", rows, pc.stats_bytes)
                            sram.hold("m_i", rows, pc.stats_bytes)
                        for j in mine:
                            if not computed[i, j]:
                                continue  # block-sparse: a zero block of the mask is skipped
                            k0, k1 = kv_blocks[j]
                            entries = read_table(hbm, run.page_size, b, k0, k1)
                            kt = read_rows(hbm, run.page_size, entries, "K", b, kv_head, k0, k1)
                            k_scale = read_block_scale(run, "K_scale", b, kv_head, j)
                            vt = load_v_tile(run, b, kv_head, k0, k1, kt, entries)
                            v_scale = k_scale if pr.latent_kv else read_block_scale(
                                run, "V_scale", b, kv_head, j)
                            s = pc.matmul(q, kt.T) * cdt(pr.scale * qs * ks * k_scale)
                            run.scores.hold(rows, k1 - k0)
                            s = np.where(grid.causal_allowed(r0, r1, k0, k1), s, -np.inf)
                            m_i, l_i, p, alpha = online_step(m_i, l_i, s)
                            acc = alpha[:, None] * acc + pc.matmul(
                                _keep_factor(run, b, pieces, k0, k1, p), vt) * cdt(vs * v_scale)
                            sram.drop("K_j", "V_j")
                        seen = l_i > 0
                        out = acc / np.where(seen, l_i, 1.0)[:, None]
                        lse = np.where(seen, _finite_or_zero(m_i)
                                       + np.log(np.where(seen, l_i, 1.0)), empty_lse)
                        for hq, s0, s1 in pieces:  # write the program's output, piece by piece
                            part = _piece_rows(pr, packed, h, r0, hq, s0, s1)
                            hbm.write(out_name, b, hq, s0, s1, out[part], split=k)
                        for hq, s0, s1 in pieces:
                            part = _piece_rows(pr, packed, h, r0, hq, s0, s1)
                            hbm.write(lse_name, b, hq, s0, s1, lse[part], split=k)
                        sram.drop("Q_i", "O_i", "l_i", "m_i")
    if splits == 1:
        return

    with hbm.kernel("splitkv_combine"):  # combine_attn_seqk_parallel
        for b in range(pr.batch):
            for h in range(pr.heads):
                lses = np.stack([hbm.read("lse_partial", b, h, split=k).astype(cdt)
                                 for k in range(splits)])
                outs = np.stack([hbm.read("O_partial", b, h, split=k).astype(cdt)
                                 for k in range(splits)])
                top = _finite_or_zero(lses.max(axis=0))
                total = np.exp(lses - top).sum(axis=0)
                seen = total > 0  # a row no split saw: O = 0, L = +∞ (as the one-split kernel)
                lse = np.where(seen, top + np.log(np.where(seen, total, 1.0)), np.inf)
                weights = np.where(seen, np.exp(lses - np.where(seen, lse, 0.0)), 0.0)
                hbm.write("O", b, h, None, None, (weights[:, :, None] * outs).sum(axis=0))
                hbm.write("L", b, h, None, None, lse)


def _piece_rows(pr: Problem, packed: bool, h: int, r0: int, hq: int, s0: int, s1: int) -> slice:
    """The rows of a program's tile (which starts at packed row r0) that a piece covers."""
    first = ((hq - h * pr.group) * pr.n_q + s0) if packed else s0
    return slice(first - r0, first - r0 + (s1 - s0))
