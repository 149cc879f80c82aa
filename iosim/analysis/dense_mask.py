"""SDPA's lower-right causal mask on a backend that cannot run it: a dense bias, built per call.

A causal chunked prefill (n ≠ n_kv: query i sees keys j ≤ i + n_kv − n) is given to torch SDPA
as `attn_mask=causal_lower_right(n, n_kv)` (calibrate/measure.py make_runner). torch's
CausalBias._dispatch (torch/nn/attention/bias.py) runs FlashAttention-2's and the efficient
kernel's own bottom-right causal; any other backend gets the mask materialised: a (n, n_kv)
bool `ones`, `.tril(diagonal=n_kv − n)`, then an additive mask in the input dtype (0 where kept,
−inf elsewhere), which the backend reads as a bias. The kernel then skips no block: a bias is
data, not structure. An implementation declares it with the extra kernel `dense_mask`, when
`chunked_causal` (configs/impls/sdpa-cudnn.yaml).

Every causal chunked-prefill cuDNN call on record (18 points of tests/data/h200-impl-{fit2,
validation, validation2..6}.json) launches, in order: FillFunctor<bool> (the ones), triu_tril_kernel
<bool> (the tril), two scalar FillFunctor<Half/BFloat16> fills, where_kernel_impl (the additive
mask), a Memset and cuDNN's fprop kernel; none of the 18 launches the kernel alone. The three
kernels that move the mask are counted here (each touches one (n, n_kv) copy once per call:
Access.once):

    mask_ones   write  n·n_kv bytes                       (bool)
    mask_tril   read   n·n_kv bytes, write n·n_kv bytes   (bool)
    mask_bias   read   n·n_kv bytes, write n·n_kv·e bytes (bool in, the input dtype out)

and the attention kernel, run as not causal, reads the bias once per (batch, head), broadcast
(Access.broadcast: one copy in HBM). The two scalar fills and the memset move nothing worth
counting (0.7-0.8 µs each, left to the call's overhead).

Time (timed_by "dense-mask", where the implementation's calibration has DENSE_MASK_TERMS): each
mask kernel its counted bytes at its own fitted rate (fill 2.3-3.0, tril 0.74-0.82, where
1.35-1.62 TB/s over the 18 seen calls: they are elementwise kernels far from the bandwidth, the
tril's one element per thread the slowest), and cuDNN's kernel by its blocks: its persistent
grid of one CTA per SM (sdpa-cudnn.yaml launch_order) takes 128-query-row tiles in rounds,

    rounds = ⌈batch · heads · ⌈n / 128⌉ / SMs⌉,   time = rounds · ⌈n_kv / 128⌉ · block_s(d)

with block_s(d) the fitted time of one 128 × 128 (query, key) block with the bias (384 threads:
one producer and two consumer warpgroups of 64 rows, the name's `64x128xD`). Over the 18 seen
calls block_s is 3.01-3.24 µs at d 128 (12 calls), 8.1-9.1 µs at d 256 (5), 2.17 µs at d 64 (one
call, the figure least supported); unmasked cuDNN calls on the same records run 1.5-2.1, 2.9-3.5
and 1.1-1.4 µs per block: the bias costs about as much again at d ≤ 128 and 2.7× at d 256.
Fitted by calibrate/dense_mask_fit.py; without the figures every kernel stays on its roofline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from iosim.algorithms.loopnest import Access, Kernel
from iosim.estimates.roofline import KernelEstimate
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload
from iosim.record import replace

DENSE_MASK = "dense_mask"
"""The extra kernel kind (configs/impls/*.yaml `extra_kernels`)."""
BIAS = "bias"
"""The additive (n, n_kv) mask in the input dtype that the attention kernel reads."""
MASK_KERNELS = ("mask_ones", "mask_tril", "mask_bias")
"""The kernels that build the bias, in launch order."""
TILE = 128
"""Query rows of one CTA tile and keys of one block of cuDNN's kernel with a bias (module
docstring: the seen per-block times fit 128 × 128 at every head dim)."""
DENSE_MASK_TERMS = ("mask_ones_rate", "mask_tril_rate", "mask_bias_rate", "dense_block_s_d64",
                    "dense_block_s_d128", "dense_block_s_d256")
"""The fitted figures, all needed for the model to apply: each mask kernel's rate (counted
bytes per second) and the attention kernel's seconds per block per head-dim bucket."""


def dense_mask_applies(impl: Implementation | None, workload: Workload) -> bool:
    """Whether the implementation runs this workload's causal mask as a dense bias: a causal
    forward with n ≠ n_kv on an implementation that declares `dense_mask`."""
    if impl is None or workload.pass_ != "fwd" or not workload.causal or workload.n == workload.n_kv:
        return False
    return any(k.kind == DENSE_MASK for k in impl.extra_kernels_for(
        gqa=workload.group_size > 1, causal=True, chunked=True))


def _once(tensor: str, op: str, cite: str, element: str) -> Access:
    return Access(tensor, op, "prologue", "q", "kv", cite, element=element,  # type: ignore[arg-type]
                  once=True)


def mask_kernels(cite: str) -> tuple[Kernel, ...]:
    """The three kernels that build the bias (module docstring), once per call."""
    return (
        Kernel("mask_ones", "keep = ones(n, n_kv)", "elementwise", (
            _once("keep", "write", f"{cite}: torch.ones((n, n_kv), dtype=bool)", "u8"),)),
        Kernel("mask_tril", "keep = tril(keep, n_kv − n)", "elementwise", (
            _once("keep", "read", f"{cite}: .tril(diagonal=n_kv − n) reads the ones", "u8"),
            _once("keep_tril", "write", f"{cite}: .tril writes the lower-right mask", "u8"))),
        Kernel("mask_bias", f"{BIAS} = where(keep, 0, −inf)", "elementwise", (
            _once("keep_tril", "read", f"{cite}: the bool mask made additive reads it", "u8"),
            _once(BIAS, "write", f"{cite}: writes the additive mask in the input dtype", "io"))),
    )


def with_dense_mask(kernels: Sequence[Kernel], cite: str) -> list[Kernel]:
    """The forward's kernels with the bias built before them and read by the fused attention
    kernel (every (batch, head) reads the whole broadcast copy once: each of its tiles reads the
    bias block of its (query, key) pair, and no pair is skipped)."""
    read = Access(BIAS, "read", "prologue", "q", "kv", f"{cite}: the kernel reads the bias, "
                  "broadcast over batch and heads", broadcast=True)
    out = list(mask_kernels(cite))
    for k in kernels:
        fused = k.loop == "q" and not k.split
        out.append(replace(k, accesses=(read, *k.accesses)) if fused else k)
    return out


def dense_block_rounds(workload: Workload, sm_count: int) -> int:
    """⌈batch · heads · ⌈n / 128⌉ / SMs⌉: the rounds of 128-row tiles the persistent grid runs."""
    return math.ceil(workload.batch * workload.heads * math.ceil(workload.n / TILE) / sm_count)


def dense_attention_s(workload: Workload, sm_count: int, terms: Mapping[str, float]) -> float:
    """rounds · ⌈n_kv / 128⌉ · block_s(d) (module docstring)."""
    from iosim.analysis.impl_kernels import head_dim_bucket  # it imports this module

    block_s = terms[f"dense_block_s_d{head_dim_bucket(workload.d)}"]
    return dense_block_rounds(workload, sm_count) * math.ceil(workload.n_kv / TILE) * block_s


def dense_mask_estimates(estimates: tuple[KernelEstimate, ...], impl: Implementation,
                         hardware: Hardware, workload: Workload) -> tuple[KernelEstimate, ...]:
    """The estimates with the mask kernels and the attention kernel timed by this model
    (timed_by "dense-mask") where the mask applies and the calibration has DENSE_MASK_TERMS;
    unchanged elsewhere. `workload` is the call's (causal, n ≠ n_kv)."""
    impls = hardware.measured.impls if hardware.measured is not None else {}
    fitted = impls.get(impl.name)
    if (fitted is None or hardware.sm_count is None or not dense_mask_applies(impl, workload)
            or not all(k in fitted.terms for k in DENSE_MASK_TERMS)):
        return estimates
    terms = fitted.terms
    out = []
    for e in estimates:
        if e.name in MASK_KERNELS:
            time_s = e.hbm_bytes / terms[f"{e.name}_rate"]
        elif any(t.tensor == BIAS and t.op == "read" for t in e.traffic.terms):
            time_s = dense_attention_s(workload, hardware.sm_count, terms)
        else:
            out.append(e)
            continue
        out.append(replace(e, time_s=time_s, timed_by="dense-mask"))
    return tuple(out)


def dense_mask_note(terms: Mapping[str, float]) -> str:
    """The line saying how a dense-mask call is timed (compare's notes)."""
    blocks = ", ".join(f"d {d} {terms[f'dense_block_s_d{d}'] * 1e6:.2f} µs" for d in (64, 128, 256))
    return (f"the lower-right causal mask built as a dense bias (ones, tril, where: "
            f"{terms['mask_ones_rate'] / 1e12:.2f}, {terms['mask_tril_rate'] / 1e12:.2f}, "
            f"{terms['mask_bias_rate'] / 1e12:.2f} TB/s) and read by every block of cuDNN's "
            f"kernel: ⌈tiles / SMs⌉ rounds × key blocks × {blocks} per 128 × 128 block "
            f"(analysis/dense_mask.py)")
