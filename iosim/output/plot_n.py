"""Figures against the sequence length N: HBM traffic and roofline time.

One line per algorithm and series (a combination of the sweep's other varying axes). A point
whose algorithm needs more HBM than the GPU has (compare's footprint: inputs, outputs and what
the algorithm holds beside them) is drawn hollow, and the legend says from which N each
algorithm stops fitting. Block sizes go in the title when every series tiles alike, else into
each series' legend entry.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from iosim.analysis.hbm_fit import hbm_fits
from iosim.analysis.sweep import SweepResult
from iosim.inputs.units import DTYPE_BYTES, FP8_DTYPES, FP8_OUTPUT_DTYPE
from iosim.output import plot_kit
from iosim.output.plot_kit import (
    _SERIES_STYLES,
    GUIDE_COLOR,
    _bytes_axis,
    _si_formatter,
    _time_axis,
    color_of,
    new_figure,
)
from iosim.output.plot_select import blocks_text, fixed_text, gpu_text, series_along, sram_text
from iosim.output.render import fmt_bytes
from iosim.record import Record

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HBM_NOTE = "hollow markers: more HBM than the GPU has"


class _Drawn(Record):
    """An N figure with its lines drawn, and what its title and legend need to say."""

    fig: Figure
    ax: Any
    first: np.ndarray
    """The first series' points (the guides and the title describe them)."""
    note: str | None
    hollow: bool
    shared_blocks: str


def traffic_vs_n(result: SweepResult, *, title_note: str | None = None) -> Figure:
    """HBM bytes of every algorithm against N, log-log, with slope guides.

    Guides (grey, from the first series): ∝ N² through standard attention's largest-N point
    (Theorem 2: Θ(Nd + N²)); Theorem 2's FlashAttention leading term N·N_kv·d²/M (in bytes, over
    every batch and head), whose slope the tiled algorithms follow once N spans several blocks;
    and the compulsory traffic (read Q, K, V and write O once), slope 1.
    """
    drawn = _n_figure(result, "traffic")
    fig, ax, first = drawn.fig, drawn.ax, drawn.first
    n_all, n_kv_all = result.axis_values("n"), result.axis_values("n_kv")
    n, n_kv = n_all[first].astype(float), n_kv_all[first].astype(float)
    d = result.axis_values("d")[first].astype(float)
    d_v = result.axis_values("d_v")[first].astype(float)
    dtypes = result.axis_values("dtype")[first]
    elt = np.array([DTYPE_BYTES[t] for t in dtypes], dtype=float)
    out = np.array([DTYPE_BYTES[FP8_OUTPUT_DTYPE if t in FP8_DTYPES else t] for t in dtypes],
                   dtype=float)
    kv_width = d if result.spec.latent_kv else d + d_v  # a latent cache's V is inside K
    instances = (result.axis_values("batch")[first] * result.axis_values("heads")[first]
                 ).astype(float)
    m = result.sram_bytes[first] / elt
    base = result.baseline.hbm_bytes[first].astype(float)
    ax.plot(n, base[-1] * (n * n_kv) / (n[-1] * n_kv[-1]), color=GUIDE_COLOR, ls=(0, (1, 2)),
            lw=1.5, label="∝ N² through standard's last point (Theorem 2: Θ(Nd + N²))")
    ax.plot(n, n * n_kv * d**2 / m * elt * instances, color=GUIDE_COLOR, ls=(0, (5, 3)), lw=1.2,
            label="N²d²/M bytes (Theorem 2's FlashAttention term, constant 1)")
    compulsory = ((n * d + n_kv * kv_width) * elt + n * d_v * out) * instances
    ax.plot(n, compulsory, color=GUIDE_COLOR, ls="-.", lw=1.0,
            label="compulsory: read Q, K, V, write O once (∝ N)")
    ax.set_ylabel("HBM traffic (bytes)")
    ax.autoscale_view()
    _bytes_axis(ax.yaxis)
    _finish(drawn, result, "HBM traffic vs sequence length", title_note,
            extra=f"M = {int(m[0]):,} elements")
    return fig


