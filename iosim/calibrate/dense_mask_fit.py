"""The dense causal mask's figures (analysis/dense_mask.py), fitted on records' kernel lists.

Every seen causal chunked-prefill call of an implementation that declares `dense_mask` gives one
time per model kernel: the mask kernels by name (torch.profiler's device times), cuDNN's kernel
with the bias. Each mask kernel's rate is the median over calls of its counted bytes per second
(the model's own counts, compare's kernels); each head-dim bucket's block time the median of the
attention kernel's time ÷ (rounds × key blocks). Medians: one slow call (a cold first launch)
moves them least.

    python benchmarks/dense_mask_fit.py     # prints the figures and every call's error
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from iosim.analysis.compare import compare
from iosim.analysis.dense_mask import (
    MASK_KERNELS,
    TILE,
    dense_block_rounds,
    dense_mask_applies,
)
from iosim.analysis.impl_kernels import head_dim_bucket
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

KERNEL_NAMES = {"mask_ones": "FillFunctor<bool>", "mask_tril": "triu_tril_kernel<bool",
                "mask_bias": "where_kernel_impl", "attn": "_flash_fprop_"}
"""A substring of the recorded kernel name of each model kernel (torch.profiler's names)."""
SCALAR_FILLS = ("FillFunctor<c10::Half>", "FillFunctor<c10::BFloat16>", "Memset")
"""The launches that move nothing worth counting (two scalar fills, cuDNN's memset)."""


def recorded_kernel(name: str) -> str | None:
    """The model kernel a recorded kernel name is, None for a scalar fill or memset; an
    unknown name raises (the trait test then names it)."""
    for model, part in KERNEL_NAMES.items():
        if part in name:
            return model
    if any(part in name for part in SCALAR_FILLS):
        return None
    raise ValueError(f"a kernel the dense-mask model does not know: {name}")


def dense_points(points: Iterable[Mapping[str, Any]], impl: str = "sdpa-cudnn"
                 ) -> list[tuple[Workload, dict[str, float]]]:
    """(workload, {model kernel: seconds}) of every timed call of `impl` the mask applies to."""
    implementation = get_implementation(impl)
    out = []
    for p in points:
        if p.get("impl") != impl or "time_s" not in p:
            continue
        w = Workload(**p["workload"])
        if not dense_mask_applies(implementation, w):
            continue
        times: dict[str, float] = {}
        for k in p["kernels"]:
            model = recorded_kernel(k["name"])
            if model is not None:
                times[model] = times.get(model, 0.0) + float(k["time_s"])
        out.append((w, times))
    return out


def _counted_bytes(w: Workload, hardware: Hardware, impl: str) -> dict[str, int]:
    est = compare(w, hardware, impl=impl, profile="measured").algorithms[-1]
    return {k.name: k.hbm_bytes for k in est.kernels if k.name in MASK_KERNELS}


def fit_dense_mask(data: list[tuple[Workload, dict[str, float]]], hardware: Hardware,
                   impl: str = "sdpa-cudnn") -> dict[str, float]:
    """The DENSE_MASK_TERMS (module docstring); a head-dim bucket with no call is left out."""
    assert hardware.sm_count is not None
    rates: dict[str, list[float]] = {k: [] for k in MASK_KERNELS}
    blocks: dict[int, list[float]] = {}
    for w, times in data:
        counted = _counted_bytes(w, hardware, impl)
        for k in MASK_KERNELS:
            rates[k].append(counted[k] / times[k])
        per_block = times["attn"] / (dense_block_rounds(w, hardware.sm_count)
                                     * math.ceil(w.n_kv / TILE))
        blocks.setdefault(head_dim_bucket(w.d), []).append(per_block)
    out = {f"{k}_rate": statistics.median(v) for k, v in rates.items() if v}
    out |= {f"dense_block_s_d{d}": statistics.median(v) for d, v in sorted(blocks.items())}
    return out
