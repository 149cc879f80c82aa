"""Sweep output (a rich table for people; CSV, JSON and Markdown for scripts and reports), and
the roofline's points as a table.

The rich table and Markdown show the first `limit` rows (a million-point sweep is for files);
CSV and JSON carry every row. Columns are the long ("tidy") table of `SweepResult.columns()`:
one row per (grid point, algorithm).
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from iosim.analysis.comparison import Comparison
from iosim.analysis.sweep import SweepResult
from iosim.output import strict_json
from iosim.output.render import fmt_binary_bytes, fmt_bytes, fmt_count, fmt_rate, fmt_time
from iosim.output.tables import markdown_table

AXIS_HEADERS = {"gpu": "GPU", "dtype": "dtype", "pass_": "pass", "causal": "causal",
                "batch": "batch", "heads": "heads", "kv_heads": "kv heads", "d": "d", "n": "N",
                "n_kv": "N_kv", "sram_bytes": "SRAM", "sram_elements": "SRAM",
                "block_q": "B_r", "block_kv": "B_c", "sparsity": "s", "splits": "splits"}
"""Varying axes shown as table columns (block axes show up in the blocks column instead)."""


def _shown_axes(result: SweepResult) -> list[str]:
    # block and split axes show as the values used, in their own columns
    axes = [a for a in result.spec.varying if a not in ("block_q", "block_kv", "splits")]
    if "sram_elements" in axes and "sram_bytes" in axes:
        axes.remove("sram_elements")
    return axes


def _rows(result: SweepResult, limit: int | None) -> tuple[list[list[str]], int]:
    """The first `limit` rows as display strings, and how many rows there are in all."""
    per_point = len(result.algorithms)
    total = result.points * per_point
    columns = result.columns(max_points=None if limit is None else -(-limit // per_point))
    shown = total if limit is None else min(limit, total)
    axes = _shown_axes(result)
    rows = []
    for i in range(shown):
        cells = []
        for axis in axes:
            key = "pass" if axis == "pass_" else axis
            if axis in ("sram_bytes", "sram_elements"):
                cells.append(fmt_binary_bytes(float(columns["sram_bytes"][i])))
            elif axis == "causal":
                cells.append("yes" if columns[key][i] else "no")
            elif axis == "sparsity":
                cells.append(f"{columns[key][i]:g}")
            else:
                cells.append(str(columns[key][i]))
        tiled = columns["block_q"][i] > 0
        fits = bool(columns["fits_sram"][i])
        cells += [
            str(columns["algorithm"][i]),
            f"{columns['block_q'][i]}×{columns['block_kv'][i]}" if tiled else "—",
            ("yes" if fits else "NO") if tiled else "—",
            *([str(columns["splits"][i]) if tiled else "—"] if _has_splits(result) else []),
            fmt_bytes(float(columns["hbm_read_bytes"][i])),
            fmt_bytes(float(columns["hbm_write_bytes"][i])),
            fmt_bytes(float(columns["hbm_bytes"][i])),
            f"{columns['traffic_ratio_vs_standard'][i]:.2f}×",
            fmt_count(float(columns["flops"][i])),
            fmt_time(float(columns["time_s"][i])),
            f"{columns['speedup_vs_standard'][i]:.2f}×",
            str(columns["bound"][i]),
        ]
        rows.append(cells)
    return rows, total


_VALUE_HEADERS = (("algorithm", "left"), ("B_r×B_c", "right"), ("fits", "left"),
                  ("read", "right"), ("write", "right"), ("HBM", "right"), ("÷ std", "right"),
                  ("FLOP", "right"), ("time", "right"), ("speed-up", "right"), ("bound", "left"))


def _has_splits(result: SweepResult) -> bool:
    return any(a.name == "splitkv" for a in result.algorithms)


def _headers(result: SweepResult) -> list[tuple[str, str]]:
    axes = [(AXIS_HEADERS[a], "left" if a in ("gpu", "dtype", "pass_", "causal") else "right")
            for a in _shown_axes(result)]
    values = list(_VALUE_HEADERS)
    if _has_splits(result):
        values.insert(3, ("splits", "right"))
    return axes + values


def header_text(result: SweepResult) -> str:
    spec = result.spec
    varying = ", ".join(f"{AXIS_HEADERS[a]} ({len(spec.values(a))} values)"
                        for a in spec.varying)
    fixed = " · ".join(result.describe_fixed()
                       + ([f"unfused {','.join(spec.unfused)}"] if spec.unfused else []))
    fixed_lines = textwrap.wrap(fixed, width=100, initial_indent="fixed     ",
                                subsequent_indent="          ", break_on_hyphens=False)
    lines = [
        f"sweep     {result.points:,} grid point{'s' if result.points != 1 else ''} × "
        f"{len(result.algorithms)} algorithm{'s' if len(result.algorithms) != 1 else ''} "
        f"({spec.profile} profile, closed forms)",
        *textwrap.wrap(varying or "nothing", width=100, initial_indent="varying   ",
                       subsequent_indent="          "),
        *fixed_lines,
    ]
    lines += [f"note      {n}" for n in result.notes]
    if not all(bool(a.fits_sram.all()) for a in result.algorithms):
        lines.append("note      fits NO: those blocks exceed the SRAM; their counts say what they "
                     "would cost if they fitted")
    return "\n".join(lines)


def sweep_renderable(result: SweepResult, *, limit: int | None = 100) -> RenderableType:
    rows, total = _rows(result, limit)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name, justify in _headers(result):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    parts: list[RenderableType] = [Text(header_text(result)), Text(""), table]
    if len(rows) < total:
        parts.append(Text(f"… {total - len(rows):,} more rows; use --limit, or --format csv/json "
                          f"for all {total:,}"))
    return Group(*parts)


def print_sweep(result: SweepResult, *, limit: int | None = 100) -> None:
    """To stdout: a terminal keeps its width; a pipe or file gets as wide as the table needs."""
    from rich.console import Console

    renderable = sweep_renderable(result, limit=limit)
    console = Console()
    if not console.is_terminal:
        needed = Console(width=1000).measure(renderable).maximum
        console = Console(width=max(110, needed))
    console.print(renderable)


def sweep_markdown(result: SweepResult, *, limit: int | None = 100) -> str:
    rows, total = _rows(result, limit)
    headers = _headers(result)
    parts = ["```", header_text(result), "```", "",
             markdown_table([h for h, _ in headers], rows, [j == "right" for _, j in headers])]
    if len(rows) < total:
        parts += ["", f"*… {total - len(rows):,} more rows (CSV/JSON hold all {total:,}).*"]
    return "\n".join(parts) + "\n"


def sweep_frame(result: SweepResult) -> Any:
    """The long table as a pandas DataFrame (imported here: only CSV/JSON/reports need it)."""
    import pandas as pd

    columns = result.columns()
    frame = pd.DataFrame(columns)
    blocks = ["block_q", "block_kv", "bwd_block_q", "bwd_block_kv"]
    for name in blocks:  # an untiled algorithm, or a pass without a backward: empty
        frame[name] = frame[name].where(frame[name] > 0)
    return frame.astype({name: "Int64" for name in blocks})


def sweep_csv(result: SweepResult) -> str:
    """Every row; an untiled algorithm's blocks are empty."""
    text: str = sweep_frame(result).to_csv(index=False, lineterminator="\n")
    return text


