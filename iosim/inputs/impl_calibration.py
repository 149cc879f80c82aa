"""`measured.impls` of a GPU YAML: each implementation's fitted figures on that GPU, read strictly.

An implementation is not a GPU: its traits live in configs/impls/NAME.yaml, what it reaches on a
given GPU (efficiencies, host time per call, its backward's schedule) in that GPU's YAML, keyed
by the implementation's name, where `iosim calibrate --impl` writes them.
"""

from __future__ import annotations

from typing import Any

from iosim.errors import ConfigError, IosimError
from iosim.inputs.excerpts import excerpt
from iosim.inputs.hardware import Hardware, ImplCalibration
from iosim.inputs.safe_yaml import refuse_unknown_keys
from iosim.record import replace

TIME_TERMS = {"solo_rate": (0.0, 1.0), "program_bandwidth": (0.0, 1e13),
              "host_floor_s": (0.0, 0.01), "decode_host_floor_s": (0.0, 0.01),
              "combine_latency_s": (0.0, 1e-3), "combine_program_bandwidth": (0.0, 1e13),
              "combine_memory": (0.0, 1.5), "lean_program_s_per_dim": (0.0, 1e-6),
              "lean_stream_d64": (0.0, 1e13), "lean_stream_d128": (0.0, 1e13),
              "lean_stream_d256": (0.0, 1e13), "chain_block_s": (0.0, 1e-3),
              "chain_program_bandwidth": (0.0, 1e13), "mask_ones_rate": (0.0, 1e13),
              "mask_tril_rate": (0.0, 1e13), "mask_bias_rate": (0.0, 1e13),
              "dense_block_s_d64": (0.0, 1e-3), "dense_block_s_d128": (0.0, 1e-3),
              "dense_block_s_d256": (0.0, 1e-3), "solo_rate_one": (0.0, 1.5),
              "lone_prologue_bandwidth": (0.0, 1e13)}
"""The forward's time terms an entry may carry (estimates/occupancy.py:lone_program_time,
analysis/impl_kernels.py:host_floor, estimates/combine.py): the rate of an SM holding one
program, the bytes/s one program streams alone, the host-bound floor of a call (prefill,
decode), FA2's split-KV combine kernel's latency, per-program rate and share of the
bandwidth, and cuDNN's lean decode kernel's cost per CTA per head-dim unit and streaming rate
per head-dim bucket (analysis/lean_time.py), a resident grid's wait per key block and
one program's rate over a block's K and V (analysis/program_chain.py), and a dense causal
mask's kernels' rates and cuDNN's seconds per 128 × 128 block reading it
(analysis/dense_mask.py), and a lone grid's rate where busy SMs hold one program too and its
programs' prologue bandwidth (estimates/lone_prologue.py); (low, high]."""
ENTRY_KEYS = {"efficiency", "call_overhead_s", "backward", "forward", "source", *TIME_TERMS}
KERNEL_MEMORY_KEYS = ("memory_gqa_expand", "memory_scale", "memory_mask_not",
                      "memory_mask_copy", "memory_mask", "memory_mask_contiguous",
                      "memory_softmax",
                      "memory_softmax_warp", "memory_softmax_reg", "memory_softmax_smem",
                      "memory_softmax_block", "memory_qk", "memory_pv", "memory_splitkv_attn")
"""An eager pipeline's kernels with their own fitted memory efficiency (`memory_<kernel>`):
repeat_interleave's gather, the scale pass, the causal mask's three (`~keep`, masked_fill's
clone, the fill: analysis/eager_mask.py; the fill's own when it runs one head at a time,
estimates/eager_mask_fill.py), torch's softmax, and its two matmuls
where they are memory-bound (a decode step: cuBLAS's GEMV-shaped nvjet kernels stream K and V
at 0.8 of the bandwidth, tests/data/h200-impl-validation3.json point 35, where the one memory
efficiency of the prefill-heavy fit, 0.31, predicted 597 µs for a 205 µs call). torch's softmax
has one per kernel it picks by row length (`memory_softmax_<kernel>`, estimates/eager_softmax.py;
`memory_softmax` is the one for a kernel the entry has no figure of). cuDNN's lean decode kernel
(analysis/stream_k.py) has its own too: it streams K and V at its own rate, not the prefill
kernel's (validation6 point 33: 402 MB in 109 µs, 3.7 TB/s)."""
EFFICIENCY_KINDS = ("fused", "matmul", "elementwise", "memory", "fused_d64", "fused_d128",
                    "fused_d256", "fused_split", *KERNEL_MEMORY_KEYS)
