"""Eager PyTorch's forward GEMMs at N_kv % 8 != 0: cuBLAS's CUTLASS fallbacks, timed per GEMM.

With fp16/bf16 rows of S and P (leading dimension N_kv) not 16-byte aligned, cuBLAS cannot run
its TMA kernels (nvjet) and falls back to CUTLASS ones that move 2 bytes (odd N_kv: the
`cutlass_75_*_align1` kernels) or 4 bytes (even: `cutlass_80_*_align2`) per access
(estimates/eager_backward.py ALIGNED_ELEMENTS). Every operand goes through those narrow
accesses, and each output tile's work grows with d (qk: d-long Q and K rows per S tile; pv: the
d-wide V tile and O), so each GEMM takes

    S bytes ÷ its stream rate + its FLOPs ÷ its compute rate        (FLOPs = 2 × S elements × d, or d_v)

by GEMM (S = QKᵀ writes the N×N_kv matrix, O = PV reads it: different kernels, different
rates) and by N_kv's parity (align1 or align2). The eight rates (FORWARD_FALLBACK) are
calibrate/eager_fallback_fit.py's on the seen records: each (GEMM, parity) has one median
seconds-per-byte at d 64 and one at d 128, and the two head dims give the stream rate and the
compute rate. One rate for both GEMMs (the backward's 941 / 1,432 GB/s, eager8's forward rule)
was 43 % short at d 128 on tests/data/h200-impl-eagerfresh8.json: the fallback's time grows
with d in the forward (reports/impl-validation/eager8.md)."""

from __future__ import annotations

from collections.abc import Mapping

from iosim.inputs.workload import Workload

FALLBACK_GEMMS = ("qk", "pv")
"""The forward's two GEMMs (standard.py: S = QKᵀ, O = PV)."""
FORWARD_FALLBACK: Mapping[tuple[str, str], tuple[float, float]] = {
    ("qk", "odd"): (2.46e12, 87.3e12),
    ("qk", "even"): (2.09e12, 205e12),
    ("pv", "odd"): (1.11e12, 439e12),
    ("pv", "even"): (2.88e12, 413e12),
}
"""(stream rate in bytes/s of S, compute rate in FLOP/s) of each fallback GEMM by N_kv's
parity: calibrate/eager_fallback_fit.py `fit` on SEEN there (a test holds these equal to it)."""


def fallback_gemm_s(gemm: str, parity: str, w: Workload,
                    rates: Mapping[tuple[str, str], tuple[float, float]] = FORWARD_FALLBACK
                    ) -> float:
    """Seconds of one forward fallback GEMM (`gemm` qk or pv; `parity` odd or even, as
    eager_backward.unaligned_class) over every (batch, head): the module's rule."""
    stream, compute = rates[(gemm, parity)]
    elements = w.batch * w.heads * w.n * w.n_kv
    depth = w.d if gemm == "qk" else w.d_v  # S = QKᵀ sums over d, O = PV makes d_v columns
    return elements * w.element_bytes / stream + 2 * elements * depth / compute
