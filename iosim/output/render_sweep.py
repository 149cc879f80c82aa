"""Sweep output (a rich table for people; CSV, JSON and Markdown for scripts and reports), and
the roofline's points as a table.

The rich table and Markdown show the first `limit` rows (a million-point sweep is for files);
CSV and JSON carry every row. Columns are the long ("tidy") table of `SweepResult.columns()`:
one row per (grid point, algorithm).
"""

from __future__ import annotations

import io
import itertools
import textwrap
from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.text import Text

from iosim.analysis.comparison import Comparison
from iosim.analysis.sweep import SweepResult
from iosim.analysis.sweep_spec import SPLITS_AUTO
from iosim.output.console import PIPE_WIDTH, make_console
from iosim.output.numbers import fmt_ratio
from iosim.output.plain import TextTable
from iosim.output.render import (
    fmt_binary_bytes,
    fmt_bytes,
    fmt_count,
    fmt_intensity,
    fmt_rate,
    fmt_time,
)
from iosim.output.render_tables import label_grid
from iosim.output.tables import compact_table, markdown_table

AXIS_HEADERS = {"gpu": "GPU", "dtype": "dtype", "pass_": "pass", "causal": "causal",
                "batch": "batch", "heads": "heads", "kv_heads": "kv heads", "d": "d", "d_v": "d_v", "n": "N",
                "n_kv": "N_kv", "sram_bytes": "SRAM", "sram_elements": "SRAM",
                "block_q": "B_r", "block_kv": "B_c", "sparsity": "s", "splits": "splits",
                "window": "window"}
"""Varying axes shown as table columns (block axes show up in the blocks column instead)."""


def _shown_axes(result: SweepResult) -> list[str]:
    # block and split axes show as the values used, in their own columns
    axes = [a for a in result.spec.varying if a not in ("block_q", "block_kv", "splits")]
    if "sram_elements" in axes and "sram_bytes" in axes:
        axes.remove("sram_elements")
    return axes


def _rows(result: SweepResult, limit: int | None, *, wide: bool = False
          ) -> tuple[list[list[str]], int]:
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
            elif axis == "window":
                cells.append(str(columns[key][i]) if columns[key][i] else "none")
            else:
                cells.append(str(columns[key][i]))
        tiled = columns["block_q"][i] > 0
        cells += [
            str(columns["algorithm"][i]),
            f"{columns['block_q'][i]}×{columns['block_kv'][i]}" if tiled else "—",
            _fits_text(bool(columns["fits_sram"][i]), _fits_hbm(columns, i)),
            *([str(columns["splits"][i]) if tiled else "—"] if _shows_splits(result, wide)
              else []),
            *([fmt_bytes(float(columns["hbm_read_bytes"][i])),
               fmt_bytes(float(columns["hbm_write_bytes"][i]))] if wide else []),
            fmt_bytes(float(columns["hbm_bytes"][i])),
            fmt_ratio(columns['traffic_ratio_vs_standard'][i]),
            *([fmt_count(float(columns["flops"][i]))] if wide else []),
            fmt_time(float(columns["time_s"][i])),
            *([fmt_time(float(columns["call_time_s"][i]))] if "call_time_s" in columns else []),
            fmt_ratio(columns['speedup_vs_standard'][i]),
            str(columns["bound"][i]),
        ]
        rows.append(cells)
    return rows, total


def _fits_hbm(columns: dict[str, np.ndarray], i: int) -> bool:
    return bool(columns["fits_in_hbm"][i]) if "fits_in_hbm" in columns else True


def _fits_text(sram: bool, hbm: bool) -> str:
    """'yes', or what does not fit: the tiles in SRAM, the tensors in HBM, or both."""
    if sram and hbm:
        return "yes"
    return "NO: " + "+".join(name for name, ok in (("SRAM", sram), ("HBM", hbm)) if not ok)


def _has_splits(result: SweepResult) -> bool:
    return any(a.name == "splitkv" for a in result.algorithms)


def _shows_splits(result: SweepResult, wide: bool) -> bool:
    """The splits column: in --wide, and wherever the split count is an axis of the sweep
    (several values, or auto: each point's own) — without it, `--splits 1,auto` printed two
    rows per point that nothing in the 80-column table told apart."""
    chosen = "splits" in result.spec.varying or SPLITS_AUTO in result.spec.splits
    return _has_splits(result) and (wide or chosen)


