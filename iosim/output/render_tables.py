"""compare's three tables for people (per kernel, per algorithm, per tensor), and the label grid
that compare and sweep print above their tables.

Human units (MB, µs, TFLOP/s) exist only in output/; the core hands over bytes, seconds and FLOPs.
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms.traffic import CATEGORIES
from iosim.analysis.comparison import AlgorithmEstimate, Comparison
from iosim.output.numbers import (
    fmt_bytes,
    fmt_flops,
    fmt_flops_fit,
    fmt_intensity,
    fmt_ratio,
    fmt_time,
)
from iosim.output.plain import LabelGrid, TextTable
from iosim.output.tables import compact_table


def _tiling(a: AlgorithmEstimate) -> str:
    return "—" if a.tiling is None else f"{a.tiling.block_q}×{a.tiling.block_kv}"


def label_grid(rows: Sequence[tuple[str, str]]) -> LabelGrid:
    """'label     value' lines whose values wrap under themselves (not under the label) when
    the terminal is narrow: the header of compare and sweep (plain.LabelGrid)."""
    return LabelGrid(rows)


def kernel_table(c: Comparison, *, wide: bool = False) -> TextTable:
    """One row per kernel. HBM read and write columns only with `wide` (the total, FLOPs,
    bound and time fit 80 columns; the tensor table splits reads from writes anyway)."""
    columns = [("algorithm", "left"), ("kernel", "left"),
               *([("read", "right"), ("write", "right")] if wide else []),
               ("HBM", "right"), ("FLOPs", "right"), ("FLOP/B", "right"), ("bound", "left"),
               ("time", "right")]
    table = compact_table("Kernels (HBM bytes, executed FLOPs, roofline time)", columns)
    for a in c.algorithms:
        for i, k in enumerate(a.kernels):
            rw = [fmt_bytes(k.hbm_read_bytes), fmt_bytes(k.hbm_write_bytes)] if wide else []
            table.add_row(a.name if i == 0 else "", k.label, *rw, fmt_bytes(k.hbm_bytes),
                          fmt_flops_fit(k.flops), fmt_intensity(k.intensity_flops_per_byte),
                          k.bound, fmt_time(k.time_s), end_section=i == len(a.kernels) - 1)
    return table


def kernel_legend(c: Comparison) -> str:
    """What the kernel table's columns count, and why FLOPs ÷ peak need not be the time (one
    paragraph, printed as rich prints a Text: no markup)."""
    roofs = c.roofs
    rule = ("max(DRAM ÷ bandwidth, matmul ÷ matmul peak + elementwise ÷ elementwise rate) ÷ "
            "efficiency" if roofs.additive_compute else
            "max(HBM ÷ bandwidth, matmul ÷ matmul peak, elementwise ÷ vector peak)")
    return (f"HBM: bytes read + written, every tile load charged to HBM (L2-oblivious). "
            f"FLOPs: executed matmul + elementwise (softmax) FLOPs. time = {rule}, so FLOPs "
            f"÷ the matmul peak is not the time: the elementwise FLOPs run on other units."
            + timed_by_legend(c))


_TIMED_BY_LEGENDS = (
    # (Kernel.timed_by, the kernel legend's sentence for a kernel timed so), in legend order
    ("combine", " latency: too small a kernel to reach either roof; FA2's split-KV combine is "
                "timed by its fitted latency and per-program rate (estimates/combine.py)."),
    ("eager-bwd", " An eager backward's kernel: max(DRAM ÷ bandwidth ÷ its memory efficiency, "
                  "its matmul or elementwise time) + a fixed time per kernel, eager's backward "
                  "model (estimates/eager_backward.py, the note above)."),
    ("fallback-gemm", " An eager GEMM at N_kv % 8 ≠ 0: cuBLAS's CUTLASS fallback, timed as its "
                      "N×N_kv operand's bytes ÷ its stream rate + its FLOPs ÷ its compute rate "
                      "where that is longer (estimates/eager_fallback.py)."),
    ("dense-mask", " mask_*: torch builds the lower-right causal mask as a dense bias (ones, "
                   "tril, where), each kernel its bytes at its fitted rate; the attention kernel "
                   "reads it and skips no block: ⌈tiles / SMs⌉ rounds × key blocks × its fitted "
                   "time per 128 × 128 block (analysis/dense_mask.py)."),
)


def timed_by_legend(c: Comparison) -> str:
    """The kernel legend's sentences for kernels timed by a rule of their own (a combine's
    latency, eager's backward, a CUTLASS fallback GEMM): one per rule a kernel of `c` follows,
    empty when none does."""
    rules = {k.timed_by for a in c.algorithms for k in a.kernels}
    return "".join(sentence for rule, sentence in _TIMED_BY_LEGENDS if rule in rules)


def summary_table(c: Comparison, *, wide: bool = False) -> TextTable:
    """One row per algorithm; its FLOPs only with `wide` (they are the kernel table's sums)."""
    table = compact_table("Per algorithm", (
        ("algorithm", "left"), ("blocks", "right"), ("HBM", "right"), ("÷ std", "right"),
        *([("FLOPs", "right")] if wide else []), ("time", "right"), ("speed-up", "right"),
        ("bound", "left"), ("extra HBM", "right"), ("fits HBM", "left")))
    for a in c.algorithms:
        flops = [fmt_flops(a.flops)] if wide else []
        table.add_row(a.name, _tiling(a), fmt_bytes(a.hbm_bytes),
                      fmt_ratio(a.traffic_ratio_vs_standard), *flops,
                      fmt_time(a.time_s), fmt_ratio(a.speedup_vs_standard), a.bound,
                      fmt_bytes(a.footprint.extra_bytes), "yes" if a.footprint.fits else "NO")
    return table


LATER_CATEGORIES = ("Z", "P_drop", "O_partial", "dO", "dP", "dS", "dS_masked", "dS_scaled", "dQ",
                    "dQaccum", "dK", "dV", "dK_expanded", "dV_expanded")
"""Column (or row) order of the tensors beyond the forward's CATEGORIES: the unfused dropout's,
split-KV's partial outputs, then the backward's."""


def _categories(c: Comparison) -> list[str]:
    present = {cat for a in c.algorithms for cat in a.traffic.by_category()}
    order = [*CATEGORIES, *LATER_CATEGORIES]
    return [cat for cat in order if cat in present] + sorted(present - set(order))


IO_TENSORS = ("Q", "K", "V", "O")
"""The inputs and output: their subtotal is what the papers (and the seed articles) count."""


def tensor_table(c: Comparison, *, wide: bool = False) -> TextTable:
    """HBM bytes by tensor: one row per (tensor, read or write), one column per algorithm, then
    the Q/K/V/O subtotal, the rest (fp32 statistics, initialisation, ...) and the total. This
    shape fits 80 columns whatever the pass moves (a backward has a dozen tensors)."""
    del wide
    cats = _categories(c)
    stats = sorted({t.tensor for a in c.algorithms for t in a.traffic
                    if t.category == "statistics"})
    table = compact_table("HBM bytes by tensor", [("tensor", "left"), ("op", "left"),
                                           *((a.name, "right") for a in c.algorithms)])
    by = [a.traffic.by_category() for a in c.algorithms]
    for cat in cats:
        name = f"stats ({', '.join(stats)})" if cat == "statistics" else cat
        for op in ("read", "write"):
            values = [entry.get(cat, {}).get(op, 0) for entry in by]
            if any(values):
                table.add_row(name if op == "read" or not any(
                    e.get(cat, {}).get("read", 0) for e in by) else "", op,
                    *(fmt_bytes(v) if v else "·" for v in values))
    io = [sum(sum(entry.get(t, {}).values()) for t in IO_TENSORS) for entry in by]
    totals = [a.hbm_bytes for a in c.algorithms]
    table.add_section()
    table.add_row("Q, K, V, O", "both", *(fmt_bytes(v) for v in io))
    table.add_row("the rest", "both", *(fmt_bytes(t - v) if t - v else "·"
                                        for t, v in zip(totals, io, strict=True)))
    table.add_row("total", "both", *(fmt_bytes(t) for t in totals))
    return table


