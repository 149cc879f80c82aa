"""Eager PyTorch's backward at N_kv % 8 != 0: the points its rules were fitted on.

Measured on the H200 (tests/data/backward-h200-torch.json, backward-h200-fresh.json): the four
GEMMs of Alg. 3 are CUTLASS fallbacks and the softmax backward is PyTorch's kernel without
shared memory. The rules and their constants are estimates/eager_backward.py's (compare and
torch_bwd_fit.predict_time call them there; their names are importable from here too);
torch_bwd_fit.fit_unaligned fits the constants on UNALIGNED_FIT.
"""

from __future__ import annotations

from iosim.estimates.eager_backward import (
    ALIGNED_ELEMENTS,
    FALLBACK_GEMM_BYTES_PER_S,
    FALLBACK_GEMM_EFFICIENCY,
    FALLBACK_MODEL,
    SOFTMAX_UNALIGNED_EFFICIENCY,
    square_bytes,
    unaligned_class,
)

__all__ = ["ALIGNED_ELEMENTS", "FALLBACK_GEMM_BYTES_PER_S", "FALLBACK_GEMM_EFFICIENCY",
           "FALLBACK_MODEL", "SOFTMAX_UNALIGNED_EFFICIENCY", "UNALIGNED_FIT", "square_bytes",
           "unaligned_class"]

UNALIGNED_FIT = ("fp16/n12345/d64/b1h2kv2/full", "fp16/n2500/d64/b1h16kv16/full")
"""The fit points of the constants above: the only eager runs with N % 8 != 0 before the fresh
record, so neither is judged (their errors were seen while the cause was found). The fresh
record's N % 8 != 0 points judged the first rule; the streaming rule was chosen after seeing
them and awaits a fresh judgement."""
