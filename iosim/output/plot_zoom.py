"""A magnified inset for points that crowd one spot of a log-log plot.

Decoding puts standard attention's matmuls, split-KV's attention and both fused kernels within a
few per cent of 1 FLOP/B: nested markers keep each visible, but only a magnifier lets a reader
tell them apart. `zoom_cluster` finds the largest group of points closer than a few marker widths
(at least `min_points` of them), draws it again in an inset placed in the emptiest corner of the
axes (no roof, marker or point through it), and numbers its points there instead of in the
crowd.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.output import plot_kit
from iosim.record import Record

CORNERS = ((0.62, 0.04, 0.35, 0.36), (0.04, 0.60, 0.35, 0.36), (0.62, 0.60, 0.35, 0.36),
           (0.04, 0.04, 0.35, 0.36))
"""Candidate inset rectangles (axes fraction): lower right first, where a roofline is empty."""


class Zoom(Record):
    """An inset that magnifies a crowded cluster of markers, and which markers it shows."""

    inset: Any
    members: tuple[int, ...]
    """Indices (into the markers given) of the points drawn in the inset."""


def zoom_cluster(ax: Any, markers: Sequence[Any], lines: Sequence[Any], *,
                 base_size: float, min_points: int = 3) -> Zoom | None:
    """The inset for the largest crowd of `markers` (single-point Line2Ds), or None."""
    fig = ax.get_figure(root=True)
    centres = np.array([m.get_transform().transform((m.get_xdata()[0], m.get_ydata()[0]))
                        for m in markers])
    if len(centres) < min_points:
        return None
    near = plot_kit.marker_radius_px(fig, base_size) * 2 * 1.2  # markers that touch
    cluster = list(range(len(markers)))  # union-find over "closer than `near`"

    def root(i: int) -> int:
        while cluster[i] != i:
            i = cluster[i]
        return i

    for i in range(len(markers)):
        for j in range(i):
            if math.dist(centres[i], centres[j]) < near:
                cluster[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(markers)):
        groups.setdefault(root(i), []).append(i)
    members = max(groups.values(), key=len)
    xs = np.log10([markers[i].get_xdata()[0] for i in members])
    ys = np.log10([markers[i].get_ydata()[0] for i in members])
    distinct = {(round(x, 4), round(y, 4)) for x, y in zip(xs, ys, strict=True)}
    if len(distinct) < min_points:
        return None
    rect = _emptiest(ax, centres, lines, members)
    if rect is None:
        return None
    half = max(float(np.ptp(xs)), float(np.ptp(ys)), 1e-3) * 0.8
    cx, cy = (xs.max() + xs.min()) / 2, (ys.max() + ys.min()) / 2
    inset = ax.inset_axes(rect)
    inset.set_xscale("log")
    inset.set_yscale("log")
    inset.set_xlim(10 ** (cx - half), 10 ** (cx + half))
    inset.set_ylim(10 ** (cy - half), 10 ** (cy + half))
    inset.tick_params(which="both", labelbottom=False, labelleft=False, length=0)
    for line in lines:
        inset.plot(line.get_xdata(), line.get_ydata(), color=line.get_color(),
                   ls=line.get_linestyle(), lw=line.get_linewidth(),
                   transform=inset.get_xaxis_transform() if _is_axvline(line, ax) else
                   inset.get_yaxis_transform() if _is_axhline(line, ax) else inset.transData)
    copies = []
    for i in members:
        m = markers[i]
        copies += inset.plot(m.get_xdata(), m.get_ydata(), marker=m.get_marker(),
                             ms=base_size * 0.8, ls="none", color=m.get_color(),
                             markeredgecolor=m.get_markeredgecolor(),
                             markerfacecolor=m.get_markerfacecolor(),
                             markeredgewidth=m.get_markeredgewidth(), zorder=6)
    plot_kit.nest_markers(fig, copies, base_size * 0.8)  # points the zoom cannot part still nest
    ax.indicate_inset_zoom(inset, edgecolor="#888888", alpha=0.9)
    return Zoom(inset, tuple(members))


def _is_axhline(line: Any, ax: Any) -> bool:
    return bool(line.get_transform() == ax.get_yaxis_transform())


def _is_axvline(line: Any, ax: Any) -> bool:
    return bool(line.get_transform() == ax.get_xaxis_transform())


def _emptiest(ax: Any, centres: np.ndarray, lines: Sequence[Any],
              members: Sequence[int]) -> tuple[float, float, float, float] | None:
    """The first corner rectangle that no line, marker or crowd member crosses."""
    from matplotlib.transforms import Bbox

    frame = ax.get_window_extent(plot_kit.renderer_of(ax.get_figure(root=True)))
    # a vertical guide (the ridge) may pass behind the inset: it marks a place on the x axis
    # that stays readable above and below; a roof may not
    sampled = [plot_kit.display_polyline(line) for line in lines if not _is_axvline(line, ax)]
    for rect in CORNERS:
        x0, y0, w, h = rect
        box = Bbox.from_bounds(frame.x0 + x0 * frame.width, frame.y0 + y0 * frame.height,
                               w * frame.width, h * frame.height)
        if any(plot_kit.bbox_hits_points(box, pts, pad=6) for pts in sampled):
            continue
        if plot_kit.bbox_hits_points(box, centres, pad=12):
            continue
        return rect
    return None
