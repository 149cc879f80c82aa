"""The roofline figure: every kernel of every algorithm against the GPU's ceilings.

A kernel sits at x = FLOPs / the bytes its memory roof charged (the L2-oblivious HBM count
with the spec profile, the L2-aware DRAM estimate with the measured one: the same bytes that
timed it) and y = FLOPs / its roofline time. Points carry numbers, placed clear of each other
and of the roofs (plot_kit.place_labels); the legend below the axes is the key. Points within a
marker of each other nest (each later one smaller and on top), so none hides another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from iosim.analysis.comparison import Comparison
from iosim.output import plot_kit
from iosim.output.plot_kit import (
    _RATE_PREFIXES,
    GUIDE_COLOR,
    _label_ticks,
    _si_formatter,
    color_of,
    new_figure,
    tick_text,
)
from iosim.output.plot_zoom import zoom_cluster
from iosim.output.render import fmt_binary_bytes, fmt_bytes, fmt_rate

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from iosim.estimates.roofline import KernelEstimate

KERNEL_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
POINT_SIZE = 10.0
ROOF_COLORS = {"L2": "#8c564b", "SRAM": "#9467bd"}


def roof_lines(ax: Any, c: Comparison, grid: np.ndarray) -> list[Any]:
    """HBM (or DRAM) roof up to the matmul peak, the fp32 vector peak, and the L2 and SRAM
    roofs where the GPU's YAML has them; the ridge point. Returns the lines drawn."""
    hw, roofs, w = c.hardware, c.roofs, c.workload
    bandwidth, peak = roofs.hbm_bandwidth_bytes_per_s, roofs.matmul_flops_per_s
    memory = "DRAM" if roofs.profile == "measured" else "HBM"
    measured = " measured" if roofs.profile == "measured" else ""
    lines: list[Any] = ax.plot(grid, np.minimum(grid * bandwidth, peak), color="black", lw=2,
                    label=f"{memory} {fmt_rate(bandwidth, 'B/s')}{measured} → {w.dtype} matmul "
                          f"peak {fmt_rate(peak, 'FLOP/s')}")
    lines.append(ax.axhline(roofs.vector_flops_per_s, color=GUIDE_COLOR, lw=1.2, ls=(0, (6, 3)),
                            label=f"fp32 vector peak {fmt_rate(roofs.vector_flops_per_s, 'FLOP/s')} "
                                  f"(elementwise: softmax)"))
    for level, rate, style in (("L2", hw.l2_bandwidth_bytes_per_s, "-."),
                               ("SRAM", hw.sram_bandwidth_bytes_per_s, ":")):
        if not rate:
            continue
        figure = hw.figures.get(f"{level.lower()}_bandwidth")
        est = " est." if figure is not None and figure.estimate else ""
        lines += ax.plot(grid, np.minimum(grid * rate, peak), color=ROOF_COLORS[level], lw=1.2,
                         ls=style, label=f"{level} {fmt_rate(rate, 'B/s')}{est} (if the bytes "
                                         f"came from {level})")
    ridge = roofs.ridge_point_flops_per_byte
    lines.append(ax.axvline(ridge, color=GUIDE_COLOR, lw=0.8, ls=":"))
    # above the kernels (thin, white-edged: a point under it still shows around it)
    ax.plot([ridge], [peak], marker="*", ms=11, color="black", ls="none", zorder=9,
            markeredgecolor="white", markeredgewidth=0.6, label=f"ridge point {ridge:.0f} FLOP/B")
    return lines


