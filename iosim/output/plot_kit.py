"""What every figure shares: the canvas, the one legend rule, titles that fit, labels that do
not collide, and the check that a point fits the GPU's HBM.

The legend rule, written once (`legend_below`): a figure's legend sits outside its axes, below
them, in as many columns as fit the figure's width — never over the data. Labels of points are
short numbers placed by `place_labels`, which tries offsets around each point until the
label's box (measured with the renderer, `get_window_extent`) touches no other label, no line
drawn on the axes (the roofs) and no marker; the numbers' meaning goes into the legend (a key).
Placement needs final axes positions, so `freeze_layout` runs the constrained layout once and
then switches it off.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iosim.errors import IosimError
from iosim.inputs.output_paths import check_output_files
from iosim.output.files import write_atomically

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox


LABEL_GAP_PX = 2.0
"""Clearance kept between a label's box and anything else."""
_OFFSETS_PT = tuple((r * math.cos(a), r * math.sin(a))
                    for r in (14, 22, 32, 46, 64, 88)
                    for a in np.radians((45, 135, -45, -135, 0, 180, 90, -90, 22, 158, -22,
                                         -158)))
"""Candidate label positions around a point, nearest first (offset points)."""


ALGORITHM_COLORS = {"standard": "#d62728", "flash1": "#1f77b4", "flash2": "#2ca02c"}
_EXTRA_COLORS = ("#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
_SERIES_STYLES = ("-", "--", ":", "-.")
GUIDE_COLOR = "#555555"


def color_of(algorithm: str) -> str:
    """An algorithm's colour, the same in every figure (a stable pick for names without one)."""
    if algorithm in ALGORITHM_COLORS:
        return ALGORITHM_COLORS[algorithm]
    return _EXTRA_COLORS[sum(map(ord, algorithm)) % len(_EXTRA_COLORS)]


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
    for fmt, path in zip(formats, targets, strict=True):
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}

        def draw(temporary: Path, fmt: str = fmt, metadata: Any = metadata) -> None:
            # text as paths: the SVG looks the same without matplotlib's fonts installed
            with matplotlib.rc_context({"svg.hashsalt": "iosim", "svg.fonttype": "path"}):
                fig.savefig(temporary, format=fmt, dpi=150, metadata=metadata)

        try:  # whole or not at all (output/files.py): a full disk leaves no half figure
            write_atomically(path, draw)
        except IosimError:
            for written in paths:  # nor one format of a figure without the other
                written.unlink(missing_ok=True)
            raise
        paths.append(path)
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
# layout


def renderer_of(fig: Figure | Any) -> Any:
    """The figure's Agg renderer (for measuring text extents in display pixels)."""
    return fig.canvas.get_renderer()  # type: ignore[union-attr]


def freeze_layout(fig: Figure) -> None:
    """Settle the constrained layout (axes positions, legend, titles) and keep it: anything
    placed afterwards in display coordinates stays where it was put."""
    fig.canvas.draw()
    fig.set_layout_engine("none")


