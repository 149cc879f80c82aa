"""Output: rich tables for people, JSON/CSV/Markdown for scripts and reports.

Human units (MB, µs, TFLOP/s) exist only here; the core hands over bytes, seconds and FLOPs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from iosim.algorithms.packing import packs_heads
from iosim.algorithms.traffic import CATEGORIES
from iosim.analysis.comparison import AlgorithmEstimate, Comparison
from iosim.estimates.training import Occupancy, compulsory_backward_bytes
from iosim.output import strict_json
from iosim.output.console import make_console as make_console  # re-exported for the commands
from iosim.output.numbers import SI_PREFIXES as SI_PREFIXES  # re-exported: render.fmt_* stay
from iosim.output.numbers import fmt_binary_bytes as fmt_binary_bytes
from iosim.output.numbers import fmt_bytes as fmt_bytes
from iosim.output.numbers import fmt_count as fmt_count
from iosim.output.numbers import fmt_flops as fmt_flops
from iosim.output.numbers import fmt_flops_fit as fmt_flops_fit
from iosim.output.numbers import fmt_intensity as fmt_intensity
from iosim.output.numbers import fmt_rate as fmt_rate
from iosim.output.numbers import fmt_si as fmt_si
from iosim.output.numbers import fmt_time as fmt_time
from iosim.output.tables import compact_table, rich_markdown, simple_table


def _tiling(a: AlgorithmEstimate) -> str:
    return "—" if a.tiling is None else f"{a.tiling.block_q}×{a.tiling.block_kv}"


# ---------------------------------------------------------------------------------------------
# compare: rich


def label_grid(rows: Sequence[tuple[str, str]]) -> Table:
    """'label     value' lines whose values wrap under themselves (not under the label) when
    the terminal is narrow: the header of compare and sweep."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, min_width=9)
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, value)
    return grid


def _header(c: Comparison) -> Table:
    hw, w, roofs = c.hardware, c.workload, c.roofs
    gpu = hw.display_name + (f" ({c.gpu_note})" if c.gpu_note else "")
    rows = [
        ("GPU", f"{gpu} · {roofs.profile} profile"),
        ("workload", w.describe() + (f" · unfused {', '.join(w.unfused)}" if w.unfused else "")),
        ("roofs", f"HBM {fmt_rate(roofs.hbm_bandwidth_bytes_per_s, 'B/s')} · {w.dtype} matmul "
                  f"{fmt_rate(roofs.matmul_flops_per_s, 'FLOP/s')} · "
                  f"{'fp32 vector' if roofs.profile == 'spec' else 'elementwise'} "
                  f"{fmt_rate(roofs.vector_flops_per_s, 'FLOP/s')} · ridge "
                  f"{roofs.ridge_point_flops_per_byte:.0f} FLOP/B"),
        ("SRAM", f"M = {c.sram_bytes // w.element_bytes:,} {w.dtype} elements ({c.sram_source})"),
    ]
    for a in c.algorithms:
        if a.tiling is None:
            continue
        rows.append(("blocks", f"{a.name}: B_r × B_c = {a.tiling.block_q} × {a.tiling.block_kv} "
                               f"({a.tiling.rule})"))
        if a.tiling.bwd_block_q is not None:
            rows.append(("", f"{a.name} backward: B_r × B_c = {a.tiling.bwd_block_q} × "
                             f"{a.tiling.bwd_block_kv} ({a.tiling.bwd_rule})"))
        if a.tiling.fits_note:
            rows.append(("", f"{a.name} {a.tiling.fits_note}"))
        if (a.algorithm or a.name) == "splitkv":
            rows.append(("splits", f"{a.name}: {_splits_text(c, a)}"))
    rows.extend(("occupancy", line) for line in occupancy_lines(c))
    if w.masked:
        from iosim.analysis.mask_summary import comparison_masks, mask_lines

        masks = comparison_masks(w, c.algorithms, c.hardware.sm_count)
        impl = next((a.impl for a in c.algorithms if a.impl is not None), None)
        rows.extend(("mask", line) for line in mask_lines(w, masks, impl))
    if w.sparsity != 1:
        num, den = w.sparsity_fraction
        rows.append(("sparsity", f"s = {num}/{den}: tiled kernels visit ⌈s·P⌉ of their P block "
                                 f"pairs (evenly spread, blockmask.py); standard attention stays "
                                 f"dense"))
    rows.extend(("note", n) for n in c.roofs.notes)
    return label_grid(rows)