def time_vs_n(result: SweepResult, *, title_note: str | None = None) -> Figure:
    """Roofline time of every algorithm against N, log-log; the grey dotted line under each
    tiled algorithm is its compute time (FLOPs at peak), the floor a long sequence reaches."""
    drawn = _n_figure(result, "time")
    fig, ax, first = drawn.fig, drawn.ax, drawn.first
    n = result.axis_values("n")[first]
    for a in result.algorithms:
        if a.tiled:
            ax.plot(n, a.compute_time_s[first], color=color_of(a.name), ls=(0, (1, 2)), lw=1.0,
                    label=f"{a.name} compute time (FLOPs at peak)")
    profile = "spec" if result.spec.profile == "spec" else "measured"
    ax.set_ylabel(f"estimated time (roofline, {profile} ceilings)")
    ax.autoscale_view()
    _time_axis(ax.yaxis)
    _finish(drawn, result, "Roofline time vs sequence length", title_note)
    return fig


def _n_figure(result: SweepResult, quantity: str) -> _Drawn:
    """The figure and its axes with one line per (series, algorithm)."""
    series, note = series_along(result, "n")
    fig, ax = new_figure(9.0, 5.6)  # and the legend's height (legend_below)
    ax.set_xscale("log", base=2)  # before the tick formatters: a new scale resets them
    ax.set_yscale("log")
    n_all = result.axis_values("n")
    blocks = {s.label: blocks_text(result, s.positions) for s in series}
    shared_blocks = len(set(blocks.values())) == 1
    hollow_any = False
    for s_index, s in enumerate(series):
        style = _SERIES_STYLES[s_index % len(_SERIES_STYLES)]
        n = n_all[s.positions]
        for a in result.algorithms:
            y = (a.hbm_bytes if quantity == "traffic" else a.time_s)[s.positions]
            fits = hbm_fits(result, a.name, s.positions, along_n=True)
            words = [w for w in (s.label, "" if shared_blocks else _own_blocks(blocks[s.label],
                                                                                  a.name)) if w]
            label = a.name + (f" ({'; '.join(words)})" if words else "")
            if len(n) >= 2:
                slope = math.log(y[-1] / y[-2]) / math.log(n[-1] / n[-2])
                label += f" — slope {slope:.2f} at N = {n[-1]:,}"
            if not fits.all():
                hollow_any = True
                capacity = result.hardware[int(result.index["gpu"][s.positions[0]])]
                label += (f"; > {fmt_bytes(capacity.hbm_capacity_bytes)} HBM from "
                          f"N = {int(n[np.argmin(fits)]):,}")
            color = color_of(a.name)
            ax.plot(n, y, ls=style, color=color, label=label)
            ax.plot(n[fits], y[fits], ls="none", marker="o", ms=4, color=color)
            if not fits.all():
                ax.plot(n[~fits], y[~fits], ls="none", marker="o", ms=6, color=color,
                        markerfacecolor="white", markeredgewidth=1.3, zorder=4)
    return _Drawn(fig, ax, series[0].positions, note, hollow_any,
                  blocks[series[0].label] if shared_blocks else "")


def _finish(drawn: _Drawn, result: SweepResult, what: str, title_note: str | None,
            extra: str = "") -> None:
    from matplotlib.lines import Line2D

    fig, ax = drawn.fig, drawn.ax
    ax.set_xlabel("sequence length N (tokens)")
    ax.xaxis.set_major_formatter(_si_formatter("", lambda v: f"{v:,.0f}"))
    ax.grid(True, which="major", alpha=0.3)
    handles, labels = plot_kit.axes_handles(ax)
    if drawn.hollow:
        handles.append(Line2D([], [], ls="none", marker="o", ms=6, color="black",
                              markerfacecolor="white"))
        labels.append(HBM_NOTE)
    plot_kit.legend_below(fig, handles, labels, max_columns=1 if max(map(len, labels)) > 70
                          else 2)
    every = np.arange(result.points)
    sram = sram_text(result, every)
    if len(set(result.sram_bytes.tolist())) > 1:
        sram = f"{sram} (each series its own; guides: the first series')"
    elif extra:
        sram += f"; {extra}"
    lines = [f"{what} — {gpu_text(result, every)}", fixed_text(result, skip=("N ", "N_kv")),
             sram + (f"; {drawn.shared_blocks}" if drawn.shared_blocks else "")]
    lines += [t for t in (drawn.note, title_note) if t]
    plot_kit.fitted_title(ax, lines)


def _own_blocks(text: str, name: str) -> str:
    """This algorithm's part of a blocks text ('flash1 B_r×B_c 64×326; flash2 ...')."""
    for part in text.split("; "):
        if part.startswith(name + " "):
            return part[len(name) + 1:]
    return ""
