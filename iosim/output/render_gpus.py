"""`iosim gpus` and `iosim gpus show`: the shipped GPU models, each figure with its source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from iosim.inputs.hardware import Figure, Hardware
from iosim.output.numbers import fmt_binary_bytes, fmt_rate
from iosim.output.plain import TextTable
from iosim.output.tables import compact_table, simple_table


def _figure_value(fig: Figure | None, unit: str, *, binary: bool = False) -> str:
    if fig is None:
        return "—"
    text = fmt_binary_bytes(fig.value) if binary else fmt_rate(fig.value, unit)
    return text + (" (est.)" if fig.estimate else "")


def gpus_table(hardware: Sequence[Hardware]) -> TextTable:
    """The table of `iosim gpus`: one row per GPU model with its HBM bandwidth and size, SRAM per
    block, SMs and fp16 peak in people's units."""
    table = compact_table("GPU models (configs/gpus; `iosim gpus show NAME` for sources)", (
        ("name", "left"), ("aliases", "left"), ("HBM BW", "right"), ("HBM", "right"),
        ("SRAM/block", "right"), ("SMs", "right"), ("peak fp16", "right")))
    table.columns[1].no_wrap = False  # aliases wrap; a name is never cut
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
    """One hardware figure in people's units (FLOP/s, B/s, KiB/MiB/GiB, or a count)."""
    if key == "sm_count":
        return f"{fig.value:.0f}"
    if key.startswith("peak_flops") or key == "vector_flops":
        return fmt_rate(fig.value, "FLOP/s")
    unit, binary = _FIGURE_UNITS[key]
    return fmt_binary_bytes(fig.value) if binary else fmt_rate(fig.value, unit)


def gpu_detail(hw: Hardware) -> RenderableType:
    """What `iosim gpus show NAME` prints: the GPU's names, file, notes and every figure with its
    source (and its measured profile, when the YAML has one)."""
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
        measured = simple_table("measured (iosim calibrate)",
                                (("figure", "left"), ("value", "right")), collapse_padding=True)
        for key, fig in m.figures.items():
            measured.add_row(key, figure_text(key, fig))
        for kind, eff in m.kernel_efficiency.items():
            measured.add_row(f"efficiency.{kind}", f"{eff:.3f}")
        parts += [measured, Text(f"provenance: {m.provenance}")]
    return Group(*parts)


def gpu_dict(hw: Hardware) -> dict[str, Any]:
    """The JSON of `iosim gpus show NAME --format json`: every figure in SI units with its source."""
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
