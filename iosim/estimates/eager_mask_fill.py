"""Which of two rates eager PyTorch's causal fill (`masked_fill_` on the copy of S, analysis/
eager_mask.py) streams at: with the bool mask broadcast over batch and heads, or one (batch,
head) at a time.

The fill is one TensorIterator over S (b, h, N, N_kv) and the (N, N_kv) mask expanded to it
(stride 0 over b and h). A CUDA launch indexes with 32 bits, so torch splits an iterator whose
byte offsets pass INT32_MAX into pieces (aten/src/ATen/native/cuda/Loops.cuh gpu_kernel:
`if (!iter.can_use_32bit_indexing()) { for (auto& sub_iter : iter.with_32bit_indexing())
gpu_kernel(sub_iter, f); return; }`), halving it along its outer dimensions (the heads first)
until each fits. A piece of several heads is a two-dimensional iteration (the mask's head
stride 0); a piece of one head is contiguous in both operands, one dimension. Measured on the
H200, every causal torch-naive forward on record (tests/data/h200-impl-*.json, 110 shapes):
the 19 whose pieces are single heads (one head, or two heads' scores past INT32_MAX bytes)
stream the fill's bytes at 4.23-4.35 TB/s, the 91 others at 1.55-1.88 TB/s, nothing between.
Each class has its own fitted memory efficiency (`memory_mask_contiguous`, `memory_mask`).
"""

from __future__ import annotations

from iosim.estimates.roofline import Roofs
from iosim.inputs.workload import Workload
from iosim.record import replace

INT32_MAX = 2**31 - 1
"""The largest byte offset a 32-bit-indexed launch addresses (TensorIterator's
can_use_32bit_indexing)."""


def fill_is_contiguous(w: Workload) -> bool:
    """Whether torch runs the fill one (batch, head) at a time: a single one, or two heads' S
    past INT32_MAX bytes (the split then reaches single heads)."""
    return w.batch * w.heads == 1 or 2 * w.n * w.n_kv * w.element_bytes > INT32_MAX


def with_mask_fill(roofs: Roofs, w: Workload) -> Roofs:
    """The roofs with the fill's memory efficiency that of its class, where the implementation's
    fit has one for a contiguous fill (`mask_contiguous`)."""
    own = roofs.kernel_memory_efficiency.get("mask_contiguous")
    if own is None or not fill_is_contiguous(w):
        return roofs
    return replace(roofs, kernel_memory_efficiency={**roofs.kernel_memory_efficiency,
                                                    "mask": own})
