"""Output: rich tables for people, JSON/CSV/Markdown for scripts and reports.

Human units (MB, µs, TFLOP/s) exist only here; the core hands over bytes, seconds and FLOPs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from iosim.algorithms.packing import packs_heads
from iosim.algorithms.traffic import CATEGORIES
from iosim.analysis.comparison import AlgorithmEstimate, Comparison
from iosim.estimates.training import Occupancy, compulsory_backward_bytes
from iosim.inputs.hardware import Figure, Hardware
from iosim.output import strict_json
from iosim.output.tables import rich_markdown

# ---------------------------------------------------------------------------------------------
# numbers for people


def fmt_bytes(n: float) -> str:
    """Decimal (SI) bytes: 136314880 -> '136.3 MB' (the seed articles' unit)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_binary_bytes(n: float) -> str:
    """Binary bytes: 134217728 -> '128 MiB'."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.1f} {unit}"
    return f"{seconds / 1e-9:.0f} ns"


def fmt_flops(n: float) -> str:
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} FLOP"


def fmt_flops_fit(n: float, width: int = 10) -> str:
    """fmt_flops, cut to three significant digits when longer than `width` ('834 GFLOP')."""
    text = fmt_flops(n)
    if len(text) <= width:
        return text
    value, unit = text.split(" ")
    return f"{float(value):.3g} {unit}"


def fmt_rate(value: float, unit: str) -> str:
    """4.8e12, 'B/s' -> '4.80 TB/s'; 3.12e14, 'FLOP/s' -> '312 TFLOP/s'."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def fmt_count(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


def _tiling(a: AlgorithmEstimate) -> str:
    return "—" if a.tiling is None else f"{a.tiling.block_q}×{a.tiling.block_kv}"


# ---------------------------------------------------------------------------------------------
# compare: rich


def _header(c: Comparison) -> Text:
    hw, w, roofs = c.hardware, c.workload, c.roofs
    gpu = hw.display_name + (f" ({c.gpu_note})" if c.gpu_note else "")
    lines = [
        f"GPU       {gpu} · {roofs.profile} profile",
        f"workload  {w.describe()}"
        + (f" · unfused {', '.join(w.unfused)}" if w.unfused else ""),
        f"roofs     HBM {fmt_rate(roofs.hbm_bandwidth_bytes_per_s, 'B/s')} · {w.dtype} matmul "
        f"{fmt_rate(roofs.matmul_flops_per_s, 'FLOP/s')} · "
        f"{'fp32 vector' if roofs.profile == 'spec' else 'elementwise'} "
        f"{fmt_rate(roofs.vector_flops_per_s, 'FLOP/s')} · ridge "
        f"{roofs.ridge_point_flops_per_byte:.0f} FLOP/B",
        f"SRAM      M = {c.sram_bytes // w.element_bytes:,} {w.dtype} elements "
        f"({c.sram_source})",
    ]
    tiled = [a for a in c.algorithms if a.tiling is not None]
    for a in tiled:
        assert a.tiling is not None
        lines.append(f"blocks    {a.name}: B_r × B_c = {a.tiling.block_q} × {a.tiling.block_kv} "
                     f"({a.tiling.rule})")
        if a.tiling.bwd_block_q is not None:
            lines.append(f"          {a.name} backward: B_r × B_c = {a.tiling.bwd_block_q} × "
                         f"{a.tiling.bwd_block_kv} ({a.tiling.bwd_rule})")
        if a.name == "splitkv":
            lines.append(f"splits    {a.name}: {_splits_text(c, a)}")
    if w.sparsity != 1:
        num, den = w.sparsity_fraction
        lines.append(f"sparsity  s = {num}/{den}: tiled kernels visit ⌈s·P⌉ of their P block pairs "
                     f"(evenly spread, blockmask.py); standard attention stays dense")
    lines.extend(f"note      {n}" for n in c.roofs.notes)
    return Text("\n".join(lines))


def kernel_table(c: Comparison) -> Table:
    table = Table(title="Kernels (HBM traffic, FLOPs and roofline time)", box=box.SIMPLE_HEAD,
                  title_justify="left", pad_edge=False, collapse_padding=True)
    for name, justify in (("algorithm", "left"), ("kernel", "left"), ("read", "right"),
                          ("write", "right"), ("total", "right"), ("FLOPs", "right"),
                          ("FLOP/B", "right"), ("bound", "left"), ("time", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for a in c.algorithms:
        for i, k in enumerate(a.kernels):
            table.add_row(a.name if i == 0 else "", k.label, fmt_bytes(k.hbm_read_bytes),
                          fmt_bytes(k.hbm_write_bytes), fmt_bytes(k.hbm_bytes), fmt_flops(k.flops),
                          f"{k.intensity_flops_per_byte:.1f}", k.bound, fmt_time(k.time_s),
                          end_section=i == len(a.kernels) - 1)
    return table


def summary_table(c: Comparison) -> Table:
    table = Table(title="Per algorithm", box=box.SIMPLE_HEAD, title_justify="left",
                  pad_edge=False, collapse_padding=True)
    for name, justify in (("algorithm", "left"), ("blocks", "right"), ("HBM", "right"),
                          ("÷ std", "right"), ("FLOPs", "right"), ("time", "right"),
                          ("speed-up", "right"), ("bound", "left"), ("extra HBM", "right"),
                          ("fits", "left")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for a in c.algorithms:
        table.add_row(a.name, _tiling(a), fmt_bytes(a.hbm_bytes),
                      f"{a.traffic_ratio_vs_standard:.2f}×", fmt_flops_fit(a.flops),
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


def tensor_table(c: Comparison) -> Table:
    if c.workload.pass_ != "fwd":
        return tensor_rows_table(c)
    cats = _categories(c)
    table = Table(title="HBM bytes by tensor", box=box.SIMPLE_HEAD, title_justify="left",
                  pad_edge=False, collapse_padding=True)
    table.add_column("algorithm", no_wrap=True)
    table.add_column("op", no_wrap=True)
    for cat in cats:
        table.add_column("stats" if cat == "statistics" else cat, justify="right", no_wrap=True)
    for a in c.algorithms:
        by = a.traffic.by_category()
        for op in ("read", "write"):
            table.add_row(a.name if op == "read" else "", op,
                          *(fmt_bytes(by[cat][op]) if cat in by and by[cat][op] else "·"
                            for cat in cats),
                          end_section=op == "write")
    return table


def tensor_rows_table(c: Comparison) -> Table:
    """HBM bytes by tensor, one row per tensor and a read/write column pair per algorithm: a
    backward pass moves too many tensors (dO, dP, dS, dQ, dQaccum, dK, dV, ...) for columns."""
    cats = _categories(c)
    stats = sorted({t.tensor for a in c.algorithms for t in a.traffic
                    if t.category == "statistics"})
    table = Table(title="HBM bytes by tensor", box=box.SIMPLE_HEAD, title_justify="left",
                  pad_edge=False)
    table.add_column("tensor", no_wrap=True)
    for a in c.algorithms:
        table.add_column(f"{a.name}\nread", justify="right")
        table.add_column(f"{a.name}\nwrite", justify="right")
    by = [a.traffic.by_category() for a in c.algorithms]
    for cat in cats:
        name = f"stats ({', '.join(stats)})" if cat == "statistics" else cat
        cells = []
        for entry in by:
            for op in ("read", "write"):
                value = entry.get(cat, {}).get(op, 0)
                cells.append(fmt_bytes(value) if value else "·")
        table.add_row(name, *cells)
    return table


def _splits_text(c: Comparison, a: AlgorithmEstimate) -> str:
    assert a.tiling is not None
    w = c.workload
    t_c = -(-w.n_kv // a.tiling.block_kv)
    per = -(-t_c // a.tiling.splits)
    packed = (f"; the {w.group_size} query heads of each KV head packed into one tile "
              f"(seqlenq_ngroups_swapped)" if packs_heads(w.n, w.heads, w.kv_heads) else "")
    return (f"{a.tiling.splits} KV splits of {per} key blocks ({a.tiling.splits_rule})"
            f"{packed}")


def occupancy_table(c: Comparison) -> Table:
    """Each modelled launch grid against the GPU's SMs, and the time if only those SMs work."""
    sms = c.hardware.sm_count
    table = Table(title=f"Parallelism (launch grid vs {sms if sms else 'unknown'} SMs; one "
                        f"program per SM at a time)", box=box.SIMPLE_HEAD, title_justify="left",
                  pad_edge=False)
    for name, justify in (("algorithm", "left"), ("kernel", "left"), ("grid", "left"),
                          ("time", "right"), ("time ÷ occupancy", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for a in c.algorithms:
        if not a.occupancy:
            table.add_row(a.name, "all", "library kernels: grid not modelled", fmt_time(a.time_s),
                          fmt_time(a.occupancy_time_s), end_section=True)
            continue
        for i, o in enumerate(a.occupancy):
            k = next(k for k in a.kernels if k.name == o.kernel)
            table.add_row(a.name if i == 0 else "", o.label, grid_text(o), fmt_time(k.time_s),
                          fmt_time(k.time_s / (o.fraction or 1.0)),
                          end_section=i == len(a.occupancy) - 1)
    return table


def grid_text(o: Occupancy) -> str:
    """'grid 32 CTAs on 132 SMs: 24%' (or the number of waves once the grid covers the GPU)."""
    head = f"grid {o.programs:,} CTAs"
    if o.sm_count is None or o.fraction is None or o.waves is None:
        return head + " (SM count unknown)"
    if o.fraction < 1:
        return f"{head} on {o.sm_count} SMs: {o.fraction:.0%}"
    return f"{head} on {o.sm_count} SMs: 100% ({o.waves:.1f} waves)"


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
    lines.append(dram_line(c))
    del w
    return Text("\n".join(lines))


def dram_line(c: Comparison) -> str:
    """The L2-aware DRAM estimate next to the L2-oblivious counts of the tables."""
    estimates = [(a.name, a.dram) for a in c.algorithms if a.dram is not None]
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
    table = Table(title=f"DRAM per kernel: L2-oblivious vs L2-aware estimate; {used}",
                  box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
                  collapse_padding=True)
    for name, justify in (("algorithm", "left"), ("kernel", "left"), ("L2-oblivious", "right"),
                          ("DRAM est.", "right"), ("est. ÷ obl.", "right"), ("note", "left")):
        table.add_column(name, justify=justify, no_wrap=name != "note")  # type: ignore[arg-type]
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


def comparison_renderable(c: Comparison) -> RenderableType:
    tables: list[RenderableType] = [kernel_table(c), summary_table(c), tensor_table(c)]
    if c.workload.pass_ != "fwd" and any(a.dram is not None for a in c.algorithms):
        tables.append(dram_table(c))
    if _show_parallelism(c):
        tables.append(occupancy_table(c))
    return Group(_header(c), Text(""), *tables, _footer(c))


def print_comparison(c: Comparison, console: Console) -> None:
    console.print(comparison_renderable(c))


def make_console() -> Console:
    """A terminal keeps its own width; a pipe or file gets 110 columns so tables never wrap."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=110)


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
    tables = [kernel_table(c), summary_table(c), tensor_table(c)]
    if _show_parallelism(c):
        tables.append(occupancy_table(c))
    for table in tables:
        parts += [f"*{table.title}*", "", rich_markdown(table), ""]
    parts.append(_footer(c).plain.replace("\n", "  \n"))
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# gpus


def _figure_value(fig: Figure | None, unit: str, *, binary: bool = False) -> str:
    if fig is None:
        return "—"
    text = fmt_binary_bytes(fig.value) if binary else fmt_rate(fig.value, unit)
    return text + (" (est.)" if fig.estimate else "")


def gpus_table(hardware: Sequence[Hardware]) -> Table:
    table = Table(title="GPU models (configs/gpus; `iosim gpus show NAME` for sources)",
                  box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    for name, justify in (("name", "left"), ("aliases", "left"), ("HBM BW", "right"),
                          ("HBM", "right"), ("SRAM/block", "right"), ("SMs", "right"),
                          ("peak fp16", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for hw in hardware:
        f = hw.figures
        sms = f.get("sm_count")
        table.add_row(hw.name, ", ".join(hw.aliases),
                      _figure_value(f["hbm_bandwidth"], "B/s"),
                      _figure_value(f["hbm_capacity"], "B"),
                      _figure_value(f["sram_per_block"], "B", binary=True),
                      "—" if sms is None else f"{sms.value:.0f}" + (" (est.)" if sms.estimate else ""),
                      _figure_value(f.get("peak_flops.fp16"), "FLOP/s"))
    return table


_FIGURE_UNITS = {"hbm_capacity": ("B", False), "hbm_bandwidth": ("B/s", False),
                 "l2_size": ("B", True), "l2_bandwidth": ("B/s", False),
                 "sram_per_sm": ("B", True), "sram_per_block": ("B", True),
                 "sram_bandwidth": ("B/s", False)}


def figure_text(key: str, fig: Figure) -> str:
    if key == "sm_count":
        return f"{fig.value:.0f}"
    if key.startswith("peak_flops") or key == "vector_flops":
        return fmt_rate(fig.value, "FLOP/s")
    unit, binary = _FIGURE_UNITS[key]
    return fmt_binary_bytes(fig.value) if binary else fmt_rate(fig.value, unit)


def gpu_detail(hw: Hardware) -> RenderableType:
    head = Text("\n".join(line for line in (
        f"{hw.display_name}  ({hw.name})",
        f"aliases: {', '.join(hw.aliases) or '—'}",
        f"vendor: {hw.vendor}" + (f" · {hw.architecture}" if hw.architecture else "")
        if hw.vendor else "",
        f"file: {hw.path}",
        f"notes: {hw.notes}" if hw.notes else "",
    ) if line))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_lines=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("source", overflow="fold")
    for key, fig in hw.figures.items():
        value = figure_text(key, fig) + (" (estimate)" if fig.estimate else "")
        table.add_row(key, value, fig.source + (f" — {fig.note}" if fig.note else ""))
    parts: list[RenderableType] = [head, table]
    if hw.measured is not None:
        m = hw.measured
        measured = Table(title="measured (iosim calibrate)", box=box.SIMPLE_HEAD,
                         title_justify="left", pad_edge=False, collapse_padding=True)
        measured.add_column("figure")
        measured.add_column("value", justify="right")
        for key, fig in m.figures.items():
            measured.add_row(key, figure_text(key, fig))
        for kind, eff in m.kernel_efficiency.items():
            measured.add_row(f"efficiency.{kind}", f"{eff:.3f}")
        parts += [measured, Text(f"provenance: {m.provenance}")]
    return Group(*parts)


def gpu_dict(hw: Hardware) -> dict[str, Any]:
    return {
        "name": hw.name, "display_name": hw.display_name, "aliases": list(hw.aliases),
        "path": hw.path, "vendor": hw.vendor, "architecture": hw.architecture,
        "figures": {k: {"value": f.value, "source": f.source, "estimate": f.estimate}
                    for k, f in hw.figures.items()},
        "measured": None if hw.measured is None else {
            "provenance": hw.measured.provenance,
            "figures": {k: f.value for k, f in hw.measured.figures.items()},
            "kernel_efficiency": dict(hw.measured.kernel_efficiency),
        },
    }
