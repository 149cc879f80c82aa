"""Figures: roofline, HBM traffic vs sequence length, block-size sweep, GPU comparison.

matplotlib is imported inside the functions (`iosim --help` and `iosim compare` never load it),
and figures are drawn on an Agg canvas attached to a bare `matplotlib.figure.Figure`: no pyplot,
no global backend switch. Every function returns the Figure; `save` writes it as PNG and SVG.
Each figure's title names the GPU, the workload and the SRAM/block sizes; axes carry units; a
quantity spanning decades is drawn on a log scale.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iosim.analysis.comparison import Comparison
from iosim.analysis.sweep import AlgorithmGrid, SweepResult
from iosim.errors import IosimError
from iosim.inputs.limits import check_output_files
from iosim.output.render import fmt_binary_bytes, fmt_bytes, fmt_rate, fmt_time

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ALGORITHM_COLORS = {"standard": "#d62728", "flash1": "#1f77b4", "flash2": "#2ca02c"}
_EXTRA_COLORS = ("#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
_SERIES_STYLES = ("-", "--", ":", "-.")
_KERNEL_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
GUIDE_COLOR = "#555555"


def color_of(algorithm: str) -> str:
    if algorithm in ALGORITHM_COLORS:
        return ALGORITHM_COLORS[algorithm]
    return _EXTRA_COLORS[sum(map(ord, algorithm)) % len(_EXTRA_COLORS)]


# ---------------------------------------------------------------------------------------------
# figure plumbing


def new_figure(width: float, height: float, rows: int = 1, cols: int = 1, *,
               sharex: bool = False, squeeze: bool = True) -> tuple[Figure, Any]:
    """A Figure (width × height inches) on an Agg canvas — no pyplot, no global state — and its
    axes: one, a row or column of them, or (squeeze=False) always a 2-D array."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, sharex=sharex, squeeze=squeeze)
    return fig, axes


def save(fig: Figure, stem: Path | str, formats: Sequence[str] = ("png", "svg"), *,
         overwrite: bool = False) -> list[Path]:
    """Write `stem.png` and `stem.svg` with no timestamps (the PNG of a figure is the same bytes
    every time; SVG clip-path ids still vary, matplotlib derives them from object ids).

    An existing file is never replaced unless `overwrite` (the commands' --force)."""
    import matplotlib

    targets = [Path(f"{stem}.{fmt}") for fmt in formats]
    check_output_files(targets, "name", overwrite=overwrite)  # before the first file
    paths: list[Path] = []
    try:
        for fmt, path in zip(formats, targets, strict=True):
            metadata = {"Date": None} if fmt == "svg" else {"Software": None}
            # text as paths: the SVG looks the same without matplotlib's fonts installed
            with matplotlib.rc_context({"svg.hashsalt": "iosim", "svg.fonttype": "path"}):
                fig.savefig(path, format=fmt, dpi=150, metadata=metadata)
            paths.append(path)
    except OSError as exc:  # a full disk, a folder removed meanwhile: no half-written figure
        for path in [*paths, targets[len(paths)]]:
            path.unlink(missing_ok=True)
        raise IosimError(f"cannot write {targets[len(paths)]}: {exc.strerror or exc}; choose a "
                         f"folder you can write to") from None
    return paths


def _si_formatter(unit: str, fmt: Any) -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _pos: fmt(value) if value > 0 else "0")


_BYTE_PREFIXES = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0))
_TIME_PREFIXES = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_RATE_PREFIXES = (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6),
                  ("FLOP/s", 1.0))


def tick_text(value: float, prefixes: Sequence[tuple[str, float]]) -> str:
    """A tick label in the largest unit that keeps the number ≥ 1: 2e9 B → '2 GB'."""
    for unit, scale in prefixes:
        if value >= scale * 0.999:
            return f"{value / scale:.3g} {unit}"
    unit, scale = prefixes[-1]
    return f"{value / scale:.3g} {unit}"


def _bytes_axis(axis: Any) -> None:
    _label_ticks(axis, lambda v: tick_text(v, _BYTE_PREFIXES))


def _time_axis(axis: Any) -> None:
    _label_ticks(axis, lambda v: tick_text(v, _TIME_PREFIXES))


