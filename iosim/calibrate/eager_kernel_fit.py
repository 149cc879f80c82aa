"""An eager pipeline's elementwise kernels fitted one by one on their own measured device times.

A call's time alone cannot tell the kernels of an eager forward apart: the scale and softmax
passes move the same bytes at every point (read S, write S), so a fit of the call's time trades
one's efficiency for the other's (the shipped fit had the scale kernel at 0.39 of the bandwidth
and the softmax at 1.05, where the records show 4.3 TB/s and 0.8-2.6 TB/s). Every measured point
lists its kernels with their device times (torch.profiler, impl_run.py), so each model kernel
is matched to the launches that run it and its memory efficiency is the median, over the
points, of its memory roof at full bandwidth over its measured time: no call-level trade-off.
calibrate/impl_fit.py then fits the call's other terms with these held.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median
from typing import Any

ELEMENTWISE = ("gqa_expand", "scale", "mask_not", "mask_copy", "mask", "softmax")
"""The model's eager forward kernels fitted here (analysis/impl_kernels.py, standard.py; the
causal mask's three, analysis/eager_mask.py)."""
MASK_ROLES = ("mask_not", "mask_copy", "mask")
"""The causal mask's launches after the scale, in order (`~keep`, masked_fill's clone, the fill:
analysis/eager_mask.py MASK_KERNELS); a model without the first two has them all in `mask`."""


def _launch_kind(name: str) -> str:
    """A measured launch's role from its kernel name: a cuBLAS GEMM (nvjet / cutlass / gemm and
    cuBLASLt's split-K reduction), torch's softmax, a memset (cuBLAS's workspace), or another
    elementwise launch."""
    lowered = name.lower()
    if "softmax" in lowered:
        return "softmax"
    if lowered.startswith("memset"):
        return "memset"
    if any(t in lowered for t in ("nvjet", "gemm", "cutlass", "splitkreduce")):
        return "gemm"
    return "elementwise"


def matched_times(model: Sequence[str], launches: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Each eager forward model kernel's measured device time, from the point's launches in
    order: those before the first GEMM are the GQA expansion (repeat_interleave of K, then V),
    the first elementwise launch after it the scale pass, the next three before the softmax
    the causal mask's (MASK_ROLES: `~keep`, masked_fill's copy of S, the fill; all three the
    one `mask` of a model that has one mask kernel), the softmax kernel the
    softmax; repeated launches of one elementwise kernel are one op (torch splits an op over
    more than 2^31 elements for 32-bit indexing). A model kernel with no launch gives no time,
    and a point whose launches the model has no kernel for gives none at all."""
    out: dict[str, float] = {}
    roles = MASK_ROLES if "mask_copy" in model else ("mask",) * len(MASK_ROLES)
    phase, previous, previous_role, masks = "before_qk", "", "", 0
    for launch in launches:
        name = str(launch["name"])
        kind, t = _launch_kind(name), float(launch["time_s"])
        if kind == "memset":
            continue
        if kind == "elementwise" and name == previous and previous_role:
            # one op over more than 2^31 elements: torch launches it in 32-bit-indexable pieces
            out[previous_role] += t
            continue
        previous, previous_role = name, ""
        if kind == "gemm":
            phase = "after_qk" if phase == "before_qk" else phase
            continue
        if kind == "softmax":
            out["softmax"] = out.get("softmax", 0.0) + t
            phase = "after_softmax"
            continue
        role = {"before_qk": "gqa_expand", "after_qk": "scale"}.get(phase)
        if phase == "after_scale" and masks < len(roles):
            role, masks = roles[masks], masks + 1
        if role is None:
            return {}  # an elementwise launch after the softmax: not the modelled pipeline
        out[role] = out.get(role, 0.0) + t
        previous_role = role
        if phase == "after_qk":
            phase = "after_scale"
    return {k: v for k, v in out.items() if k in model}


def kernel_efficiencies(rows: Sequence[tuple[str, float, float]]) -> dict[str, float]:
    """(memory efficiency key, memory roof time at full bandwidth, measured time) per matched
    kernel and point → each key's efficiency: the median of roof / measured."""
    by_key: dict[str, list[float]] = {}
    for key, roof_s, measured_s in rows:
        if roof_s > 0 and measured_s > 0:
            by_key.setdefault(key, []).append(roof_s / measured_s)
    return {k: round(median(v), 3) for k, v in by_key.items()}
