"""Eager PyTorch's causal mask in the forward, as it runs: three launches, not one pass over S.

torch-naive masks the scores with `s = s.masked_fill(~keep, float("-inf"))` (calibrate/measure.py
make_runner; configs/impls/torch-naive.yaml). That line runs, in order:

1. `~keep`: bitwise_not over the (N, N_kv) bool mask (aten's bitwise_not_kernel_cuda), one copy
   for the whole call: it reads `keep` and writes the inverted mask, one byte per score each,
   once, not per (batch, head) (Access.once);
2. masked_fill's copy: aten/src/ATen/native/TensorAdvancedIndexing.cpp `masked_fill(self, mask,
   source)` is `result = _self->clone(at::MemoryFormat::Contiguous); result.masked_fill_(mask,
   source);` — the clone reads S and writes a new N×N tensor (`S_masked`; the records' `Memcpy
   DtoD`);
3. `masked_fill_` on that copy (aten/src/ATen/native/cuda/IndexKernel.cu masked_fill_kernel,
   `gpu_kernel(iter, [value](scalar_t self, bool mask) { return mask ? value : self; })`): reads
   S_masked and the mask, broadcast over batch and heads (one copy, Access.broadcast), writes
   S_masked;

and the softmax then reads S_masked. Standard attention's unfused mask pass (standard.py) is one
read and one write of S: the copy's read and write of S and both mask passes are what this adds
to the L2-oblivious count. Every H200 record of a causal torch-naive forward launches exactly
these three kernels between the scale and the softmax (tests/data/h200-impl-*.json;
tests/test_eager_mask.py)."""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms.loopnest import Access, Kernel
from iosim.record import replace

MASK_KERNELS = ("mask_not", "mask_copy", "mask")
"""The model kernels of the forward's causal mask, in launch order."""
MASKED = "S_masked"
"""The new N×N tensor masked_fill's clone writes (and the fill overwrites in place)."""


def _whole(tensor: str, op: str, cite: str, **kw: object) -> Access:
    return Access(tensor, op, "prologue", "q", "kv", cite, **kw)  # type: ignore[arg-type]


def mask_kernels(mask: Kernel, cite: str) -> tuple[Kernel, ...]:
    """The three kernels that run in place of standard's unfused mask pass `mask` (read S,
    write S; its element type kept: O's dtype)."""
    read_s = next(a for a in mask.accesses if a.tensor == "S" and a.op == "read")
    element = read_s.element
    not_kernel = Kernel("mask_not", "mask = ~keep", "elementwise", (
        _whole("keep", "read", f"{cite}: ~keep reads the (N, N_kv) bool mask once",
               element="u8", once=True),
        _whole("mask", "write", f"{cite}: ~keep writes the inverted mask once", element="u8",
               once=True),
    ))
    copy = Kernel("mask_copy", f"{MASKED} = clone(S)", "elementwise", (
        _whole("S", "read", f"{cite}: masked_fill's clone() reads S", element=element),
        _whole(MASKED, "write", f"{cite}: masked_fill's clone() writes {MASKED}, a new tensor",
               element=element),
    ))
    fill = replace(mask, label=f"{MASKED} ← fill({MASKED}, mask)", accesses=(
        _whole(MASKED, "read", f"{cite}: masked_fill_ reads {MASKED}", element=element),
        _whole("mask", "read", f"{cite}: masked_fill_ reads the mask, broadcast over batch "
               "and heads", element="u8", broadcast=True),
        _whole(MASKED, "write", f"{cite}: masked_fill_ writes {MASKED}", element=element),
    ))
    return not_kernel, copy, fill


def out_of_place_mask(kernels: Sequence[Kernel], cite: str) -> list[Kernel]:
    """The forward's kernels with its unfused mask pass run as eager PyTorch runs it (the module
    docstring): the pass replaced by MASK_KERNELS and the softmax reading S_masked. Unchanged
    without a forward mask pass."""
    if not any(k.name == "mask" for k in kernels):
        return list(kernels)
    out: list[Kernel] = []
    for k in kernels:
        if k.name == "mask":
            out += mask_kernels(k, cite)
        elif k.name == "softmax":
            out.append(replace(k, label=k.label.replace("(S)", f"({MASKED})"), accesses=tuple(
                replace(a, tensor=MASKED, cite=f"{a.cite} ({MASKED}: {cite})")
                if a.tensor == "S" and a.op == "read" else a for a in k.accesses)))
        else:
            out.append(k)
    return out