def sweep_json(result: SweepResult) -> str:
    columns = result.columns()
    names = list(columns)
    lists = [_plain(columns[name]) for name in names]
    records = [dict(zip(names, row, strict=True)) for row in zip(*lists, strict=True)]
    for record in records:
        for pair in (("block_q", "block_kv"), ("bwd_block_q", "bwd_block_kv")):
            if not record[pair[0]]:
                record[pair[0]] = record[pair[1]] = None
    return strict_json.dumps({**result.metadata(), "rows": records}, indent=1, ensure_ascii=False)


def _plain(values: np.ndarray) -> list[Any]:
    out: list[Any] = values.tolist()
    return out


# ---------------------------------------------------------------------------------------------
# roofline points


def roofline_records(c: Comparison) -> list[dict[str, Any]]:
    """One row per kernel: where it sits on the roofline (x = FLOP/B, y = FLOP/s)."""
    ridge = c.roofs.ridge_point_flops_per_byte
    rows = []
    for a in c.algorithms:
        for k in a.kernels:
            rows.append({
                "algorithm": a.name, "kernel": k.name, "label": k.label, "kind": k.kind,
                "hbm_bytes": k.hbm_bytes, "flops": k.flops,
                "intensity_flops_per_byte": k.flops / k.hbm_bytes if k.hbm_bytes else None,
                "performance_flops_per_s": k.flops / k.time_s if k.time_s else None,
                "ridge_flops_per_byte": ridge, "time_s": k.time_s, "bound": k.bound,
            })
    return rows


def roofline_table(c: Comparison) -> Table:
    table = Table(title=f"Roofline points ({c.hardware.display_name}; ridge "
                        f"{c.roofs.ridge_point_flops_per_byte:.0f} FLOP/B)",
                  box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for name, justify in (("algorithm", "left"), ("kernel", "left"), ("HBM", "right"),
                          ("FLOP", "right"), ("FLOP/B", "right"), ("FLOP/s", "right"),
                          ("time", "right"), ("bound", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in roofline_records(c):
        intensity = r["intensity_flops_per_byte"]
        perf = r["performance_flops_per_s"]
        table.add_row(r["algorithm"], r["label"], fmt_bytes(r["hbm_bytes"]), fmt_count(r["flops"]),
                      "—" if intensity is None else f"{intensity:.1f}",
                      "—" if not perf else fmt_rate(perf, "FLOP/s"), fmt_time(r["time_s"]),
                      r["bound"])
    return table