def _headers(result: SweepResult, *, wide: bool = False) -> list[tuple[str, str]]:
    axes = [(AXIS_HEADERS[a], "left" if a in ("gpu", "dtype", "pass_", "causal") else "right")
            for a in _shown_axes(result)]
    values = [("algorithm", "left"), ("B_r×B_c", "right"), ("fits", "left"),
              *([("splits", "right")] if _shows_splits(result, wide) else []),
              *([("read", "right"), ("write", "right")] if wide else []),
              ("HBM", "right"), ("÷ std", "right"), *([("FLOP", "right")] if wide else []),
              ("time", "right"), *([("call", "right")] if _shows_call(result) else []),
              ("speed-up", "right"), ("bound", "left")]
    return axes + values


def _shows_call(result: SweepResult) -> bool:
    """An --impl sweep's call column: one call as do_bench times it (sweep_impl.py)."""
    return any(a.call_time_s is not None for a in result.algorithms)


def header_rows(result: SweepResult) -> list[tuple[str, str]]:
    """(label, text) lines above a sweep's table: its grid (points × algorithms), the varying axes,
    the fixed values and the roofs' notes."""
    spec = result.spec
    varying = ", ".join(f"{AXIS_HEADERS[a]} ({len(spec.values(a))} values)"
                        for a in spec.varying)
    fixed = " · ".join(result.describe_fixed()
                       + ([f"unfused {','.join(spec.unfused)}"] if spec.unfused else []))
    rows = [
        ("sweep", f"{result.points:,} grid point{'s' if result.points != 1 else ''} × "
                  f"{len(result.algorithms)} algorithm{'s' if len(result.algorithms) != 1 else ''} "
                  f"({spec.profile} profile, closed forms)"),
        ("varying", varying or "nothing"),
        ("fixed", fixed),
    ]
    rows += [("note", n) for n in result.notes]
    rows.append(("columns", "HBM: bytes read + written (L2-oblivious); ÷ std and speed-up: "
                            "standard attention's HBM and time over this row's; fits: yes, or "
                            "NO: SRAM (the blocks exceed it; their counts say what they would "
                            "cost if they fitted) / NO: HBM (the tensors exceed the GPU's "
                            "memory)"
                            + ("; call: one call as do_bench times it (the kernels' time plus "
                               "the implementation's time per call, at least its host-bound "
                               "floor or iosim's Triton launcher's; a training step: the "
                               "forward call + the backward call)" if _shows_call(result)
                               else "")))
    return rows


def header_text(result: SweepResult) -> str:
    """The header as plain lines of at most 100 characters (Markdown, reports)."""
    lines = []
    for label, value in header_rows(result):
        lines += textwrap.wrap(value, width=100, initial_indent=f"{label:<10}",
                               subsequent_indent=" " * 10, break_on_hyphens=False)
    return "\n".join(lines)


def _sweep_table(headers: list[tuple[str, str]], rows: list[list[str]],
                 title: str | None = None) -> TextTable:
    table = compact_table(title, headers)
    for row in rows:
        table.add_row(*row)
    return table


def _width(renderable: RenderableType) -> int:
    from rich.console import Console

    return Console(width=1000).measure(renderable).maximum


def _stacked(headers: list[tuple[str, str]], rows: list[list[str]], axes: int,
             width: int | None, title: str) -> list[RenderableType]:
    """One table, or, when it is wider than `width`, one per value of its first axis column
    (named in the title), as many axes deep as it takes to fit."""
    table = _sweep_table(headers, rows, title or None)
    if width is None or axes == 0 or _width(table) <= width:
        return [table]
    name = headers[0][0]
    out: list[RenderableType] = []
    for value, group in itertools.groupby(rows, key=lambda r: r[0]):
        out += _stacked(headers[1:], [r[1:] for r in group], axes - 1, width,
                        f"{title} · {name} {value}" if title else f"{name} {value}")
    return out


def sweep_renderable(result: SweepResult, *, limit: int | None = 100, wide: bool = False,
                     width: int | None = None) -> RenderableType:
    """The header and the rows; wider than `width`, the rows stack into one table per value of
    the first varying axis (its value in the table's title) rather than being cut."""
    rows, total = _rows(result, limit, wide=wide)
    headers = _headers(result, wide=wide)
    tables = _stacked(headers, rows, len(_shown_axes(result)), width, "")
    parts: list[RenderableType] = [label_grid(header_rows(result)), Text(""), *tables]
    if len(rows) < total:
        parts.append(Text(f"… {total - len(rows):,} more rows; use --limit, or --format "
                          f"csv/jsonl/json for all {total:,}"))
    return Group(*parts)