def _label_ticks(axis: Any, fmt: Any) -> None:
    """Major ticks in human units; on a log axis spanning less than ~2 decades, minor ticks too
    (else matplotlib writes them as 6×10⁻³)."""
    from matplotlib.ticker import LogLocator, NullFormatter

    axis.set_major_formatter(_si_formatter("", fmt))
    low, high = sorted(axis.get_view_interval())
    if axis.get_scale() == "log" and low > 0 and high / low < 100:
        axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        axis.set_minor_formatter(_si_formatter("", fmt))
    else:
        axis.set_minor_formatter(NullFormatter())


def _log_block_axis(ax: Axes, values: Sequence[int]) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(values))))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(_si_formatter("", lambda v: f"{v:.0f}"))


# ---------------------------------------------------------------------------------------------
# selections of a sweep


@dataclass(frozen=True)
class Series:
    """Grid points along one axis, the other varying axes held at one combination."""

    label: str
    """'' for the only series, else e.g. 'd 128, GPU h100-sxm'."""
    positions: np.ndarray
    """Point indices, sorted by the x axis."""


_AXIS_LABELS = {"gpu": "GPU", "dtype": "", "pass_": "", "causal": "causal", "batch": "batch",
                "heads": "heads", "kv_heads": "kv heads", "d": "d", "n": "N", "n_kv": "N_kv",
                "sram_bytes": "SRAM", "sram_elements": "M", "block_q": "B_r",
                "block_kv": "B_c"}


def _value_text(result: SweepResult, axis: str, i: int) -> str:
    value = result.spec.values(axis)[i]
    if axis == "gpu":
        return f"GPU {result.hardware[i].name}"
    if axis == "causal":
        return "causal" if value else "non-causal"
    if value is None:
        return f"{_AXIS_LABELS[axis]} auto"
    if axis == "sram_bytes":
        return f"SRAM {fmt_binary_bytes(value)}"
    label = _AXIS_LABELS[axis]
    return f"{label} {value}" if label else str(value)


def series_along(result: SweepResult, x_axis: str, *, max_series: int = 4
                 ) -> tuple[list[Series], str | None]:
    """One series per combination of the other varying axes (at most `max_series`; past that
    the others are held at their first value, and the note says so)."""
    others = [a for a in result.spec.varying if a != x_axis]
    sizes = [len(result.spec.values(a)) for a in others]
    combos = list(itertools.product(*(range(s) for s in sizes)))
    note = None
    if len(combos) > max_series:
        combos = [tuple(0 for _ in others)]
        note = ("other varying axes held at their first value: "
                + ", ".join(_value_text(result, a, 0) for a in others))
    x_values = result.axis_values(x_axis) if x_axis != "gpu" else result.index["gpu"]
    out = []
    for combo in combos:
        mask = np.ones(result.points, dtype=bool)
        for axis, i in zip(others, combo, strict=True):
            mask &= result.index[axis] == i
        positions = np.flatnonzero(mask)
        order = np.argsort(_sortable(x_values[positions]), kind="stable")
        label = ", ".join(_value_text(result, a, i) for a, i in zip(others, combo, strict=True))
        out.append(Series(label, positions[order]))
    return out, note


def _sortable(values: np.ndarray) -> np.ndarray:
    if values.dtype == object:
        return np.asarray([0 if v is None else v for v in values])
    return values


def _fixed_text(result: SweepResult, skip: Sequence[str] = ()) -> str:
    """The workload part of a title: the axes that do not vary (GPU and SRAM left out)."""
    words = [w for w in result.describe_fixed()
             if not w.startswith(("GPU ", "SRAM", "M ", "B_r", "B_c"))
             and w not in ("kv heads = heads", "N_kv = N")]
    for s in skip:
        words = [w for w in words if not w.startswith(s)]
    return ", ".join(words)


def _sram_text(result: SweepResult, positions: np.ndarray) -> str:
    values = sorted(set(result.sram_bytes[positions].tolist()))
    if len(values) == 1:
        return f"SRAM {fmt_binary_bytes(values[0])} per block"
    return "SRAM " + ", ".join(fmt_binary_bytes(v) for v in values)


def _blocks_text(result: SweepResult, positions: np.ndarray) -> str:
    parts = []
    for a in result.algorithms:
        if not a.tiled:
            continue
        pairs = sorted(set(zip(a.block_q[positions].tolist(), a.block_kv[positions].tolist(),
                               strict=True)))
        if len(pairs) == 1:
            parts.append(f"{a.name} B_r×B_c {pairs[0][0]}×{pairs[0][1]}")
    return "; ".join(parts)


def _gpu_text(result: SweepResult, positions: np.ndarray) -> str:
    gpus = sorted(set(result.index["gpu"][positions].tolist()))
    return ", ".join(result.hardware[g].display_name for g in gpus)