def kernel_table(c: Comparison, *, wide: bool = False) -> Table:
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


def kernel_legend(c: Comparison) -> Text:
    """What the kernel table's columns count, and why FLOPs ÷ peak need not be the time."""
    roofs = c.roofs
    rule = ("max(DRAM ÷ bandwidth, matmul ÷ matmul peak + elementwise ÷ elementwise rate) ÷ "
            "efficiency" if roofs.additive_compute else
            "max(HBM ÷ bandwidth, matmul ÷ matmul peak, elementwise ÷ vector peak)")
    return Text(f"HBM: bytes read + written, every tile load charged to HBM (L2-oblivious). "
                f"FLOPs: executed matmul + elementwise (softmax) FLOPs. time = {rule}, so FLOPs "
                f"÷ the matmul peak is not the time: the elementwise FLOPs run on other units.")


def summary_table(c: Comparison, *, wide: bool = False) -> Table:
    """One row per algorithm; its FLOPs only with `wide` (they are the kernel table's sums)."""
    table = compact_table("Per algorithm", (
        ("algorithm", "left"), ("blocks", "right"), ("HBM", "right"), ("÷ std", "right"),
        *([("FLOPs", "right")] if wide else []), ("time", "right"), ("speed-up", "right"),
        ("bound", "left"), ("extra HBM", "right"), ("fits HBM", "left")))
    for a in c.algorithms:
        flops = [fmt_flops(a.flops)] if wide else []
        table.add_row(a.name, _tiling(a), fmt_bytes(a.hbm_bytes),
                      f"{a.traffic_ratio_vs_standard:.2f}×", *flops,
                      fmt_time(a.time_s), f"{a.speedup_vs_standard:.2f}×", a.bound,
                      fmt_bytes(a.footprint.extra_bytes), "yes" if a.footprint.fits else "NO")
    return table


LATER_CATEGORIES = ("Z", "P_drop", "O_partial", "dO", "dP", "dS", "dQ", "dQaccum", "dK", "dV",
                    "dK_expanded", "dV_expanded")
"""Column (or row) order of the tensors beyond the forward's CATEGORIES: the unfused dropout's,
split-KV's partial outputs, then the backward's."""


def _categories(c: Comparison) -> list[str]:
    present = {cat for a in c.algorithms for cat in a.traffic.by_category()}
    order = [*CATEGORIES, *LATER_CATEGORIES]
    return [cat for cat in order if cat in present] + sorted(present - set(order))


IO_TENSORS = ("Q", "K", "V", "O")
"""The inputs and output: their subtotal is what the papers (and the seed articles) count."""


def tensor_table(c: Comparison, *, wide: bool = False) -> Table:
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


def slower_lines(c: Comparison) -> list[str]:
    """One line per tiled algorithm slower than standard attention: what makes it so (blocks
    forced small by the SRAM at this head dim) and what a production kernel does instead."""
    w = c.workload
    m = c.sram_bytes // w.element_bytes
    lines = []
    for a in c.algorithms:
        if a.tiling is None or a.speedup_vs_standard >= 1:
            continue
        worst = min(a.underfilled, key=lambda o: o.fraction or 1.0, default=None)
        if (worst is not None and worst.fraction is not None
                and a.hbm_bytes <= a.baseline_hbm_bytes):  # the grid, not the traffic
            lines.append(
                f"Why {a.name} is slower here ({a.speedup_vs_standard:.2f}×): its "
                f"{worst.programs:,} program{' fills' if worst.programs == 1 else 's fill'} "
                f"{_share(worst.fraction)} of the GPU's "
                f"{worst.sm_count} SMs (occupancy above), while standard's library kernels fill "
                f"it; it moves {fmt_bytes(a.hbm_bytes)} against standard's "
                f"{fmt_bytes(a.baseline_hbm_bytes)}.")
            continue
        if a.name == "flash1":
            rereads = (f"Q and O are re-read in each of {-(-w.n_kv // a.tiling.block_kv)} "
                       f"K/V passes")
        else:
            rereads = f"K and V are re-read in each of {-(-w.n // a.tiling.block_q)} query passes"
        lines.append(
            f"Why {a.name} is slower here ({a.speedup_vs_standard:.2f}×): at d = {w.d}, "
            f"M = {m:,} elements leave blocks of only {a.tiling.block_q}×{a.tiling.block_kv} "
            f"(Alg. 1 line 1 keeps the Q, K, V, O tiles in SRAM), so {rereads} "
            f"({fmt_bytes(a.hbm_bytes)} vs standard's {fmt_bytes(a.baseline_hbm_bytes)}); real "
            f"kernels (FlashAttention-2/3, Composable Kernel) hold Q and O in registers with "
            f"64-128-row tiles and move close to the compulsory "
            f"{fmt_bytes(c.compulsory_hbm_bytes)}.")
    return lines


