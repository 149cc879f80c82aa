"""Output: rich tables for people, JSON/CSV/Markdown for scripts and reports.

Human units (MB, µs, TFLOP/s) exist only here; the core hands over bytes, seconds and FLOPs.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from iosim.algorithms.packing import packs_heads
from iosim.analysis.comparison import AlgorithmEstimate, Comparison
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
from iosim.output.plain import LabelGrid, TextTable, plain_text
from iosim.output.render_notes import (
    dram_table,
    footer_text,
    occupancy_lines,
    occupancy_table,
    shows_parallelism,
)
from iosim.output.render_tables import (
    kernel_legend,
    kernel_table,
    label_grid,
    summary_table,
    tensor_table,
)
from iosim.output.tables import rich_markdown

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

# ---------------------------------------------------------------------------------------------
# compare: rich


def header_grid(c: Comparison) -> LabelGrid:
    """The lines above compare's tables: GPU and profile, workload, roofs (B/s, FLOP/s), SRAM,
    each tiled algorithm's blocks and splits, occupancy warnings, sparsity and the roofs' notes."""
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


def _splits_text(c: Comparison, a: AlgorithmEstimate) -> str:
    assert a.tiling is not None
    w = c.workload
    t_c = -(-w.n_kv // a.tiling.block_kv)
    per = -(-t_c // a.tiling.splits)
    packed = (f"; the {w.group_size} query heads of each KV head packed into one tile "
              f"(seqlenq_ngroups_swapped)" if packs_heads(w.n, w.heads, w.kv_heads) else "")
    blocks = "key block" if per == 1 else "key blocks"
    return (f"{a.tiling.splits} KV splits of {per} {blocks} ({a.tiling.splits_rule})"
            f"{packed}")


def comparison_parts(c: Comparison, *, wide: bool = False
                     ) -> list[LabelGrid | TextTable | Table | str]:
    """Everything `iosim compare` prints, in order: header, tables, paragraphs (str, printed as
    rich prints a Text) and footer lines (`wide`: every column instead of the 80-column layout)."""
    parts: list[LabelGrid | TextTable | Table | str] = [
        header_grid(c), "", kernel_table(c, wide=wide), kernel_legend(c), "",
        summary_table(c, wide=wide), tensor_table(c, wide=wide)]
    if c.workload.pass_ != "fwd" and any(a.dram is not None for a in c.algorithms):
        parts.append(dram_table(c))
    if shows_parallelism(c):
        parts.append(occupancy_table(c))
    return [*parts, footer_text(c)]


def comparison_renderable(c: Comparison, *, wide: bool = False) -> RenderableType:
    """Everything `iosim compare` prints as one rich renderable."""
    from rich.console import Group
    from rich.text import Text

    return Group(*(Text(p) if isinstance(p, str) else p for p in comparison_parts(c, wide=wide)))


def print_comparison(c: Comparison, console: Console, *, wide: bool = False) -> None:
    """Print `comparison_renderable(c, wide=wide)` to `console`."""
    console.print(comparison_renderable(c, wide=wide))


def wide_width(c: Comparison, width: int) -> int:
    """The columns `compare --wide` lays out at: `width`, or more where a table of the wide
    layout needs more, so that no cell is cut (the terminal wraps the longer lines)."""
    needed = [part.natural_width() for part in comparison_parts(c, wide=True)
              if isinstance(part, TextTable)]
    return max([width, *(n for n in needed if n is not None)])


def plain_comparison(c: Comparison, width: int, *, wide: bool = False, styled: bool = False,
                     notes: Sequence[str] = ()) -> str | None:
    """What `print_comparison` prints to a pipe `width` columns wide, laid out without rich
    (plain.py), or None where that layout does not know rich's."""
    return plain_text([*comparison_parts(c, wide=wide), *notes], width, styled=styled)


# ---------------------------------------------------------------------------------------------
# compare: machine formats


def comparison_json(c: Comparison) -> str:
    """The JSON of `iosim compare --format json` (schema iosim.compare/1; strict: no NaN)."""
    from iosim.output import strict_json  # (json and csv load only for their formats)

    return strict_json.dumps(c.to_dict(), indent=2, ensure_ascii=False)


def records_csv(records: Sequence[dict[str, Any]]) -> str:
    """Dict rows as CSV text, the first row's keys as the header (empty text for no rows)."""
    import csv

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
    tables: list[TextTable | Table] = [kernel_table(c, wide=True), summary_table(c, wide=True),
                                       tensor_table(c, wide=True)]
    if shows_parallelism(c):
        tables.append(occupancy_table(c))
    for table in tables:
        parts += [f"*{table.title}*", "", rich_markdown(table), ""]
    parts.append(kernel_legend(c) + "  ")
    parts.append(footer_text(c).replace("\n", "  \n"))
    return "\n".join(parts) + "\n"