# ---------------------------------------------------------------------------------------------
# 1. roofline


def roofline(comparison: Comparison, *, title_note: str | None = None) -> Figure:
    """Every kernel of every algorithm on the GPU's roofline.

    Ceilings: HBM bandwidth × intensity up to the dtype's matmul peak, the fp32 vector peak
    (where elementwise FLOPs run), and the L2 and SRAM bandwidth roofs where the YAML has them
    (drawn against the same FLOP per HBM byte axis: the roof a kernel would reach if its bytes
    came at that level's speed). A kernel's point: x = FLOPs / HBM bytes, y = FLOPs / its
    roofline time. Zero-FLOP kernels (initialisations) cannot sit on a log axis: listed below.
    """
    c = comparison
    hw, roofs, w = c.hardware, c.roofs, c.workload
    bandwidth, peak = roofs.hbm_bandwidth_bytes_per_s, roofs.matmul_flops_per_s
    ridge = roofs.ridge_point_flops_per_byte
    fig, ax = new_figure(9.0, 6.2)

    points = []
    skipped = []
    for a in c.algorithms:
        for k in a.kernels:
            if k.flops > 0 and k.hbm_bytes > 0:
                points.append((a.name, k, k.intensity_flops_per_byte, k.flops / k.time_s))
            else:
                skipped.append(f"{a.name} {k.label} ({fmt_bytes(k.hbm_bytes)}, {k.flops} FLOPs)")
    xs = [p[2] for p in points] or [ridge]
    x_lo = 10 ** math.floor(math.log10(min(min(xs), ridge) / 3))
    x_hi = 10 ** math.ceil(math.log10(max(max(xs), ridge) * 3))
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 400)

    ax.plot(grid, np.minimum(grid * bandwidth, peak), color="black", lw=2,
            label=f"HBM {fmt_rate(bandwidth, 'B/s')} → {w.dtype} matmul peak "
                  f"{fmt_rate(peak, 'FLOP/s')}")
    ax.axhline(roofs.vector_flops_per_s, color=GUIDE_COLOR, lw=1.2, ls=(0, (6, 3)),
               label=f"fp32 vector peak {fmt_rate(roofs.vector_flops_per_s, 'FLOP/s')} "
                     f"(elementwise: softmax)")
    if hw.l2_bandwidth_bytes_per_s:
        ax.plot(grid, np.minimum(grid * hw.l2_bandwidth_bytes_per_s, peak), color="#8c564b",
                lw=1.2, ls="-.",
                label=f"L2 {fmt_rate(hw.l2_bandwidth_bytes_per_s, 'B/s')} (if the bytes came "
                      f"from L2)")
    if hw.sram_bandwidth_bytes_per_s:
        est = " est." if hw.figures.get("sram_bandwidth") and hw.figures[
            "sram_bandwidth"].estimate else ""
        ax.plot(grid, np.minimum(grid * hw.sram_bandwidth_bytes_per_s, peak), color="#9467bd",
                lw=1.2, ls=":",
                label=f"SRAM {fmt_rate(hw.sram_bandwidth_bytes_per_s, 'B/s')}{est} (if the "
                      f"bytes came from SRAM)")
    ax.axvline(ridge, color=GUIDE_COLOR, lw=0.8, ls=":")
    ax.plot([ridge], [peak], marker="*", ms=12, color="black", ls="none", zorder=5,
            label=f"ridge point {ridge:.0f} FLOP/B")

    # coincident kernels (standard's QKᵀ and PV move and compute the same) share one point
    groups: dict[tuple[float, float], list[tuple[str, Any, float, float]]] = {}
    for p in points:
        groups.setdefault((round(math.log10(p[2]), 3), round(math.log10(p[3]), 3)), []).append(p)
    names = list(dict.fromkeys(a.name for a in c.algorithms))
    labelled: set[str] = set()
    for i, group in enumerate(sorted(groups.values(), key=lambda g: g[0][2])):
        for name in dict.fromkeys(m[0] for m in group):
            x, y = group[0][2], group[0][3]
            ax.plot([x], [y], marker=_KERNEL_MARKERS[names.index(name) % len(_KERNEL_MARKERS)],
                    ms=9, ls="none", color=color_of(name), markeredgecolor="black",
                    markeredgewidth=0.6, zorder=6, label=None if name in labelled else name)
            labelled.add(name)
        above = i % 2 == 0
        # labels of points in the right third of the axis go to their left
        left = math.log(group[0][2] / x_lo) / math.log(x_hi / x_lo) > 0.66
        ax.annotate(_point_label(group), (group[0][2], group[0][3]),
                    xytext=(-10 if left else 10, 16 if above else -16), textcoords="offset points",
                    fontsize=8, va="bottom" if above else "top", ha="right" if left else "left",
                    zorder=7, arrowprops={"arrowstyle": "-", "color": "#777777", "lw": 0.6,
                                          "shrinkA": 0, "shrinkB": 5},
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none",
                          "alpha": 0.8})

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    y_lo = 10 ** math.floor(math.log10(min([p[3] for p in points] + [x_lo * bandwidth,
                                                                      roofs.vector_flops_per_s])))
    ax.set_ylim(y_lo, peak * 4)
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel("performance (FLOP/s)")
    _label_ticks(ax.yaxis, lambda v: tick_text(v, _RATE_PREFIXES))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    blocks = "; ".join(f"{a.name} B_r×B_c {a.tiling.block_q}×{a.tiling.block_kv}"
                       for a in c.algorithms if a.tiling is not None)
    lines = [f"Roofline — {hw.display_name} ({roofs.profile} profile)", w.describe(),
             f"SRAM M = {c.sram_bytes // w.element_bytes:,} {w.dtype} elements "
             f"({fmt_binary_bytes(c.sram_bytes)})" + (f"; {blocks}" if blocks else "")]
    if title_note:
        lines.append(title_note)
    ax.set_title("\n".join(lines), fontsize=10)
    ax.xaxis.set_major_formatter(_si_formatter("", lambda v: f"{v:g}"))
    footer = ["y = all FLOPs / roofline time: elementwise FLOPs run on the vector units beside "
              "the tensor cores, so a compute-bound kernel can sit a few % above the matmul peak."]
    if skipped:
        footer.append("Not on the plot (no FLOPs): " + "; ".join(skipped) + ".")
    fig.supxlabel("\n".join(footer), fontsize=7, color=GUIDE_COLOR, x=0.01, ha="left")
    return fig