def rest_line(c: Comparison) -> str:
    """What 'the rest' of the tensor table is, per algorithm that has any."""
    parts = []
    for a in c.algorithms:
        by = a.traffic.by_category()
        moved = {cat: ops["read"] + ops["write"] for cat, ops in by.items()}
        rest = {cat: b for cat, b in moved.items() if cat not in IO_TENSORS and b}
        if rest:
            parts.append(f"{a.name} " + " + ".join(
                f"{_rest_name(cat)} {fmt_bytes(v)}" for cat, v in rest.items()))
    if not parts:
        return ""
    return ("The rest beyond Q, K, V, O: " + "; ".join(parts) + " (the papers' and the seed "
            "articles' figures count Q, K, V, O alone)")


def _rest_name(cat: str) -> str:
    return {"statistics": "fp32 statistics", "init": "initialisation",
            "S": "scores S", "P": "probabilities P"}.get(cat, cat)


def _splits_text(c: Comparison, a: AlgorithmEstimate) -> str:
    assert a.tiling is not None
    w = c.workload
    t_c = -(-w.n_kv // a.tiling.block_kv)
    per = -(-t_c // a.tiling.splits)
    packed = (f"; the {w.group_size} query heads of each KV head packed into one tile "
              f"(seqlenq_ngroups_swapped)" if packs_heads(w.n, w.heads, w.kv_heads) else "")
    return (f"{a.tiling.splits} KV splits of {per} key blocks ({a.tiling.splits_rule})"
            f"{packed}")


def _share(fraction: float) -> str:
    """A share of the GPU as a percentage, with a decimal below 1 % (never a bare 0%)."""
    return f"{fraction:.0%}" if fraction >= 0.01 else f"{fraction:.2%}"


def occupancy_lines(c: Comparison) -> list[str]:
    """One line per algorithm whose grids cannot fill the GPU (utilisation below 1/2)."""
    lines = []
    for a in c.algorithms:
        worst = min(a.underfilled, key=lambda o: o.fraction or 1.0, default=None)
        if worst is None or worst.fraction is None:
            continue
        programs = "1 program" if worst.programs == 1 else f"{worst.programs:,} programs"
        lines.append(f"{a.name} cannot fill the GPU: {programs} of "
                     f"{worst.label} on {worst.sm_count} SMs: {_share(worst.fraction)} of the GPU's "
                     f"rate; time = roofline time ÷ {worst.fraction:.3g}")
    return lines


def occupancy_table(c: Comparison) -> Table:
    """Each modelled launch grid against the GPU's SMs: programs per SM, waves, utilisation."""
    sms = c.hardware.sm_count
    table = simple_table(f"Parallelism (launch grid vs {sms if sms else 'unknown'} SMs; time = "
                         f"roofline time ÷ utilisation)", (
                             ("algorithm", "left"), ("kernel", "left"), ("grid", "left"),
                             ("per SM", "right"), ("utilisation", "right"), ("time", "right")))
    for a in c.algorithms:
        if not a.occupancy:
            table.add_row(a.name, "all", "library kernels: grid not modelled", "", "",
                          fmt_time(a.time_s), end_section=True)
            continue
        for i, o in enumerate(a.occupancy):
            k = next(k for k in a.kernels if k.name == o.kernel)
            table.add_row(a.name if i == 0 else "", o.label, grid_text(o), str(o.per_sm),
                          "?" if o.fraction is None else f"{o.fraction:.0%}", fmt_time(k.time_s),
                          end_section=i == len(a.occupancy) - 1)
    return table


def grid_text(o: Occupancy) -> str:
    """'32 CTAs: 0.15 waves' (the programs against what the GPU holds at once)."""
    head = f"{o.programs:,} CTAs"
    if o.waves is None:
        return head + " (SM count unknown)"
    return f"{head}: {o.waves:.2f} waves" if o.waves < 10 else f"{head}: {o.waves:,.0f} waves"


def _show_training(c: Comparison) -> bool:
    return c.workload.pass_ != "fwd"


def _show_parallelism(c: Comparison) -> bool:
    """Decoding steps, passes with a backward, and split-KV runs get the parallelism table (the
    default forward output stays as it was; JSON always has the grids)."""
    return (c.workload.n == 1 or c.workload.pass_ != "fwd"
            or any(a.name == "splitkv" for a in c.algorithms))


def _training_lines(c: Comparison) -> list[str]:
    lines = []
    for a in c.algorithms:
        kept = ", ".join(f"{t} {fmt_binary_bytes(b)}" for t, b in a.footprint.saved)
        lines.append(f"Kept from forward to backward by {a.name}: {kept or 'nothing'} "
                     f"(besides Q, K, V, O)")
    conv = ", ".join(f"{a.name} {fmt_flops_fit(a.convention_flops)}" for a in c.algorithms)
    lines.append(f"FLOPs by the FA2 §4.1 convention (fwd 4·N²·d per head, ÷2 causal; bwd ×2.5 "
                 f"flash, ×2 standard): {conv}; the tables count executed matmul + elementwise "
                 f"FLOPs of the visited tiles (causal diagonal tiles in full)")
    return lines


def _footer(c: Comparison) -> Text:
    t2, w = c.theorem2, c.workload
    lines = [
        f"Theorem 2 per head (elements, constants ignored): Θ(Nd + N²) = "
        f"{fmt_count(t2.standard_elements)} vs Θ(N²d²/M) = {fmt_count(t2.flash_elements)}, "
        f"ratio {t2.ratio:.1f}",
        f"One head's N×N score matrix: {fmt_bytes(c.score_matrix_bytes_per_head)} "
        f"({fmt_binary_bytes(c.score_matrix_bytes_per_head)}); compulsory traffic (read Q, K, V "
        f"and write O once): {fmt_bytes(c.compulsory_hbm_bytes)}",
    ]
    for a in c.algorithms:
        extra = ", ".join(f"{t} {fmt_binary_bytes(b)}" for t, b in a.footprint.extra)
        lines.append(f"HBM held by {a.name}: inputs+outputs {fmt_binary_bytes(a.footprint.io_bytes)}"
                     f" + {extra or 'nothing'} (HBM {fmt_bytes(a.footprint.capacity_bytes)})")
    if _show_training(c):
        lines.append(f"Compulsory backward traffic (read Q, K, V, O, dO and the logsumexp L once; "
                     f"write dQ, dK, dV once): {fmt_bytes(compulsory_backward_bytes(c.workload))}")
        lines.extend(_training_lines(c))
    lines.extend(slower_lines(c))
    rest = rest_line(c) if c.workload.pass_ == "fwd" else ""
    if rest:
        lines.append(rest)
    lines.append(dram_line(c))
    del w
    return Text("\n".join(lines))


def dram_line(c: Comparison) -> str:
    """The L2-aware DRAM estimate next to the L2-oblivious counts of the tables."""
    estimates = [(a.name, a.dram) for a in c.algorithms if a.dram is not None]
    if not estimates and c.workload.masked:
        return ("DRAM estimate: not modelled for a window or packed sequences yet; the HBM "
                "figures above are L2-oblivious (every tile load charged to HBM)")
    if not estimates:
        return (f"DRAM estimate: {c.hardware.name} has no l2_size or sm_count in its YAML; the "
                f"HBM figures above are L2-oblivious (every tile load charged to HBM)")
    tiled = {a.name for a in c.algorithms if a.tiling is not None}
    parts = " · ".join(
        f"{name} {fmt_bytes(e.bytes)}" + (f" ({e.concurrent_programs} programs at once)"
                                           if name in tiled else "")
        for name, e in estimates if e is not None)
    roof = ("the measured profile's memory roof uses it" if c.roofs.profile == "measured" else
            "the HBM figures above are L2-oblivious, every tile load charged to HBM")
    l2 = next(e.l2_bytes for _, e in estimates if e is not None)
    unmodelled = sorted({k for _, e in estimates if e is not None for k in e.unmodelled_kernels})
    scope = (f"; kernels {', '.join(unmodelled)} are not covered by the L2 model and count at their "
             f"L2-oblivious bytes" if unmodelled else "")
    return f"DRAM estimate (L2-aware, {fmt_binary_bytes(l2)} L2): {parts}; {roof}{scope}"


def dram_table(c: Comparison) -> Table:
    """Per kernel: the L2-oblivious count beside the L2-aware DRAM estimate, and which of the
    two the time used (issue 10: the backward's counts are where the two differ most)."""
    used = ("the time above used the DRAM estimate" if c.roofs.profile == "measured" else
            "the time above used the L2-oblivious count (--profile measured uses the estimate)")
    table = compact_table(f"DRAM per kernel: L2-oblivious vs L2-aware estimate; {used}", (
        ("algorithm", "left"), ("kernel", "left"), ("L2-oblivious", "right"),
        ("DRAM est.", "right"), ("est. ÷ obl.", "right"), ("note", "left")))
    for a in c.algorithms:
        if a.dram is None:
            continue
        for i, k in enumerate(a.kernels):
            est = a.dram.of_kernel(k.name)
            ratio = f"{est.bytes / k.hbm_bytes:.2f}" if k.hbm_bytes else "·"
            note = "not modelled" if k.name in a.dram.unmodelled_kernels else ""
            table.add_row(a.name if i == 0 else "", k.label, fmt_bytes(k.hbm_bytes),
                          fmt_bytes(est.bytes), ratio, note, end_section=i == len(a.kernels) - 1)
    return table


def comparison_renderable(c: Comparison, *, wide: bool = False) -> RenderableType:
    tables: list[RenderableType] = [kernel_table(c, wide=wide), kernel_legend(c), Text(""),
                                    summary_table(c, wide=wide), tensor_table(c, wide=wide)]
    if c.workload.pass_ != "fwd" and any(a.dram is not None for a in c.algorithms):
        tables.append(dram_table(c))
    if _show_parallelism(c):
        tables.append(occupancy_table(c))
    return Group(_header(c), Text(""), *tables, _footer(c))


def print_comparison(c: Comparison, console: Console, *, wide: bool = False) -> None:
    console.print(comparison_renderable(c, wide=wide))


# ---------------------------------------------------------------------------------------------
# compare: machine formats


def comparison_json(c: Comparison) -> str:
    return strict_json.dumps(c.to_dict(), indent=2, ensure_ascii=False)


def records_csv(records: Sequence[dict[str, Any]]) -> str:
    out = io.StringIO()
    if records:
        writer = csv.DictWriter(out, fieldnames=list(records[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
    return out.getvalue()


def comparison_csv(c: Comparison) -> str:
    """One row per (algorithm, kernel) plus a 'total' row per algorithm."""
    rows: list[dict[str, Any]] = []
    for a in c.algorithms:
        for record in c.to_records():
            if record["algorithm"] == a.name:
                rows.append(record)
        rows.append({
            "algorithm": a.name, "kernel": "total", "label": "total", "kind": "",
            "hbm_read_bytes": a.hbm_read_bytes, "hbm_write_bytes": a.hbm_write_bytes,
            "hbm_bytes": a.hbm_bytes, "flops": a.flops, "matmul_flops": a.matmul_flops,
            "elementwise_flops": a.elementwise_flops,
            "intensity_flops_per_byte": a.flops / a.hbm_bytes,
            "memory_time_s": float(a.totals.memory_time_s),
            "compute_time_s": float(a.totals.compute_time_s),
            "efficiency": "", "time_s": a.time_s, "bound": a.bound,
        })
    return records_csv(rows)


def comparison_markdown(c: Comparison) -> str:
    """The rich output's tables as GitHub Markdown (for reports and READMEs)."""
    parts = [f"**{c.hardware.display_name}** ({c.roofs.profile} profile) · {c.workload.describe()}"
             f" · M = {c.sram_bytes // c.workload.element_bytes:,} elements ({c.sram_source})", ""]
    tables = [kernel_table(c, wide=True), summary_table(c, wide=True), tensor_table(c, wide=True)]
    if _show_parallelism(c):
        tables.append(occupancy_table(c))
    for table in tables:
        parts += [f"*{table.title}*", "", rich_markdown(table), ""]
    parts.append(kernel_legend(c).plain + "  ")
    parts.append(_footer(c).plain.replace("\n", "  \n"))
    return "\n".join(parts) + "\n"