"""The kernel classes' efficiencies, the fused kernels' per head-dim bucket and split-KV pass
(analysis/impl_kernels.py:impl_roofs), and the eager kernels' own memory efficiencies."""
BACKWARD_BOUNDS = {"efficiency": (0.0, 1.5), "program_overhead_s": (0.0, 1e-3),
                   "call_overhead_s": (0.0, 0.01)}
"""(low, high) of each backward figure: efficiency in (0, 1.5], the seconds in [low, high)."""
MAX_CALL_OVERHEAD_S = 0.01
FORWARD_BOUNDS = {"efficiency_d64": (0.0, 1.5), "efficiency_d128": (0.0, 1.5),
                  "efficiency_d256": (0.0, 1.5), "unaligned_d64": (0.0, 3.0),
                  "unaligned_d128": (0.0, 3.0), "unaligned_d256": (0.0, 3.0),
                  "program_overhead_s": (0.0, 1e-3),
                  "causal_loops": (0, 4), "lone_share": (0.0, 1.0),
                  "decode_step_s": (0.0, 1e-4), "decode_program_bandwidth": (0.0, 1e13),
                  "decode_program_overhead_s": (0.0, 1e-3), "decode_shared": (0.0, 4.0),
                  "decode_combine_s": (0.0, 1e-3), "decode_combine_per_output_s": (0.0, 1e-6)}
