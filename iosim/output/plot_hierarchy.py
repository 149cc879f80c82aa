"""The hierarchical roofline: DRAM, L2 and SRAM ceilings, each kernel once per level.

As Nsight Compute's and Intel Advisor's hierarchical rooflines: every kernel sits at one
performance (its FLOPs over its time) and at one intensity per memory level — FLOPs over its
DRAM bytes (the L2-aware estimate, l2.py), over its L2↔SM bytes (the L2-oblivious count of
Theorem 2) and over its SRAM bytes (estimates/sram.py) — the dots joined by a line. Ceilings:
the DRAM bandwidth of the profile (measured where the YAML has it), the YAML's L2 and SRAM
bandwidths, the profile's matmul peak. Measured kernels from a calibration record
(calibrate/points.py) or an `iosim measure` record (calibrate/measure_record.py) are drawn
hollow beside the predicted ones, at the same FLOPs over the measured time, DRAM bytes and
L2 bytes; a kernel timed without counters sits at its predicted bytes (only its time is
measured). A predicted dot above its level's ceiling would mean
a time shorter than that level's bytes allow: the tests refuse it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from iosim.analysis.comparison import AlgorithmEstimate, Comparison
from iosim.estimates.sram import resident_rereads
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
from iosim.output.render import fmt_binary_bytes, fmt_rate

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from iosim.calibrate.points import MeasuredKernel
    from iosim.estimates.roofline import KernelEstimate

LEVELS = ("DRAM", "L2", "SRAM")
LEVEL_MARKERS = {"DRAM": "o", "L2": "s", "SRAM": "^"}
LEVEL_STYLES = {"DRAM": ("black", "-", 2.0), "L2": ("#8c564b", "-.", 1.4),
                "SRAM": ("#9467bd", ":", 1.6)}


def level_bytes(a: AlgorithmEstimate, k: KernelEstimate, workload: Any) -> dict[str, float]:
    """A kernel's bytes at each level iosim models (DRAM only where the YAML allows it)."""
    out: dict[str, float] = {}
    if a.dram is not None:
        out["DRAM"] = a.dram.of_kernel(k.name).bytes
    out["L2"] = k.hbm_bytes
    out["SRAM"] = k.hbm_bytes + resident_rereads(k.name, a.algorithm or a.name, workload,
                                                 a.tiling)
    return out


def ceilings(c: Comparison) -> dict[str, tuple[float, str]]:
    """Bandwidth per level and where it comes from."""
    hw, roofs = c.hardware, c.roofs
    out = {"DRAM": (roofs.hbm_bandwidth_bytes_per_s,
                    "measured" if roofs.profile == "measured" else "spec")}
    for level, rate in (("L2", hw.l2_bandwidth_bytes_per_s),
                        ("SRAM", hw.sram_bandwidth_bytes_per_s)):
        if rate:
            figure = hw.figures.get(f"{level.lower()}_bandwidth")
            out[level] = (rate, "est." if figure is not None and figure.estimate else "spec")
    return out


