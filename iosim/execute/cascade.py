"""Cascade (shared-prefix) attention executor: prefix once for every query, suffixes apart, merge.

Written by hand from FlashInfer's cascade inference (`MultiLevelCascadeAttentionWrapper`,
`merge_state`) and vLLM's `cascade_attention`, not from iosim/algorithms/cascade.py. The tensors
are token-major as those libraries hold them: Q and O as [1, heads, B tokens, d]; one K and one V
cache [1, kv_heads, L + Σ s_b, d]: the shared prefix once (rows 0 .. L − 1), then the suffixes,
request b's rows starting at L + s_0 + ... + s_{b−1}. (The host builds them from the batch-major inputs, whose
first L rows are the same for every request; placing is not traffic.)

  prefix kernel: one problem of the B query tokens per head (with GQA, the g query heads of a
      KV head packed: row r of KV head h is token r mod B of query head h·g + r div B), split
      over the L prefix keys like split-KV (program (i, k) visits key blocks [k·nb, (k+1)·nb),
      nb = ⌈T_c/splits⌉; an empty split writes a zero output and a −∞ log-sum-exp, loading
      nothing): load Q_i, then each prefix K_j, V_j; write O_prefix[k]_i, lse_prefix[k]_i.
  suffix kernel: per (request b, head or KV head), split the same way over its own s_b keys:
      load Q_b, then each of its key blocks; write O_suffix[k]_b, lse_suffix[k]_b.
  merge kernel, per head: read every prefix split's lse and O, then every suffix split's;
      L = log Σ exp(lse), O = Σ exp(lse − L)·O; write O and L.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import numpy as np

from iosim.execute.forward import _finite_or_zero, online_step
from iosim.execute.hbm import InstrumentedHBM
from iosim.execute.numerics import Precision, Problem, blocks
from iosim.execute.registry import Run, register
from iosim.execute.splitkv import _piece_rows, _pieces
from iosim.inputs.workload import Workload

Array = np.ndarray[Any, Any]


def place_cascade(hbm: InstrumentedHBM, inputs: dict[str, Array], workload: Workload,
                  storage: Any) -> None:
    """The host's layout: token-major Q, the prefix K/V once, the suffixes ragged."""
    assert workload.prefix_len is not None and workload.suffix_lens is not None
    prefix = workload.prefix_len
    hbm.place("Q", inputs["Q"][:, :, 0][None].transpose(0, 2, 1, 3).astype(storage))
    for name in ("K", "V"):
        cache = inputs[name]
        own = [cache[b:b + 1, :, prefix:prefix + s] for b, s in enumerate(workload.suffix_lens)]
        hbm.place(name, np.concatenate([cache[:1, :, :prefix], *own], axis=2).astype(storage))


def batch_major(token_major: Array) -> Array:
    """O as [1, heads, B, d] → [B, heads, 1, d], as the other executors return it."""
    out: Array = token_major[0].transpose(1, 0, 2)[:, :, None]
    return out


def _attend(run: Run, pr: Problem, packed: bool, h: int, kv_head: int, rows: tuple[int, int],
            q_offset: int, keys: list[tuple[int, int]], out: tuple[str, str],
            split: int) -> None:
    """One program: its query rows (pieces per query head when packed, token rows shifted by
    q_offset), its key blocks (rows of the K/V cache), its output state written to `out`."""
    hbm, pc, sram = run.hbm, run.precision, run.sram
    r0, r1 = rows
    n, d, dv, cdt = r1 - r0, pr.d, pr.dv, pc.compute
    pieces = _pieces(pr, packed, h, r0, r1)
    acc = np.zeros((n, dv), dtype=cdt)
    l_i = np.zeros(n, dtype=cdt)
    m_i = np.full(n, -np.inf, dtype=cdt)
    if keys:  # an empty split exits before loading anything
        q = np.concatenate([hbm.read("Q", 0, hq, q_offset + s0, q_offset + s1)
                            for hq, s0, s1 in pieces])
        sram.hold("Q_i", n * d, pc.storage_bytes)
        sram.hold("O_i", n * dv, pc.storage_bytes)
    for k0, k1 in keys:
        kt = hbm.read("K", 0, kv_head, k0, k1)
        vt = hbm.read("V", 0, kv_head, k0, k1)
        sram.hold("K_j", (k1 - k0) * d, pc.storage_bytes)
        sram.hold("V_j", (k1 - k0) * dv, pc.storage_bytes)
        s = pc.matmul(q, kt.T) * cdt(pr.scale)
        run.scores.hold(n, k1 - k0)
        m_i, l_i, p, alpha = online_step(m_i, l_i, s)
        acc = alpha[:, None] * acc + pc.matmul(p, vt)
        sram.drop("K_j", "V_j")
    seen = l_i > 0
    o = acc / np.where(seen, l_i, 1.0)[:, None]
    lse = np.where(seen, _finite_or_zero(m_i) + np.log(np.where(seen, l_i, 1.0)), -np.inf)
    for value, name in ((o, out[0]), (lse, out[1])):
        for hq, s0, s1 in pieces:
            part = _piece_rows(pr, packed, h, r0, hq, s0, s1)
            hbm.write(name, 0, hq, q_offset + s0, q_offset + s1, value[part], split=split)
    sram.drop("Q_i", "O_i")


