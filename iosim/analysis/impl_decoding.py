"""FlexAttention's split-KV decoding template timed from what it runs (round 10), where its
calibration fits it (`measured.impls.flex.forward`'s `decode_*` figures): the queries torch
hands to the decoding template (impl_forward.py:runs_decoding_kernel) instead of the main one.

What the template runs (torch/_inductor/kernel/flex/flex_decoding.py and
templates/flex_decode.py.jinja, the torch the H200's records ran, 2.11; the same in 2.13):

- the grid is (ceil(n·G / BLOCK_M), batch · kv_heads, SPLIT_KV), G = heads // kv_heads the
  query heads packed into one program, BLOCK_M = max(next_power_of_2(n·G), 16), and
  SPLIT_KV = max(sm_count // (batch · kv_heads) · 2, 1) (`get_split_k`);
- on the H100/H200 the config is FlexDecodeConfig(BLOCK_N 64, 1 stage, 2 warps)
  (template_heuristics/triton.py get_flex_decode_configs: the sm_90 branch is overwritten by
  the `else` of the sm_110 test that follows it): one stage, so a program loads its K and V
  block, waits for them, computes, and only then loads the next: one dependent chain;
- a call without a block mask gets the empty mask (nn/attention/flex_attention.py
  _create_empty_block_mask: one sparse block of 2^30 keys, no full blocks), so each split's
  tile is cdiv(2^30, SPLIT_KV) keys: split 0 walks all of N_kv and the others none. This is
  why a decode step's kernel takes ~29-42 ns per key of N_kv whatever its split count
  (round 9's finding, tests/data/h200-impl-flexfresh9.json #5-#7): the walking programs are
  the first batch · kv_heads · m_blocks of the launch (split index slowest), each on its own
  SM while there are at most sm_count of them;
- after it, the combine: the splits' partial outputs rescaled by their row maxima and summed
  (flex_decoding.py's reduction lowered by Inductor: a small kernel for the maxima and one
  over the B·Hq·n·d_v outputs; with one split a pointwise rescale).

So the template's time is

    program = decode_program_overhead_s + ceil(N_kv / 64) · (decode_step_s
              + 64 · (d + d_v) · element_bytes / decode_program_bandwidth)
    kernel  = program · (1 + decode_shared · (k − 1)),  k = ceil(walkers / sm_count)
    combine = decode_combine_s (+ decode_combine_per_output_s · B·Hq·n·d_v where SPLIT_KV > 1)

`decode_step_s` is a key step's dependent latency (load, dot, softmax, dot), the bandwidth the
rate one 2-warp program streams its K and V at (a few 10 GB/s: one SM's program alone, as
tests/data/h200-sm-bandwidth.json measured 13-14 GB/s for a 4-warp reader), `decode_shared`
what a second walking program on the same SM costs the first. All fitted on seen records only
(benchmarks/flex10_fit.py). Where it does not apply (the roofline as before): a causal decode
step (its block mask has full blocks: TILE_KV = cdiv(N_kv, SPLIT_KV), real splits; no record
measured it) and a profile without the figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from iosim.estimates.roofline import KernelEstimate
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload
from iosim.record import replace

DECODE_BLOCK_N = 64
"""FlexDecodeConfig(64, 1, 2) on sm_90 (the module docstring)."""
MIN_BLOCK_M = 16
"""flex_decoding.py: BLOCK_M is at least 16 (a Triton dot's smallest M)."""
DECODE_TERMS = ("decode_step_s", "decode_program_bandwidth", "decode_program_overhead_s",
                "decode_shared", "decode_combine_s", "decode_combine_per_output_s")
"""The fitted figures (module docstring), all needed for the model to apply."""


def split_kv(workload: Workload, sm_count: int) -> int:
    """flex_decoding.py get_split_k: two splits per SM's share of the (batch, kv head) pairs."""
    return max(sm_count // max(workload.batch * workload.kv_heads, 1) * 2, 1)


def walking_programs(workload: Workload) -> int:
    """The programs that walk keys: split 0's, one per (query block, batch, kv head)."""
    group = workload.heads // workload.kv_heads
    rows = workload.n * group
    block_m = max(1 << max(rows - 1, 0).bit_length(), MIN_BLOCK_M)
    return math.ceil(rows / block_m) * workload.batch * workload.kv_heads


def decoding_applies(impl: Implementation, workload: Workload,
                     fitted: Mapping[str, float]) -> bool:
    """Whether this model times the workload (module docstring)."""
    from iosim.analysis.impl_forward import runs_decoding_kernel

    return (runs_decoding_kernel(impl, workload) and not workload.causal
            and all(k in fitted for k in DECODE_TERMS))


def decoding_template_s(workload: Workload, fitted: Mapping[str, float], sm_count: int) -> float:
    """The decoding template's kernel time (module docstring)."""
    step_bytes = DECODE_BLOCK_N * (workload.d + workload.d_v) * workload.element_bytes
    steps = math.ceil(workload.n_kv / DECODE_BLOCK_N)
    program = fitted["decode_program_overhead_s"] + steps * (
        fitted["decode_step_s"] + step_bytes / fitted["decode_program_bandwidth"])
    per_sm = math.ceil(walking_programs(workload) / sm_count)
    return program * (1 + fitted["decode_shared"] * (per_sm - 1))


def decoding_combine_s(workload: Workload, fitted: Mapping[str, float], sm_count: int) -> float:
    """The combine after the template (module docstring)."""
    if split_kv(workload, sm_count) == 1:
        return fitted["decode_combine_s"]
    outputs = workload.batch * workload.heads * workload.n * workload.d_v
    return fitted["decode_combine_s"] + fitted["decode_combine_per_output_s"] * outputs


def decoding_time_s(workload: Workload, fitted: Mapping[str, float], sm_count: int) -> float:
    """The template and its combine: what one decode step's kernels take."""
    return (decoding_template_s(workload, fitted, sm_count)
            + decoding_combine_s(workload, fitted, sm_count))


def decoding_note(fitted: Mapping[str, float]) -> str:
    """The line saying how a decode step on flex's decoding template is timed."""
    return (f"flex's decoding template is timed as one chain of {DECODE_BLOCK_N}-key steps per "
            f"program over all of N_kv ({fitted['decode_step_s'] * 1e9:.0f} ns + K, V at "
            f"{fitted['decode_program_bandwidth'] / 1e9:.1f} GB/s per step, "
            f"{fitted['decode_program_overhead_s'] * 1e6:.1f} µs per program, "
            f"×(1 + {fitted['decode_shared']:g}) per extra program on an SM) + its combine "
            f"({fitted['decode_combine_s'] * 1e6:.1f} µs + "
            f"{fitted['decode_combine_per_output_s'] * 1e9:.2f} ns per output element; "
            f"analysis/impl_decoding.py)")


def impl_decoding_estimates(estimates: tuple[KernelEstimate, ...], impl: Implementation,
                            hardware: Hardware, workload: Workload
                            ) -> tuple[KernelEstimate, ...]:
    """The kernels' estimates with the fused kernel timed by this model (template + combine,
    timed_by "flex-decoding") where it applies; unchanged elsewhere."""
    impls = hardware.measured.impls if hardware.measured is not None else {}
    fitted = impls.get(impl.name)
    if (fitted is None or hardware.sm_count is None
            or not decoding_applies(impl, workload, fitted.forward)):
        return estimates
    time_s = decoding_time_s(workload, fitted.forward, hardware.sm_count)
    # a chain of dependent steps, each waiting on its loads: latency-bound, not on a roof
    return tuple(replace(e, time_s=time_s, timed_by="flex-decoding", bound="latency")
                 if e.kind == "fused" else e for e in estimates)