def legend_below(fig: Figure, handles: Sequence[Any], labels: Sequence[str], *,
                 max_columns: int = 2, fontsize: float = 8, grow: bool = True) -> Any:
    """The one legend placement: outside the axes, centred below them. `grow`: the figure
    grows by the legend's height, so a long key never squeezes the axes."""
    if not handles:
        return None
    longest = max(len(text) for text in labels)
    width_chars = fig.get_figwidth() * 72 / (fontsize * 0.55)
    columns = max(1, min(max_columns, int(width_chars // (longest + 6)), len(handles)))
    if grow:
        rows = math.ceil(len(handles) / columns)
        grow_figure(fig, 0.2 + rows * fontsize * 1.45 / 72)
    return fig.legend(handles, labels, loc="outside lower center", ncols=columns,
                      fontsize=fontsize, frameon=False)


def grow_figure(fig: Figure, inches: float, dpi: int = 150) -> None:
    """Make the figure taller by about `inches`, to a whole number of pixels at `dpi` (a
    truncated float would make the PNG a pixel shorter than its stated size)."""
    pixels = round((fig.get_figheight() + inches) * dpi)
    height = pixels / dpi
    while int(height * dpi) < pixels:
        height = math.nextafter(height, math.inf)
    fig.set_figheight(height)


def axes_handles(*axes: Axes) -> tuple[list[Any], list[str]]:
    """Every labelled artist of the axes, each label once."""
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    return handles, labels


def fitted_title(ax: Axes, lines: Sequence[str], *, fontsize: float = 10) -> Any:
    """The title, each line wrapped (at '; ' first, then at spaces) until the title, measured
    by the renderer, is narrower than the figure: nothing cut off."""
    fig = ax.get_figure(root=True)
    assert fig is not None
    renderer = renderer_of(fig)
    width_chars = int(fig.get_figwidth() * 72 / (fontsize * 0.5))
    while True:
        title = ax.set_title("\n".join(wrap_line(line, width_chars) for line in lines),
                             fontsize=fontsize)
        # centred on the axes, which the layout may shift: keep a margin
        if title.get_window_extent(renderer).width <= 0.84 * fig.bbox.width or width_chars < 30:
            return title
        width_chars -= 4


def wrap_line(line: str, width: int) -> str:
    """A title line in pieces of at most `width` characters, broken after '; ' where it can."""
    if len(line) <= width:
        return line
    out: list[str] = []
    current = ""
    for part in line.split("; "):
        candidate = f"{current}; {part}" if current else part
        if current and len(candidate) > width:
            out.append(current + ";")
            current = part
        else:
            current = candidate
    out += textwrap.wrap(current, width) or [""]
    return "\n".join(out)


def footnote(ax: Axes, text: str) -> Any:
    """Small grey text under the axes' x label, inside the layout (the legend goes below it)."""
    text = "\n".join(textwrap.fill(line, 150) for line in text.split("\n"))
    fig = ax.get_figure(root=True)
    assert fig is not None
    grow_figure(fig, (text.count("\n") + 1) * 7 * 1.3 / 72)
    note = ax.annotate(text, xy=(0, 0), xycoords=("axes fraction", ax.xaxis.label),
                       xytext=(0, -4), textcoords="offset points", ha="left", va="top",
                       fontsize=7, color="#555555", annotation_clip=False, gid="footnote")
    note.set_in_layout(True)
    return note


# ---------------------------------------------------------------------------------------------
# labels that do not collide


def display_polyline(line: Any, step_px: float = 2.0) -> np.ndarray:
    """A drawn line as display points no more than step_px apart (for overlap tests)."""
    path = line.get_transform().transform(line.get_xydata())
    path = path[np.all(np.isfinite(path), axis=1)]
    if len(path) < 2:
        return np.asarray(path)
    out = [path[:1]]
    for a, b in itertools.pairwise(path):
        steps = max(1, int(np.hypot(*(b - a)) / step_px))
        t = np.linspace(0.0, 1.0, steps + 1)[1:, None]
        out.append(a + (b - a) * t)
    return np.concatenate(out)


def bbox_hits_points(box: Bbox, pts: np.ndarray, pad: float = LABEL_GAP_PX) -> bool:
    """Whether any of the display points `pts` (pixels) lies inside `box` grown by `pad` pixels."""
    if len(pts) == 0:
        return False
    x, y = pts[:, 0], pts[:, 1]
    return bool(np.any((x >= box.x0 - pad) & (x <= box.x1 + pad)
                       & (y >= box.y0 - pad) & (y <= box.y1 + pad)))


def boxes_overlap(a: Bbox, b: Bbox, pad: float = 0.0) -> bool:
    """Whether two display boxes overlap, or come closer than `pad` pixels."""
    return not (a.x1 + pad <= b.x0 or b.x1 + pad <= a.x0
                or a.y1 + pad <= b.y0 or b.y1 + pad <= a.y0)


def place_labels(ax: Axes, anchors: Sequence[tuple[float, float]], texts: Sequence[str], *,
                 markers_px: Sequence[tuple[float, float, float]] = (),
                 avoid_lines: Sequence[Any] = (), avoid_boxes: Sequence[Bbox] = (),
                 fontsize: float = 8) -> list[Annotation]:
    """Annotate each anchor (data coordinates) with its text where the text's box overlaps no
    earlier label, no sampled point of `avoid_lines`, no marker disc (x, y, radius in px) and
    stays inside the axes; the first such offset of `_OFFSETS_PT` wins (else the least bad)."""
    fig = ax.get_figure(root=True)
    assert fig is not None
    renderer = renderer_of(fig)
    frame = ax.get_window_extent(renderer)
    line_pts = [display_polyline(line) for line in avoid_lines]
    placed: list[Bbox] = list(avoid_boxes)
    out = []
    style: dict[str, Any] = {"fontsize": fontsize, "fontweight": "bold", "ha": "center", "va": "center",
             "zorder": 8, "annotation_clip": False, "textcoords": "offset points"}
    for anchor, text in zip(anchors, texts, strict=True):
        # measured without its leader line (an Annotation's extent includes the arrow)
        probe = ax.annotate(text, anchor, xytext=(0, 0), **style)
        best: tuple[int, tuple[float, float]] | None = None
        for offset in _OFFSETS_PT:
            probe.xyann = offset
            box = probe.get_window_extent(renderer)
            bad = 10 * sum(boxes_overlap(box, other, LABEL_GAP_PX) for other in placed)
            bad += 3 * sum(bbox_hits_points(box, pts) for pts in line_pts)
            bad += 5 * sum(_hits_disc(box, x, y, r) for x, y, r in markers_px)
            if not (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0
                    and box.y1 <= frame.y1):
                bad += 100
            if best is None or bad < best[0]:
                best = (bad, offset)
            if bad == 0:
                break
        assert best is not None
        probe.xyann = best[1]
        placed.append(probe.get_window_extent(renderer))
        probe.remove()
        ann = ax.annotate(text, anchor, xytext=best[1], **style,
                          arrowprops={"arrowstyle": "-", "color": "#666666", "lw": 0.6,
                                      "shrinkA": 1, "shrinkB": 4})
        ann.set_in_layout(False)
        out.append(ann)
    return out


def number_points(ax: Axes, anchors: Sequence[tuple[float, float]], texts: Sequence[str],
                  lines: Sequence[Any], boxes: Sequence[Bbox] = ()) -> None:
    """place_labels clear of every single-point marker drawn on ax."""
    fig = ax.get_figure(root=True)
    assert fig is not None
    markers: list[Any] = [m for m in ax.get_lines() if np.size(m.get_xdata()) == 1]
    discs = [(*m.get_transform().transform((m.get_xdata()[0], m.get_ydata()[0])),
              marker_radius_px(fig, m.get_markersize())) for m in markers]
    place_labels(ax, anchors, texts, markers_px=discs, avoid_lines=lines, avoid_boxes=boxes)


def number_with_zoom(ax: Axes, zoom: Any, numbered: Sequence[tuple[tuple[float, float], str]],
                     zoomed: set[int], lines: Sequence[Any]) -> None:
    """Number the points: those of `zoomed` (indices into `numbered`) in the zoom's inset, the
    others on ax clear of the inset."""
    outside = [i for i in range(len(numbered)) if i not in zoomed]
    boxes = []
    if zoom is not None:
        inset_lines = [line for line in zoom.inset.get_lines() if len(line.get_xdata()) > 1]
        inside = sorted(zoomed)
        number_points(zoom.inset, [numbered[i][0] for i in inside],
                      [numbered[i][1] for i in inside], inset_lines)
        boxes = [zoom.inset.get_window_extent(renderer_of(ax.get_figure(root=True)))]
    number_points(ax, [numbered[i][0] for i in outside], [numbered[i][1] for i in outside],
                  lines, boxes)


def _hits_disc(box: Bbox, x: float, y: float, r: float) -> bool:
    nearest_x = min(max(x, box.x0), box.x1)
    nearest_y = min(max(y, box.y0), box.y1)
    return bool(math.hypot(x - nearest_x, y - nearest_y) < r + LABEL_GAP_PX)


def marker_radius_px(fig: Figure, size_pt: float) -> float:
    """A marker's radius in display pixels, from its size in points."""
    return size_pt / 2 * fig.dpi / 72


def nest_markers(fig: Figure, markers: Sequence[Any], base: float, *,
                 smallest: float = 3.0) -> None:
    """Single-point markers closer than a marker's width nest: each later one smaller and
    drawn above, so none hides another (call after freeze_layout)."""
    centres = [tuple(m.get_transform().transform((m.get_xdata()[0], m.get_ydata()[0])))
               for m in markers]
    sizes = nested_sizes(centres, base, near_px=marker_radius_px(fig, base) * 1.6,
                         smallest=smallest)
    for order, (marker, size) in enumerate(zip(markers, sizes, strict=True)):
        marker.set_markersize(size)
        marker.set_zorder(6 + order * 0.001 + (base - size) * 0.1)


def nested_sizes(centres_px: Sequence[tuple[float, float]], base: float, *,
                 near_px: float, smallest: float = 3.0) -> list[float]:
    """Marker sizes (points) so that markers drawn within `near_px` of an earlier one nest:
    a cluster's first at `base`, each later one smaller by an even step down to `smallest`."""
    cluster: list[int] = []
    for i, (x, y) in enumerate(centres_px):
        near = [cluster[j] for j in range(i)
                if math.hypot(x - centres_px[j][0], y - centres_px[j][1]) < near_px]
        cluster.append(min(near) if near else i)
    sizes = []
    for i, c in enumerate(cluster):
        members = [j for j, cj in enumerate(cluster) if cj == c]
        rank = members.index(i)
        step = (base - smallest) / (len(members) - 1) if len(members) > 1 else 0.0
        sizes.append(base - rank * step)
    return sizes