def _allocate_states(hbm: InstrumentedHBM, pc: Precision, heads: int, batch: int, d: int,
                     splits: int) -> None:
    """O, L and the prefix's and suffixes' states; `d` is V's head dim d_v."""
    copies = splits if splits > 1 else None
    hbm.allocate("O", (1, heads, batch, d), pc.storage)
    hbm.allocate("L", (1, heads, batch), pc.stats)
    hbm.allocate("O_prefix", (1, heads, batch, d), pc.stats, copies=copies)
    hbm.allocate("lse_prefix", (1, heads, batch), pc.stats, copies=copies)
    hbm.allocate("O_suffix", (1, heads, batch, d), pc.stats, copies=copies)
    hbm.allocate("lse_suffix", (1, heads, batch), pc.stats, copies=copies)


@register("cascade", "fwd")
def cascade_forward(run: Run) -> None:
    """The prefix, suffix and merge kernels on the token-major tensors (module docstring)."""
    hbm, pr, pc = run.hbm, run.problem, run.precision
    lens = run.kv_lens
    assert lens is not None and run.prefix_len is not None
    batch, prefix, splits = pr.batch, run.prefix_len, run.splits
    suffixes = [n - prefix for n in lens]
    packed = pr.group > 1
    heads = pr.kv_heads if packed else pr.heads
    _allocate_states(hbm, pc, pr.heads, batch, pr.dv, splits)

    # the prefix problem: B token rows per query head (B·g per KV head when packed)
    whole = Problem(1, pr.heads, pr.kv_heads, batch, prefix, pr.d, False, d_v=pr.d_v)
    prefix_blocks = blocks(prefix, run.block_kv)
    per_split = -(-len(prefix_blocks) // splits)
    names = ("O_prefix", "lse_prefix")
    with hbm.kernel("cascade_prefix"):
        for h in range(heads):
            kv_head = h if packed else pr.kv_head(h)
            for rows in blocks(batch * (pr.group if packed else 1), run.block_q):
                for k in range(splits):
                    keys = prefix_blocks[k * per_split:(k + 1) * per_split]
                    _attend(run, whole, packed, h, kv_head, rows, 0, keys, names, k)

    one = Problem(1, pr.heads, pr.kv_heads, 1, 1, pr.d, False, d_v=pr.d_v)
    starts = [prefix + s for s in accumulate([0, *suffixes])]
    with hbm.kernel("cascade_suffix"):
        for b, own in enumerate(suffixes):
            for h in range(heads):
                kv_head = h if packed else pr.kv_head(h)
                keys = [(starts[b] + k0, starts[b] + k1) for k0, k1 in blocks(own, run.block_kv)]
                own_split = -(-len(keys) // splits)
                for rows in blocks(pr.group if packed else 1, run.block_q):
                    for k in range(splits):
                        _attend(run, one, packed, h, kv_head, rows, b,
                                keys[k * own_split:(k + 1) * own_split],
                                ("O_suffix", "lse_suffix"), k)

    with hbm.kernel("cascade_merge"):  # merge_state, per head over the B tokens
        cdt = pc.compute
        for h in range(pr.heads):
            copies = range(splits)
            lses = [hbm.read("lse_prefix", 0, h, split=k).astype(cdt) for k in copies]
            outs = [hbm.read("O_prefix", 0, h, split=k).astype(cdt) for k in copies]
            lses += [hbm.read("lse_suffix", 0, h, split=k).astype(cdt) for k in copies]
            outs += [hbm.read("O_suffix", 0, h, split=k).astype(cdt) for k in copies]
            lse_all, out_all = np.stack(lses), np.stack(outs)
            top = _finite_or_zero(lse_all.max(axis=0))
            lse = top + np.log(np.exp(lse_all - top).sum(axis=0))
            weights = np.exp(lse_all - lse)
            hbm.write("O", 0, h, None, None, (weights[:, :, None] * out_all).sum(axis=0))
            hbm.write("L", 0, h, None, None, lse)