def roofline(comparison: Comparison, *, title_note: str | None = None) -> Figure:
    """Every kernel of every algorithm on the GPU's roofline (see the module docstring).
    Zero-FLOP kernels (initialisations) cannot sit on a log axis: listed below the plot."""
    from matplotlib.lines import Line2D

    c = comparison
    hw, roofs, w = c.hardware, c.roofs, c.workload
    peak, ridge = roofs.matmul_flops_per_s, roofs.ridge_point_flops_per_byte
    fig, ax = new_figure(9.0, 5.6)  # and the legend's height (legend_below)

    points: list[tuple[str, KernelEstimate, float, float]] = []
    skipped = []
    for a in c.algorithms:
        for k in a.kernels:
            if k.flops > 0 and k.roof_bytes > 0:
                points.append((a.name, k, k.flops / k.roof_bytes, k.flops / k.time_s))
            else:
                skipped.append(f"{a.name} {k.label} ({fmt_bytes(k.hbm_bytes)}, {k.flops} FLOPs)")
    xs = [p[2] for p in points] or [ridge]
    x_lo = 10 ** math.floor(math.log10(min(min(xs), ridge) / 3))
    x_hi = 10 ** math.ceil(math.log10(max(max(xs), ridge) * 3))
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 400)
    roofs_drawn = roof_lines(ax, c, grid)

    # kernels that move and compute the same (standard's QKᵀ and PV) share one point and number
    groups: dict[tuple[float, float], list[tuple[str, KernelEstimate, float, float]]] = {}
    for p in points:
        groups.setdefault((round(math.log10(p[2]), 3), round(math.log10(p[3]), 3)), []).append(p)
    ordered = sorted(groups.values(), key=lambda g: (g[0][2], g[0][3]))
    names = list(dict.fromkeys(a.name for a in c.algorithms))

    def marker_of(name: str) -> str:
        return KERNEL_MARKERS[names.index(name) % len(KERNEL_MARKERS)]

    drawn: list[tuple[Any, float, float, int]] = []
    for index, group in enumerate(ordered):
        for name in dict.fromkeys(m[0] for m in group):
            x, y = group[0][2], group[0][3]
            (line,) = ax.plot([x], [y], marker=marker_of(name), ms=POINT_SIZE, ls="none",
                              color=color_of(name), markeredgecolor="black",
                              markeredgewidth=0.7)
            drawn.append((line, x, y, index))

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    y_lo = 10 ** math.floor(math.log10(min([p[3] for p in points] + [
        x_lo * roofs.hbm_bandwidth_bytes_per_s, roofs.vector_flops_per_s])))
    ax.set_ylim(y_lo, peak * 4)
    memory = "DRAM byte, L2-aware estimate" if roofs.profile == "measured" else "HBM byte"
    ax.set_xlabel(f"arithmetic intensity (FLOP per {memory})")
    ax.set_ylabel("performance (FLOP/s)")
    _label_ticks(ax.yaxis, lambda v: tick_text(v, _RATE_PREFIXES))
    ax.xaxis.set_major_formatter(_si_formatter("", lambda v: f"{v:g}"))
    ax.grid(True, which="major", alpha=0.3)

    handles, labels = plot_kit.axes_handles(ax)
    for name in names:
        handles.append(Line2D([], [], marker=marker_of(name), ls="none", color=color_of(name),
                              markeredgecolor="black", markeredgewidth=0.7, ms=7))
        labels.append(name)
    for number, group in enumerate(ordered, start=1):
        handles.append(Line2D([], [], ls="none"))
        labels.append(f"{number}  {point_label(group)}")
    plot_kit.legend_below(fig, handles, labels)

    blocks = "; ".join(f"{a.name} B_r×B_c {a.tiling.block_q}×{a.tiling.block_kv}"
                       for a in c.algorithms if a.tiling is not None)
    lines = [f"Roofline — {hw.display_name} ({roofs.profile} profile)", w.describe(),
             f"SRAM M = {c.sram_bytes // w.element_bytes:,} {w.dtype} elements "
             f"({fmt_binary_bytes(c.sram_bytes)})" + (f"; {blocks}" if blocks else "")]
    if title_note:
        lines.append(title_note)
    plot_kit.fitted_title(ax, lines)
    footer = ["y = all FLOPs / roofline time: elementwise FLOPs run on the vector units beside "
              "the tensor cores, so a compute-bound kernel can sit a few % above the matmul peak."]
    if roofs.profile == "measured":
        footer.append("Measured profile: x charges each kernel's L2-aware DRAM estimate, the "
                      "bytes its memory roof timed.")
    if skipped:
        footer.append("Not on the plot (no FLOPs): " + "; ".join(skipped) + ".")
    plot_kit.footnote(ax, "\n".join(footer))

    plot_kit.freeze_layout(fig)
    plot_kit.nest_markers(fig, [d[0] for d in drawn], POINT_SIZE + 2)
    zoom = zoom_cluster(ax, [d[0] for d in drawn], roofs_drawn, base_size=POINT_SIZE)
    zoomed = {drawn[i][3] for i in zoom.members} if zoom else set()
    numbered = [((g[0][2], g[0][3]), str(i + 1)) for i, g in enumerate(ordered)]
    plot_kit.number_with_zoom(ax, zoom, numbered, zoomed, roofs_drawn)
    return fig


def point_label(group: Sequence[tuple[str, Any, float, float]]) -> str:
    """The label of a group of roofline points that fall together: each algorithm's kernels."""
    by_algo: dict[str, list[str]] = {}
    for name, k, _, _ in group:
        by_algo.setdefault(name, []).append(k.label)
    return "; ".join(f"{name}: {', '.join(labels)}" for name, labels in by_algo.items())