def hierarchical_roofline(comparison: Comparison, measured: Sequence[MeasuredKernel] = (), *,
                          title_note: str | None = None) -> Figure:
    """The hierarchical roofline of one comparison: each kernel's DRAM, L2↔SM and SRAM bytes on
    the HBM, L2 and SRAM roofs (FLOP/B against FLOP/s), with `measured` kernels as hollow dots."""
    from matplotlib.lines import Line2D

    c = comparison
    hw, roofs, w = c.hardware, c.roofs, c.workload
    peak = roofs.matmul_flops_per_s
    roofs_at = ceilings(c)
    fig, ax = new_figure(9.0, 5.8)  # and the legend's height (legend_below)

    kernels = [(a, k) for a in c.algorithms for k in a.kernels if k.flops > 0]
    predicted = [(a.name, k.label, k.flops / k.time_s, level_bytes(a, k, w), k)
                 for a, k in kernels]
    by_kernel = {(a.name, k.name): k for a, k in kernels}
    tiles = {a.name: a.tiling for a in c.algorithms}
    by_algorithm = {a.name: a for a in c.algorithms}
    observed: list[tuple[str, str, float, dict[str, float], Any]] = []
    for m in measured:
        k = by_kernel.get((m.algorithm, m.kernel))
        tiling = tiles.get(m.algorithm)
        if k is None or (tiling is not None and m.block_m and (
                m.block_m, m.block_n) != (tiling.block_q, tiling.block_kv)):
            continue  # not this comparison's kernel, or other blocks than the prediction's
        if m.dram_bytes is None or m.l2_bytes is None:
            # timed without counters: at the predicted bytes, so that only its time moves it
            at = level_bytes(by_algorithm[m.algorithm], k, w)
            observed.append((m.algorithm, f"measured (time only) {m.label}",
                             k.flops / m.time_s, {lv: at[lv] for lv in ("DRAM", "L2") if lv in at},
                             k))
            continue
        counted: dict[str, float] = {"DRAM": m.dram_bytes, "L2": m.l2_bytes}
        observed.append((m.algorithm, f"measured {m.label}", k.flops / m.time_s, counted, k))

    xs = [k.flops / b for *_, bytes_, k in predicted + observed for b in bytes_.values()]
    ridges = [peak / bw for bw, _ in roofs_at.values()]
    x_lo = 10 ** math.floor(math.log10(min(xs + ridges) / 3))
    x_hi = 10 ** math.ceil(math.log10(max(xs + ridges) * 3))
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 400)
    roof_lines = []
    for level, (bw, where) in roofs_at.items():
        color, style, width = LEVEL_STYLES[level]
        (line,) = ax.plot(grid, np.minimum(grid * bw, peak), color=color, ls=style, lw=width,
                          gid=f"roof:{level}",
                          label=f"{level} {fmt_rate(bw, 'B/s')} ({where})")
        roof_lines.append(line)
    roof_lines.append(ax.axhline(peak, color=GUIDE_COLOR, lw=0.8, ls=(0, (2, 2)),
                                 label=f"{w.dtype} matmul peak {fmt_rate(peak, 'FLOP/s')} "
                                       f"({roofs.profile})"))

    # kernels that coincide (standard's QKᵀ and PV) share one line and one number
    groups: dict[tuple[Any, ...], list[tuple[str, str, float, dict[str, float], Any]]] = {}
    for p in predicted + observed:
        key = (p[1].startswith("measured"), round(math.log10(p[2]), 3),
               *(round(math.log10(p[4].flops / b), 3) for b in p[3].values()))
        groups.setdefault(key, []).append(p)
    anchors, texts, discs, key_labels, anchor_dot = [], [], [], [], []
    for number, group in enumerate(groups.values(), start=1):
        name, label, y, bytes_, k = group[0]
        hollow = label.startswith("measured")
        points = [(k.flops / bytes_[level], level) for level in LEVELS if level in bytes_]
        ax.plot([p[0] for p in points], [y] * len(points), color=color_of(name), lw=1.0,
                ls="--" if hollow else "-", alpha=0.8, zorder=4)
        for x, level in points:
            (dot,) = ax.plot([x], [y], marker=LEVEL_MARKERS[level], ms=8, ls="none",
                             color=color_of(name), markeredgecolor="black" if not hollow
                             else color_of(name), markeredgewidth=0.8 if not hollow else 1.6,
                             markerfacecolor="white" if hollow else color_of(name), zorder=6,
                             gid=f"{'measured' if hollow else 'predicted'}:{level}")
            discs.append(dot)
        anchor_dot.append(len(discs) - len(points))  # its first (DRAM) dot
        anchors.append((points[0][0], y))  # the DRAM dot: rightmost, least crowded
        texts.append(str(number))
        by_algo: dict[str, list[str]] = {}
        for g in group:
            by_algo.setdefault(g[0], []).append(g[1])
        key_labels.append(f"{number}  " + "; ".join(
            f"{algo}: {', '.join(dict.fromkeys(kernels))}" for algo, kernels in by_algo.items()))

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ys = [p[2] for p in predicted + observed]
    ax.set_ylim(10 ** math.floor(math.log10(min(ys) / 2)), peak * 4)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved at each level)")
    ax.set_ylabel("performance (FLOP/s)")
    _label_ticks(ax.yaxis, lambda v: tick_text(v, _RATE_PREFIXES))
    ax.xaxis.set_major_formatter(_si_formatter("", lambda v: f"{v:g}"))
    ax.grid(True, which="major", alpha=0.3)

    handles, labels = plot_kit.axes_handles(ax)
    drawn_levels = {level for _, _, _, bytes_, _ in predicted for level in bytes_}
    for level in (lv for lv in LEVELS if lv in drawn_levels):
        handles.append(Line2D([], [], marker=LEVEL_MARKERS[level], ls="none", color="#777777",
                              markeredgecolor="black", ms=7))
        labels.append({"DRAM": "DRAM bytes (L2-aware estimate)",
                       "L2": "L2↔SM bytes (L2-oblivious count)",
                       "SRAM": "SRAM bytes (resident tiles re-read per pair)"}[level])
    if any(not p[1].startswith("measured (time only)") for p in observed):
        handles.append(Line2D([], [], marker="o", ls="--", color="#777777",
                              markerfacecolor="white", ms=7))
        labels.append("hollow, dashed: measured (ncu's bytes, the measured time)")
    if any(p[1].startswith("measured (time only)") for p in observed):
        handles.append(Line2D([], [], marker="o", ls="--", color="#777777",
                              markerfacecolor="white", ms=7))
        labels.append("hollow, dashed, 'time only': measured time, no counters: at the "
                      "predicted bytes")
    for name in dict.fromkeys(a.name for a in c.algorithms):
        handles.append(Line2D([], [], color=color_of(name), lw=3))
        labels.append(name)
    handles += [Line2D([], [], ls="none") for _ in key_labels]
    labels += key_labels
    plot_kit.legend_below(fig, handles, labels)
    blocks = "; ".join(f"{a.name} B_r×B_c {a.tiling.block_q}×{a.tiling.block_kv}"
                       for a in c.algorithms if a.tiling is not None)
    lines = [f"Hierarchical roofline — {hw.display_name} ({roofs.profile} profile)",
             w.describe(),
             f"SRAM M = {c.sram_bytes // w.element_bytes:,} {w.dtype} elements "
             f"({fmt_binary_bytes(c.sram_bytes)})" + (f"; {blocks}" if blocks else "")]
    lines += [title_note] if title_note else []
    plot_kit.fitted_title(ax, lines)
    missing = [level for level in LEVELS if level not in roofs_at]
    note = ("Each kernel: one performance (its FLOPs / its time), one dot per memory level "
            "(its FLOPs / the bytes it moves there); a dot sits on or under its level's "
            "ceiling.")
    if missing:
        note += f" No {' or '.join(missing)} bandwidth in {hw.name}'s YAML: no ceiling drawn."
    if "DRAM" not in drawn_levels:
        note += (f" No DRAM estimate ({hw.name}'s YAML lacks l2_size or sm_count): no DRAM "
                 f"dots; the HBM roof times the L2↔SM count.")
    plot_kit.footnote(ax, note)

    plot_kit.freeze_layout(fig)
    plot_kit.nest_markers(fig, discs, 11.0, smallest=5.0)
    lines = roof_lines + [line for line in ax.get_lines()
                          if len(line.get_xdata()) > 1 and line not in roof_lines]
    zoom = zoom_cluster(ax, discs, lines, base_size=9.0)
    members = set(zoom.members) if zoom else set()
    zoomed = {i for i, dot in enumerate(anchor_dot) if dot in members}
    plot_kit.number_with_zoom(ax, zoom, list(zip(anchors, texts, strict=True)), zoomed, lines)
    return fig