"""(low, high] of each figure of `forward` (the fused forward kernel's list schedule,
analysis/impl_kernels.py:impl_forward_roofs): the efficiency per head-dim bucket (at least
one), the factor on a step's time where N or N_kv is not a multiple of 128 (`unaligned_dN`),
the seconds per software-pipelined loop of a program, the loops of a causal program (an
integer), and the share of its SM's rate a program alone on it reaches (`lone_share`,
optional: estimates/sm_sharing.py); the `decode_*` figures time FlexAttention's decoding
template (optional, all or none: analysis/impl_decoding.py)."""


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _mapping(path: str, key: str, raw: Any, allowed: set[str] | tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError(path, key, "expected a mapping")
    refuse_unknown_keys(path, key, raw, allowed)
    return raw


def _source(path: str, key: str, raw: dict[str, Any]) -> str:
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source", "missing; say what it was fitted on (command, "
                          "record, device)")
    return source.strip()


def load_impl_calibrations(path: str, raw: Any) -> dict[str, ImplCalibration]:
    """`measured.impls`: {NAME: {efficiency: {kind: e}, call_overhead_s, source, backward}}."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(path, "measured.impls", "expected a mapping implementation name -> "
                          "its fitted figures")
    out: dict[str, ImplCalibration] = {}
    for name, entry in raw.items():
        key = f"measured.impls.{name[:40] if isinstance(name, str) else excerpt(name, 40)}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(path, key, "an implementation's name must be text")
        m = _mapping(path, key, entry, ENTRY_KEYS)
        eff = _mapping(path, f"{key}.efficiency", m.get("efficiency"), EFFICIENCY_KINDS)
        if not eff:
            raise ConfigError(path, f"{key}.efficiency", "missing; give at least one of "
                              f"{', '.join(EFFICIENCY_KINDS)}")
        for kind, value in eff.items():
            if not _number(value) or not 0 < value <= 1.5:
                raise ConfigError(path, f"{key}.efficiency.{kind}",
                                  f"must be a number in (0, 1.5], got {excerpt(value)}")
        overhead = m.get("call_overhead_s")
        if overhead is not None and (not _number(overhead)
                                     or not 0 <= overhead < MAX_CALL_OVERHEAD_S):
            raise ConfigError(path, f"{key}.call_overhead_s",
                              f"must be seconds in [0, {MAX_CALL_OVERHEAD_S:g}), got "
                              f"{excerpt(overhead)}")
        backward, backward_source = _backward(path, f"{key}.backward", m.get("backward"))
        forward, forward_source = _forward(path, f"{key}.forward", m.get("forward"))
        terms = {}
        for term, (lo, hi) in TIME_TERMS.items():
            if term in m:
                value = m[term]
                if not _number(value) or not lo < value <= hi:
                    raise ConfigError(path, f"{key}.{term}",
                                      f"must be a number in ({lo:g}, {hi:g}], got {excerpt(value)}")
                terms[term] = float(value)
        out[name] = ImplCalibration({k: float(v) for k, v in eff.items()}, _source(path, key, m),
                                    None if overhead is None else float(overhead), backward,
                                    backward_source, terms, forward, forward_source)
    return out


def _forward(path: str, key: str, raw: Any) -> tuple[dict[str, float], str]:
    """`forward`: the fused forward kernel's list schedule (FORWARD_BOUNDS)."""
    if raw is None:
        return {}, ""
    m = _mapping(path, key, raw, {*FORWARD_BOUNDS, "source"})
    if not any(k.startswith("efficiency_d") for k in m):
        raise ConfigError(path, f"{key}.efficiency_d128", "missing; give the schedule's "
                          "efficiency of at least one head dim (efficiency_d64, _d128, _d256)")
    out = {}
    for name, (lo, hi) in FORWARD_BOUNDS.items():
        value: Any = m.get(name)
        if value is None and name != "program_overhead_s":
            continue
        whole = name == "causal_loops"
        if not _number(value) or (whole and value != int(value)) or not lo < value <= hi:
            what = "a whole number" if whole else "a number"
            raise ConfigError(path, f"{key}.{name}",
                              f"must be {what} in ({lo:g}, {hi:g}], got {excerpt(value)}")
        out[name] = float(value)
    decode = [n for n in FORWARD_BOUNDS if n.startswith("decode_")]
    given = [n for n in decode if n in out]
    if given and len(given) != len(decode):
        missing = next(n for n in decode if n not in out)
        raise ConfigError(path, f"{key}.{missing}", "missing; the decoding template's figures "
                          f"come together ({', '.join(decode)}) or not at all")
    return out, _source(path, key, m)


def _backward(path: str, key: str, raw: Any) -> tuple[dict[str, float], str]:
    """`backward`: the fused backward kernel's schedule (efficiency and overhead per program,
    estimates/schedule.py) and the host time of one backward call."""
    if raw is None:
        return {}, ""
    m = _mapping(path, key, raw, {*BACKWARD_BOUNDS, "memory", "source"})
    out = {}
    if "memory" in m:  # the memory efficiency the backward fit's other kernels ran at
        if not _number(m["memory"]) or not 0 < m["memory"] <= 1.5:
            raise ConfigError(path, f"{key}.memory",
                              f"must be a number in (0, 1.5], got {excerpt(m['memory'])}")
        out["memory"] = float(m["memory"])
    for name, (lo, hi) in BACKWARD_BOUNDS.items():
        value: Any = m.get(name)
        if not _number(value):
            raise ConfigError(path, f"{key}.{name}", f"missing or not a number (got "
                              f"{excerpt(value)})")
        inside = lo < value <= hi if name == "efficiency" else lo <= value < hi
        if not inside:
            low, high = ("(", "]") if name == "efficiency" else ("[", ")")
            raise ConfigError(path, f"{key}.{name}",
                              f"must be in {low}{lo:g}, {hi:g}{high}, got {excerpt(value)}")
        out[name] = float(value)
    return out, _source(path, key, m)


def with_impl_calibration(hardware: Hardware, name: str, fitted: ImplCalibration) -> Hardware:
    """`hardware` with `fitted` as implementation `name`'s entry of measured.impls (what a fit
    predicts with before anything is written)."""
    if hardware.measured is None:
        raise IosimError(f"{hardware.path} has no measured section; run `iosim calibrate --gpu "
                         f"{hardware.name}` first (an implementation's fit is relative to the "
                         f"GPU's measured ceilings)")
    impls = {**hardware.measured.impls, name: fitted}
    return replace(hardware, measured=replace(hardware.measured, impls=impls))