def print_sweep(result: SweepResult, *, limit: int | None = 100, wide: bool = False) -> None:
    """To stdout: a terminal keeps its width (the table stacks by its first axis when it is too
    wide; with `wide`, lines grow past it where the stacked tables still need more, rather
    than cells being cut); a pipe or file gets $COLUMNS, else as wide as the table needs."""
    needed = _width(sweep_renderable(result, limit=limit, wide=wide))
    console = make_console(pipe_width=max(PIPE_WIDTH, needed))
    if wide:  # every column, none cut: as wide as the stacked tables need, past the terminal
        rows, _ = _rows(result, limit, wide=True)
        tables = _stacked(_headers(result, wide=True), rows, len(_shown_axes(result)),
                          console.width, "")
        console.width = max(console.width, *(_width(t) for t in tables))
    console.print(sweep_renderable(result, limit=limit, wide=wide, width=console.width))


def sweep_markdown(result: SweepResult, *, limit: int | None = 100) -> str:
    """A sweep as Markdown: its header, then its table, cut after `limit` rows (None: every row)."""
    rows, total = _rows(result, limit, wide=True)
    headers = _headers(result, wide=True)
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
    """Every row; an untiled algorithm's blocks are empty (sweep_stream.write_csv, as text)."""
    from iosim.output.sweep_stream import write_csv

    out = io.StringIO()
    write_csv(result, out)
    return out.getvalue()


def sweep_json(result: SweepResult) -> str:
    """A sweep as one JSON document (schema iosim.sweep/1), every row included."""
    from iosim.output.sweep_stream import write_json

    out = io.StringIO()
    write_json(result, out)
    return out.getvalue().rstrip("\n")


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
                # the bytes the memory roof charged (the DRAM estimate with the measured
                # profile): where the plot places the kernel
                "roof_bytes": k.roof_bytes,
                "intensity_flops_per_byte": k.flops / k.roof_bytes if k.roof_bytes else None,
                "performance_flops_per_s": k.flops / k.time_s if k.time_s else None,
                "ridge_flops_per_byte": ridge, "time_s": k.time_s, "bound": k.bound,
            })
    return rows


def roofline_table(c: Comparison) -> TextTable:
    """The table `iosim roofline` prints: each kernel's bytes (HBM, or DRAM on the measured
    profile), FLOPs, intensity (FLOP/B), achieved FLOP/s, time and bound."""
    memory = "DRAM" if c.roofs.profile == "measured" else "HBM"  # the bytes the roof charged
    table = compact_table(f"Roofline ({c.roofs.profile} profile): {c.hardware.display_name}, "
                          f"ridge {c.roofs.ridge_point_flops_per_byte:.0f} FLOP/B", (
                              ("algorithm", "left"), ("kernel", "left"), (memory, "right"),
                              ("FLOP", "right"), ("FLOP/B", "right"), ("FLOP/s", "right"),
                              ("time", "right"), ("bound", "left")))
    for r in roofline_records(c):
        intensity = r["intensity_flops_per_byte"]
        perf = r["performance_flops_per_s"]
        table.add_row(r["algorithm"], r["label"], fmt_bytes(r["roof_bytes"]), fmt_count(r["flops"]),
                      "—" if intensity is None else fmt_intensity(intensity),
                      # a bare count under its unit, as the FLOP column (a cascade's kernel
                      # names left no room for 'TFLOP/s' in 80 columns)
                      "—" if not perf else fmt_count(perf), fmt_time(r["time_s"]),
                      r["bound"])
    return table


def roofline_note(c: Comparison) -> str:
    """Why a point may sit above the matmul peak (only when one does)."""
    peak = c.roofs.matmul_flops_per_s
    above = [r for r in roofline_records(c)
             if r["performance_flops_per_s"] and r["performance_flops_per_s"] > peak]
    if not above:
        return ""
    names = ", ".join(f"{r['algorithm']} {r['label']}" for r in above)
    verb = "shows" if len(above) == 1 else "show"
    return (f"FLOP/s = every FLOP (matmul + elementwise) ÷ time. {names} {verb} more than the "
            f"{fmt_rate(peak, 'FLOP/s')} matmul peak because its elementwise (softmax) FLOPs run "
            f"on the vector units at the same time as the tensor cores; its matmul FLOPs alone "
            f"stay under the peak.")