def _point_label(group: Sequence[tuple[str, Any, float, float]]) -> str:
    by_algo: dict[str, list[str]] = {}
    for name, k, _, _ in group:
        by_algo.setdefault(name, []).append(k.label)
    return "\n".join(f"{name}: {', '.join(labels)}" for name, labels in by_algo.items())


# ---------------------------------------------------------------------------------------------
# 2. traffic vs sequence length


def traffic_vs_n(result: SweepResult, *, title_note: str | None = None) -> Figure:
    """HBM bytes of every algorithm against N, log-log, with slope guides.

    Guides (grey, from the first series): ∝ N² through standard attention's largest-N point
    (Theorem 2: Θ(Nd + N²)); Theorem 2's FlashAttention leading term N·N_kv·d²/M (in bytes, over
    every batch and head), whose slope the tiled algorithms follow once N spans several blocks;
    and the compulsory traffic (read Q, K, V and write O once), slope 1.
    """
    series, note = series_along(result, "n")
    fig, ax = new_figure(9.0, 6.2)
    n_all = result.axis_values("n")
    n_kv_all = result.axis_values("n_kv")
    for s_index, s in enumerate(series):
        style = _SERIES_STYLES[s_index % len(_SERIES_STYLES)]
        n = n_all[s.positions]
        for a in result.algorithms:
            y = a.hbm_bytes[s.positions]
            label = a.name + (f" ({s.label})" if s.label else "")
            if len(n) >= 2:
                slope = math.log(y[-1] / y[-2]) / math.log(n[-1] / n[-2])
                label += f" — slope {slope:.2f} at N = {n[-1]:,}"
            ax.plot(n, y, ls=style, marker="o", ms=4, color=color_of(a.name), label=label)

    first = series[0].positions
    n, n_kv = n_all[first].astype(float), n_kv_all[first].astype(float)
    d = result.axis_values("d")[first].astype(float)
    elt = np.array([{"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}[t]
                    for t in result.axis_values("dtype")[first]], dtype=float)
    instances = (result.axis_values("batch")[first] * result.axis_values("heads")[first]
                 ).astype(float)
    m = result.sram_bytes[first] / elt
    base = result.baseline.hbm_bytes[first].astype(float)
    ax.plot(n, base[-1] * (n * n_kv) / (n[-1] * n_kv[-1]), color=GUIDE_COLOR, ls=(0, (1, 2)),
            lw=1.5, label="∝ N² through standard's last point (Theorem 2: Θ(Nd + N²))")
    ax.plot(n, n * n_kv * d**2 / m * elt * instances, color=GUIDE_COLOR, ls=(0, (5, 3)), lw=1.2,
            label="N²d²/M bytes (Theorem 2's FlashAttention term, constant 1)")
    ax.plot(n, (2 * n + 2 * n_kv) * d * elt * instances, color=GUIDE_COLOR, ls="-.", lw=1.0,
            label="compulsory: read Q, K, V, write O once (∝ N)")

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length N (tokens)")
    ax.set_ylabel("HBM traffic (bytes)")
    _bytes_axis(ax.yaxis)
    ax.xaxis.set_major_formatter(_si_formatter("", lambda v: f"{v:,.0f}"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    lines = [f"HBM traffic vs sequence length — {_gpu_text(result, first)}",
             _fixed_text(result, skip=("N ", "N_kv")),
             f"{_sram_text(result, first)}; M = {int(m[0]):,} elements"
             + (f"; {_blocks_text(result, first)}" if _blocks_text(result, first) else "")]
    lines += [t for t in (note, title_note) if t]
    ax.set_title("\n".join(lines), fontsize=10)
    return fig


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
    fig, (top, bottom) = new_figure(9.0, 8.0, rows=2, sharex=True)
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
    _shape_legend(top)
    bottom.legend(loc="best", fontsize=8, framealpha=0.9)
    first = series[0].positions
    other = "block_q" if axis == "block_kv" else "block_kv"
    other_text = _other_block_text(result, tiled, first, other)
    lines = [f"Block-size sweep — {', '.join(a.name for a in tiled)} on "
             f"{_gpu_text(result, first)}",
             _fixed_text(result),
             f"{_sram_text(result, first)}; {other_text}"]
    lines += [t for t in (note, title_note) if t]
    top.set_title("\n".join(lines), fontsize=10)
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


def _shape_legend(ax: Axes) -> None:
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    proxies = [
        Line2D([], [], marker="o", ls="none", color="black", label="memory-bound"),
        Line2D([], [], marker="s", ls="none", color="black", label="compute-bound"),
        Line2D([], [], marker="o", ls="none", color="black", markerfacecolor="white",
               label="does not fit the SRAM"),
    ]
    ax.legend(handles=handles + proxies, labels=labels + [p.get_label() for p in proxies],
              loc="best", fontsize=8, framealpha=0.9)


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
        for yi, t, mem, fits in zip(y, times, a.memory_bound[pos], a.fits_sram[pos],
                                    strict=True):
            text = f" {fmt_time(float(t))} · {'memory' if mem else 'compute'}-bound"
            if not fits:
                text += " · blocks do not fit"
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
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    lines = ["Time per GPU — " + _fixed_text(result),
             "SRAM: each GPU's sram_per_block" if result.spec.sram_bytes == (None,)
             and result.spec.sram_elements == (None,) else _sram_text(result, pos),
             "blocks: Alg. 1 line 1 for each GPU's SRAM" if result.spec.block_q == (None,)
             and result.spec.block_kv == (None,) else _blocks_text(result, pos)]
    lines += [t for t in (note, title_note) if t]
    ax.set_title("\n".join(lines), fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------
# everything a sweep can show


def sweep_figures(result: SweepResult, out_dir: Path, *, overwrite: bool = False) -> list[Path]:
    """The figures that the sweep's varying axes allow, written into out_dir (PNG and SVG)."""
    written: list[Path] = []
    varying = result.spec.varying
    axis = block_axis(result)
    stems = ((["traffic_vs_n"] if "n" in varying else [])
             + ([f"{axis.replace('_', '-')}_sweep"] if axis is not None
                and any(a.tiled for a in result.algorithms) else [])
             + (["gpu_comparison"] if "gpu" in varying else []))
    # every figure checked before the first is written: a refusal writes none
    check_output_files([out_dir / f"{stem}.{fmt}" for stem in stems for fmt in ("png", "svg")],
                       "plot", overwrite=overwrite)
    if "n" in varying:
        written += save(traffic_vs_n(result), out_dir / "traffic_vs_n", overwrite=overwrite)
    if axis is not None and any(a.tiled for a in result.algorithms):
        written += save(block_sweep(result, axis=axis), out_dir / f"{axis.replace('_', '-')}_sweep",
                        overwrite=overwrite)
    if "gpu" in varying:
        written += save(gpu_comparison(result), out_dir / "gpu_comparison", overwrite=overwrite)
    return written
