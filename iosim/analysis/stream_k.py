"""cuDNN's "lean" decode: a stream-K split of the key range (split_kv rule `stream-k`).

Every sdpa-cudnn decode step (n = 1) that torch.profiler recorded on the H200 with batch ×
KV heads ≤ 64 ran two kernels, cuDNN's `sdpa_sm80_flash_fprop` and
`cudnn::fusion::lean_reduction_kernel` (2-7 µs), and every one with batch × KV heads ≥ 80 ran
the fused kernel alone (68 decode points of tests/data/h200-impl-{fit,fit2,calibrate,
validation,validation2..6}.json, none against; tests/test_stream_k.py). Lean Attention
(Sanovar et al., 2024, arXiv:2405.10480) is a stream-K decode: the key blocks of all (batch,
KV head) pairs are divided over a persistent grid so that every SM streams K and V, and a
reduction kernel merges the partial outputs of the heads a CTA boundary cut — Flash-Decoding's
split-KV with its split count chosen to fill the GPU.

iosim runs it as its `splitkv` loop nest (algorithms/splitkv.py) with

    programs = batch · kv_heads · ⌈rows / block_q⌉     (the g query heads of a KV head packed
                                                         into rows, as the kernel's 16-row tile
                                                         `16x128xD` in its name takes them)
    splits   = min(⌊SMs / programs⌋, ⌈N_kv / block_kv⌉, MAX_SPLITS)

and the split path whenever splits ≥ 2, i.e. programs ≤ SMs / 2 (66 on the H200's 132 SMs:
the records bracket the switch between 64 and 80). The integer split count is iosim's stand-in
for stream-K's even division (the count of partial outputs per head, ⌊SMs / programs⌋ or one
more, and a grid of at most one wave); every count stays exact for any split count (closed form
= tile walk = executor, `iosim verify`). The lean kernel's time under the measured profile is
analysis/lean_time.py's (its iterations in rounds of every CTA's tiles), not its roofline.
"""

from __future__ import annotations

from iosim.algorithms.packing import packed_problem, packs_heads
from iosim.algorithms.splitkv import MAX_SPLITS
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.ints import cdiv
from iosim.inputs.workload import Workload

RULE = "stream-k"
"""The split_kv.rule value (inputs/implementations_yaml.py SPLIT_RULES)."""

MIN_SPLITS = 2
"""The split path runs when at least this many splits fit: below it the fused kernel alone
fills as many SMs as a split would (one program per (batch, KV head) and row block)."""


def stream_k_problem(impl: Implementation, workload: Workload, sram_bytes: int
                     ) -> tuple[int, int, int] | None:
    """(programs of one split, key blocks, block_kv) of a decode step under the
    implementation's split_kv tiles; None when no tile row matches."""
    from iosim.inputs.code_tiles import lookup
    from iosim.inputs.implementations import dtype_code

    code = lookup(impl.split_kv.tiles, impl.shared_memory, d=workload.d, causal=workload.causal,
                  dtype=dtype_code(workload.dtype), element_bytes=workload.element_bytes, cc=0,
                  smem_per_block=sram_bytes, smem_per_sm=sram_bytes)
    if not code.found:
        return None
    rows, heads = packed_problem(workload.n, workload.heads, workload.kv_heads,
                                 packs_heads(workload.n, workload.heads, workload.kv_heads)
                                 and not workload.masked)
    programs = int(workload.batch * heads * cdiv(rows, int(code.block_q)))
    return programs, int(cdiv(workload.n_kv, int(code.block_kv))), int(code.block_kv)


def stream_k_splits(impl: Implementation, workload: Workload, hardware: Hardware,
                    sram_bytes: int) -> int:
    """The split count of the module docstring; 1 (the fused kernel alone) for a prefill,
    a backward pass, a GPU without sm_count, or no matching tile row."""
    if workload.pass_ != "fwd" or workload.n != 1 or hardware.sm_count is None:
        return 1
    problem = stream_k_problem(impl, workload, sram_bytes)
    if problem is None:
        return 1
    programs, key_blocks, _ = problem
    splits = min(hardware.sm_count // programs, key_blocks, MAX_SPLITS)
    return splits if splits >= MIN_SPLITS else 1


def stream_k_rule(impl: Implementation, workload: Workload, hardware: Hardware,
                  sram_bytes: int, splits: int) -> str:
    """How the split count was chosen, in words (the tiling's splits_rule)."""
    problem = stream_k_problem(impl, workload, sram_bytes)
    assert problem is not None and hardware.sm_count is not None
    programs, key_blocks, _ = problem
    return (f"{impl.name} stream-K decode: min(⌊{hardware.sm_count} SMs / {programs} "
            f"programs⌋, {key_blocks} key blocks) = {splits}")
