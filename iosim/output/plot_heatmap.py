"""A 2-D block sweep (`--block-q` × `--block-kv`): one heatmap per tiled algorithm.

Left panel HBM traffic, right panel roofline time, each cell one (B_r, B_c) pair coloured on a
log scale and printed in human units; a cell whose tiles do not fit the SRAM is hatched and
says so (its counts are what the blocks would cost if they did). Sweep axes other than the two
block sizes are held at their first value (the title says which).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from iosim.analysis.sweep import SweepResult
from iosim.output import plot_kit
from iosim.output.plot_kit import _bytes_axis, _time_axis
from iosim.output.plot_select import fixed_text, gpu_text, sram_text, value_text
from iosim.output.render import fmt_bytes, fmt_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NO_FIT_HATCH = "///"


def is_two_dimensional(result: SweepResult) -> bool:
    """Whether the sweep varies both block_q and block_kv (then its block figure is a heatmap)."""
    return all(len(result.spec.values(a)) > 1 for a in ("block_q", "block_kv"))


def block_heatmap(result: SweepResult, algorithm: str, *, title_note: str | None = None
                  ) -> Figure:
    """HBM traffic and time of one tiled algorithm over every (B_r, B_c) of the sweep."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    a = result.algorithm(algorithm)
    positions, held = _plane(result)
    rows = result.index["block_q"][positions]
    cols = result.index["block_kv"][positions]
    shape = (len(result.spec.values("block_q")), len(result.spec.values("block_kv")))
    fits = np.ones(shape, dtype=bool)
    fits[rows, cols] = a.fits_sram[positions]

    fig = Figure(figsize=(12.0, 5.8), layout="constrained")
    FigureCanvasAgg(fig)
    panels = fig.subplots(1, 2)
    for ax, values, fmt, what, ticks in (
            (panels[0], a.hbm_bytes, fmt_bytes, "HBM traffic", _bytes_axis),
            (panels[1], a.time_s, fmt_time, "roofline time", _time_axis)):
        grid = np.full(shape, np.nan)
        grid[rows, cols] = values[positions]
        finite = grid[np.isfinite(grid) & (grid > 0)]
        norm = LogNorm(vmin=float(finite.min()), vmax=float(finite.max()) * (
            1.0001 if finite.min() == finite.max() else 1.0))
        image = ax.imshow(grid, origin="lower", cmap="viridis", norm=norm, aspect="auto")
        bar = fig.colorbar(image, ax=ax, label=what, shrink=0.9)
        ticks(bar.ax.yaxis)
        for (i, j), value in np.ndenumerate(grid):
            if not math.isfinite(value):
                continue
            dark = norm(value) < 0.55
            text = fmt(float(value)) + ("" if fits[i, j] else "\nno fit")
            ax.text(j, i, text, ha="center", va="center", fontsize=7 if max(shape) <= 8 else 5,
                    color="white" if dark else "black")
            if not fits[i, j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=NO_FIT_HATCH,
                                       edgecolor="#ffffff99", lw=0, gid="no-fit"))
        ax.set_xticks(range(shape[1]), [_tick(v) for v in result.spec.values("block_kv")])
        ax.set_yticks(range(shape[0]), [_tick(v) for v in result.spec.values("block_q")])
        ax.set_xlabel("B_c (key/value rows per block)")
        ax.set_ylabel("B_r (query rows per block)")
        ax.set_title(what, fontsize=9)
    if not fits.all():
        plot_kit.legend_below(fig, [Patch(facecolor="white", edgecolor="#555555",
                                          hatch=NO_FIT_HATCH)],
                              ["hatched: the blocks do not fit the SRAM (counts as if they did)"])
    lines = [f"Block sizes — {algorithm} on {gpu_text(result, positions)}",
             fixed_text(result), sram_text(result, positions)]
    if held:
        lines.append("other varying axes held at their first value: "
                     + ", ".join(value_text(result, axis, 0) for axis in held))
    if title_note:
        lines.append(title_note)
    fig.suptitle("\n".join(plot_kit.wrap_line(line, 120) for line in lines), fontsize=10)
    return fig


def _plane(result: SweepResult) -> tuple[np.ndarray, list[str]]:
    """The points with every varying axis but the two block sizes at its first value."""
    held = [axis for axis in result.spec.varying if axis not in ("block_q", "block_kv")]
    mask = np.ones(result.points, dtype=bool)
    for axis in held:
        mask &= result.index[axis] == 0
    return np.flatnonzero(mask), held


def _tick(value: Any) -> str:
    return "auto" if value is None else str(value)
