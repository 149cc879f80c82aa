"""Figures, one import for all: the roofline (plot_roofline) and its hierarchical form
(plot_hierarchy), traffic and time vs N (plot_n), the block-size sweep and its 2-D heatmap
(here and plot_heatmap), the GPU comparison (here), and what a sweep's axes allow
(`sweep_figures`).

matplotlib is imported inside the functions (`iosim --help` and `iosim compare` never load it),
and figures are drawn on an Agg canvas attached to a bare `matplotlib.figure.Figure`: no pyplot,
no global backend switch. Every function returns the Figure; `save` writes it as PNG and SVG.
Each figure's title names the GPU, the workload and the SRAM/block sizes; axes carry units; a
quantity spanning decades is drawn on a log scale; legends, labels and titles follow plot_kit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosim.analysis.hbm_fit import hbm_fits
from iosim.analysis.sweep import AlgorithmGrid, SweepResult
from iosim.inputs.output_paths import check_output_files
from iosim.output.plot_heatmap import block_heatmap, is_two_dimensional
from iosim.output.plot_hierarchy import hierarchical_roofline
from iosim.output.plot_kit import (
    _BYTE_PREFIXES,
    _RATE_PREFIXES,
    _SERIES_STYLES,
    _TIME_PREFIXES,
    ALGORITHM_COLORS,
    GUIDE_COLOR,
    _bytes_axis,
    _label_ticks,
    _log_block_axis,
    _si_formatter,
    _time_axis,
    axes_handles,
    color_of,
    fitted_title,
    legend_below,
    new_figure,
    save,
    tick_text,
)
from iosim.output.plot_n import time_vs_n, traffic_vs_n
from iosim.output.plot_roofline import roofline
from iosim.output.plot_select import (
    blocks_text,
    fixed_text,
    gpu_text,
    series_along,
    sram_text,
)
from iosim.output.render import fmt_time

__all__ = [
    "ALGORITHM_COLORS",
    "GUIDE_COLOR",
    "_BYTE_PREFIXES",
    "_RATE_PREFIXES",
    "_TIME_PREFIXES",
    "_bytes_axis",
    "_label_ticks",
    "_log_block_axis",
    "_si_formatter",
    "_time_axis",
    "block_heatmap",
    "block_sweep",
    "color_of",
    "gpu_comparison",
    "hierarchical_roofline",
    "new_figure",
    "roofline",
    "save",
    "sweep_figures",
    "tick_text",
    "time_vs_n",
    "traffic_vs_n",
]

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# ---------------------------------------------------------------------------------------------
# 3. block-size sweep


def block_axis(result: SweepResult) -> str | None:
    """The block axis a sweep varies (B_c first), or None."""
    for axis in ("block_kv", "block_q"):
        if axis in result.spec.varying:
            return axis
    return None


def block_sweep(result: SweepResult, *, axis: str | None = None,
                title_note: str | None = None) -> Figure:
    """HBM bytes (top) and roofline time (bottom) against the block size, per tiled algorithm.

    Filled markers: the blocks fit the SRAM; hollow markers on a dashed line (in the shaded
    band): they do not, and the counts say what would happen if they did. Circles are
    memory-bound points, squares compute-bound. The grey dotted line in the time panel is the
    algorithm's compute time (FLOPs at peak): the floor the time flattens onto.
    """
    axis = axis or block_axis(result)
    if axis is None:
        raise ValueError("the sweep varies no block size")
    series, note = series_along(result, axis, max_series=3)
    tiled = [a for a in result.algorithms if a.tiled]
    fig, (top, bottom) = new_figure(9.0, 7.2, rows=2, sharex=True)  # and the legend's height
    all_blocks: list[int] = []
    not_fitting: list[float] = []
    fitting: list[float] = []
    for s_index, s in enumerate(series):
        style = _SERIES_STYLES[s_index % len(_SERIES_STYLES)]
        for a in tiled:
            pos = s.positions
            blocks = (a.block_kv if axis == "block_kv" else a.block_q)[pos]
            order = np.argsort(blocks, kind="stable")
            pos, blocks = pos[order], blocks[order]
            all_blocks += blocks.tolist()
            fits = a.fits_sram[pos]
            not_fitting += blocks[~fits].tolist()
            fitting += blocks[fits].tolist()
            label = a.name + (f" ({s.label})" if s.label else "")
            for panel, values in ((top, a.hbm_bytes[pos]), (bottom, a.time_s[pos])):
                _fit_line(panel, blocks, values, fits, a.memory_bound[pos], color_of(a.name),
                          style, label)
            bottom.plot(blocks, a.compute_time_s[pos], color=color_of(a.name), ls=(0, (1, 2)),
                        lw=1.2, label=f"{a.name} compute time (FLOPs at peak)"
                        if s_index == 0 else None)
    # standard attention has no blocks: one level, for scale (the first series')
    base, pos0 = result.baseline, series[0].positions
    top.axhline(float(base.hbm_bytes[pos0][0]), color=color_of("standard"), lw=1, ls="--",
                label="standard attention (no tiles)")
    bottom.axhline(float(base.time_s[pos0][0]), color=color_of("standard"), lw=1, ls="--",
                   label="standard attention (no tiles)")
    if not_fitting and fitting and min(not_fitting) > max(fitting):
        edge = math.sqrt(max(fitting) * min(not_fitting))
        for panel in (top, bottom):
            panel.axvspan(edge, max(all_blocks) * 1.5, color="#dddddd", alpha=0.6, zorder=0)
        for panel in (top, bottom):
            panel.text(edge * 1.05, 0.97, "blocks do not fit\nthe SRAM: counts\nas if they did",
                       transform=panel.get_xaxis_transform(), fontsize=8, va="top",
                       ha="left", color="#444444")
    _log_block_axis(bottom, all_blocks)
    bottom.set_xlim(min(all_blocks) / 1.5, max(all_blocks) * 1.5)
    top.set_yscale("log")
    bottom.set_yscale("log")
    top.set_ylabel("HBM traffic (bytes)")
    bottom.set_ylabel("estimated time (seconds, roofline)")
    fig.canvas.draw()  # settle the autoscaled limits before choosing tick labels
    _bytes_axis(top.yaxis)
    _time_axis(bottom.yaxis)
    name = "B_c (key/value rows per block)" if axis == "block_kv" else "B_r (query rows per block)"
    bottom.set_xlabel(f"block size {name}")
    for panel in (top, bottom):
        panel.grid(True, which="major", alpha=0.3)
    _shape_legend(fig, top, bottom)
    first = series[0].positions
    other = "block_q" if axis == "block_kv" else "block_kv"
    other_text = _other_block_text(result, tiled, first, other)
    lines = [f"Block-size sweep — {', '.join(a.name for a in tiled)} on "
             f"{gpu_text(result, first)}",
             fixed_text(result),
             f"{sram_text(result, first)}; {other_text}"]
    lines += [t for t in (note, title_note) if t]
    fitted_title(top, lines)
    return fig


def _other_block_text(result: SweepResult, tiled: Sequence[AlgorithmGrid], positions: np.ndarray,
                      other: str) -> str:
    given = result.spec.values(other)
    symbol = "B_r" if other == "block_q" else "B_c"
    parts = []
    for a in tiled:
        values = sorted(set((a.block_q if other == "block_q" else a.block_kv)[positions].tolist()))
        how = " (Alg. 1 line 1)" if given == (None,) else ""
        parts.append(f"{a.name} {symbol} = {', '.join(map(str, values))}{how}")
    return "; ".join(parts)


def _fit_line(ax: Axes, x: np.ndarray, y: np.ndarray, fits: np.ndarray, memory_bound: np.ndarray,
              color: str, style: str, label: str) -> None:
    """A line through the points: solid where the blocks fit, dashed beyond; marker fill = fit,
    marker shape = bound."""
    ok = np.flatnonzero(fits)
    ax.plot(x[fits], y[fits], ls=style, color=color, label=label, lw=1.6)
    if (~fits).any():
        # dashed from the last fitting point through the non-fitting ones
        start = ok[-1] if ok.size else 0
        tail = np.concatenate([[start], np.flatnonzero(~fits)]) if ok.size else np.flatnonzero(
            ~fits)
        ax.plot(x[tail], y[tail], ls="--", color=color, lw=1.2, alpha=0.8)
    for i in range(len(x)):
        ax.plot([x[i]], [y[i]], marker="o" if memory_bound[i] else "s", ms=7, ls="none",
                color=color, markerfacecolor=color if fits[i] else "white",
                markeredgecolor=color, markeredgewidth=1.5, zorder=5)


def _shape_legend(fig: Figure, *axes: Axes) -> None:
    from matplotlib.lines import Line2D

    handles, labels = axes_handles(*axes)
    proxies = [
        Line2D([], [], marker="o", ls="none", color="black", label="memory-bound"),
        Line2D([], [], marker="s", ls="none", color="black", label="compute-bound"),
        Line2D([], [], marker="o", ls="none", color="black", markerfacecolor="white",
               label="does not fit the SRAM"),
    ]
    legend_below(fig, handles + proxies, labels + [str(p.get_label()) for p in proxies])


# ---------------------------------------------------------------------------------------------
# 4. GPU comparison


def gpu_comparison(result: SweepResult, *, title_note: str | None = None) -> Figure:
    """Roofline time of each algorithm on each GPU (horizontal bars), labelled with the bound."""
    series, note = series_along(result, "gpu", max_series=1)
    pos = series[0].positions
    gpus = [result.hardware[int(g)] for g in result.index["gpu"][pos]]
    algos = list(result.algorithms)
    height = 1.6 + 0.22 * len(gpus) * len(algos)
    fig, ax = new_figure(9.5, max(4.0, height))
    bar = 0.8 / len(algos)
    times_all = []
    for j, a in enumerate(algos):
        y = np.arange(len(gpus)) + (j - (len(algos) - 1) / 2) * bar
        times = a.time_s[pos]
        times_all += times.tolist()
        ax.barh(y, times, height=bar * 0.92, color=color_of(a.name), label=a.name)
        in_hbm = hbm_fits(result, a.name, pos)
        for yi, t, mem, fits, held in zip(y, times, a.memory_bound[pos], a.fits_sram[pos],
                                          in_hbm, strict=True):
            text = f" {fmt_time(float(t))} · {'memory' if mem else 'compute'}-bound"
            if not fits:
                text += " · blocks do not fit"
            if not held:
                text += " · more HBM than the GPU has"
            ax.text(t, yi, text, va="center", ha="left", fontsize=7)
    ax.set_yticks(np.arange(len(gpus)), [g.display_name for g in gpus], fontsize=8)
    ax.invert_yaxis()
    spread = max(times_all) / min(times_all)
    if spread > 10:
        ax.set_xscale("log")
        ax.set_xlim(min(times_all) / 2, max(times_all) * 12)
    else:
        ax.set_xlim(0, max(times_all) * 1.6)
    ax.set_xlabel("estimated time (roofline, spec ceilings)" if result.spec.profile == "spec"
                  else "estimated time (roofline, measured ceilings)")
    _time_axis(ax.xaxis)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    legend_below(fig, *axes_handles(ax), max_columns=len(algos))
    lines = ["Time per GPU — " + fixed_text(result),
             "SRAM: each GPU's sram_per_block" if result.spec.sram_bytes == (None,)
             and result.spec.sram_elements == (None,) else sram_text(result, pos),
             "blocks: Alg. 1 line 1 for each GPU's SRAM" if result.spec.block_q == (None,)
             and result.spec.block_kv == (None,) else blocks_text(result, pos)]
    lines += [t for t in (note, title_note) if t]
    fitted_title(ax, lines)
    return fig


# ---------------------------------------------------------------------------------------------
# everything a sweep can show


def sweep_figure_stems(result: SweepResult) -> list[str]:
    """The file names (without extension) of the figures the sweep's varying axes allow: none
    for a sweep that varies nothing plottable (its --plot folder is then not made)."""
    varying = result.spec.varying
    axis = block_axis(result)
    tiled = [a.name for a in result.algorithms if a.tiled]
    heatmaps = axis is not None and is_two_dimensional(result)
    return ((["traffic_vs_n", "time_vs_n"] if "n" in varying else [])
            + ([f"blocks_{name}" for name in tiled] if heatmaps else [])
            + ([f"{axis.replace('_', '-')}_sweep"] if axis is not None and not heatmaps
               and tiled else [])
            + (["gpu_comparison"] if "gpu" in varying else []))


def sweep_figures(result: SweepResult, out_dir: Path, *, overwrite: bool = False) -> list[Path]:
    """The figures that the sweep's varying axes allow, written into out_dir (PNG and SVG)."""
    written: list[Path] = []
    varying = result.spec.varying
    axis = block_axis(result)
    tiled = [a.name for a in result.algorithms if a.tiled]
    heatmaps = axis is not None and is_two_dimensional(result)
    stems = sweep_figure_stems(result)
    # every figure checked before the first is written: a refusal writes none
    check_output_files([out_dir / f"{stem}.{fmt}" for stem in stems for fmt in ("png", "svg")],
                       "plot", overwrite=overwrite)
    if "n" in varying:
        written += save(traffic_vs_n(result), out_dir / "traffic_vs_n", overwrite=overwrite)
        written += save(time_vs_n(result), out_dir / "time_vs_n", overwrite=overwrite)
    if heatmaps:
        for name in tiled:
            written += save(block_heatmap(result, name), out_dir / f"blocks_{name}",
                            overwrite=overwrite)
    elif axis is not None and tiled:
        written += save(block_sweep(result, axis=axis), out_dir / f"{axis.replace('_', '-')}_sweep",
                        overwrite=overwrite)
    if "gpu" in varying:
        written += save(gpu_comparison(result), out_dir / "gpu_comparison", overwrite=overwrite)
    return written
