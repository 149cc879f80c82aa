"""Figures a person can read (issue 13, item 3), checked on the rendered layout: every text's
box from the renderer (`get_window_extent`) against the figure, the axes, the roofs, the
markers and the other labels."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.text import Text

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.inputs.workload import Workload
from iosim.output import plot, plot_kit


def rendered(fig: Any) -> Any:
    fig.canvas.draw()
    return plot_kit.renderer_of(fig)


def number_labels(ax: Any) -> list[Any]:
    return [t for t in ax.texts if t.get_text().isdigit()]


def point_labels(ax: Any) -> list[Any]:
    """Every annotation of a point (numbers now; the old figures wrote the kernels' names)."""
    from matplotlib.text import Annotation

    return [t for t in ax.texts if isinstance(t, Annotation) and t.get_gid() != "footnote"]


def markers(ax: Any) -> list[Any]:
    return [line for line in ax.get_lines()
            if len(line.get_xdata()) == 1 and line.get_marker() not in (None, "None", "")]


def roof_lines(ax: Any) -> list[Any]:
    return [line for line in ax.get_lines() if line not in markers(ax)]


def assert_inside_figure(fig: Any, text: Any, renderer: Any) -> None:
    box, frame = text.get_window_extent(renderer), fig.bbox
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1, f"cut off: {text.get_text()!r}"
    assert frame.y0 <= box.y0 and box.y1 <= frame.y1, f"cut off: {text.get_text()!r}"


def assert_readable_roofline(fig: Any) -> None:
    """No label over a label, a roof or a marker; labels inside the axes; the title and the
    legend inside the figure; the legend clear of the axes; no marker hidden by another."""
    renderer = rendered(fig)
    (ax,) = fig.axes
    insets = ax.child_axes  # a magnified inset where points crowd (plot_zoom)
    assert_inside_figure(fig, ax.title, renderer)
    for panel in (ax, *insets):
        assert_labels_clear(fig, panel, renderer)
    for inset in insets:
        box = inset.get_window_extent(renderer)
        for t in point_labels(ax):
            assert not plot_kit.boxes_overlap(Text.get_window_extent(t, renderer), box)
    (legend,) = fig.legends
    legend_box = legend.get_window_extent(renderer)
    assert not plot_kit.boxes_overlap(legend_box, ax.get_window_extent(renderer))
    assert fig.bbox.y0 <= legend_box.y0 and legend_box.y1 <= fig.bbox.y1


def assert_labels_clear(fig: Any, ax: Any, renderer: Any) -> None:
    labels = point_labels(ax)
    assert labels
    boxes = [Text.get_window_extent(t, renderer) for t in labels]  # the text, not its leader
    frame = ax.get_window_extent(renderer)
    for i, box in enumerate(boxes):
        name = labels[i].get_text()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 <= frame.y1
        for other in boxes[i + 1:]:
            assert not plot_kit.boxes_overlap(box, other), f"label {name} over another label"
        for line in roof_lines(ax):
            assert not plot_kit.bbox_hits_points(box, plot_kit.display_polyline(line), pad=0), (
                f"label {name} over {line.get_label()}")
        for m in markers(ax):
            x, y = m.get_transform().transform((m.get_xdata()[0], m.get_ydata()[0]))
            r = plot_kit.marker_radius_px(fig, m.get_markersize())
            near_x, near_y = min(max(x, box.x0), box.x1), min(max(y, box.y0), box.y1)
            assert math.hypot(x - near_x, y - near_y) >= r, f"label {name} over a marker"
    # a marker is hidden when one drawn above it covers its whole disc
    drawn = sorted(markers(ax), key=lambda m: m.get_zorder())
    for i, below in enumerate(drawn):
        xb, yb = below.get_transform().transform((below.get_xdata()[0], below.get_ydata()[0]))
        rb = plot_kit.marker_radius_px(fig, below.get_markersize())
        for above in drawn[i + 1:]:
            xa, ya = above.get_transform().transform((above.get_xdata()[0],
                                                      above.get_ydata()[0]))
            ra = plot_kit.marker_radius_px(fig, above.get_markersize())
            assert math.hypot(xa - xb, ya - yb) + rb > ra * 1.05, "a marker hides another"


CASES = {
    # the newcomer's three figures (issue 13 item 3) and the README's
    "decode": (Workload(1, n_kv=8192), "a100", "spec"),
    "h100": (Workload(8192, d=128, heads=32, causal=True), "h100", "spec"),
    "measured": (Workload(4096), "h200", "measured"),
    "a100": (Workload(4096), "a100", "spec"),
}


@functools.cache
def roofline_of(case: str) -> Any:
    """Each case's figure, drawn once for the tests that read it (none changes it)."""
    workload, gpu, profile = CASES[case]
    return plot.roofline(compare(workload, gpu, profile=profile))


@pytest.mark.parametrize("case", list(CASES))
def test_roofline_labels_roofs_and_points_do_not_collide(case: str) -> None:
    assert_readable_roofline(roofline_of(case))


def test_decode_points_that_stack_are_nested_and_numbered() -> None:
    fig = roofline_of("decode")
    (ax,) = fig.axes
    (inset,) = ax.child_axes
    renderer = rendered(fig)
    # standard's QKᵀ/PV, splitkv's attention and both fused kernels sit within 4 % of 1 FLOP/B
    near_one = [m for m in markers(ax) if 0.95 < m.get_xdata()[0] < 1.05]
    assert len(near_one) == 4
    assert len({m.get_markersize() for m in near_one}) == 4  # nested: every size differs
    # ... and the inset draws them apart: no two of its markers touch
    zoomed = markers(inset)
    assert len(zoomed) == 4
    for i, a in enumerate(zoomed):
        for b in zoomed[i + 1:]:
            pa = a.get_transform().transform((a.get_xdata()[0], a.get_ydata()[0]))
            pb = b.get_transform().transform((b.get_xdata()[0], b.get_ydata()[0]))
            assert math.dist(pa, pb) >= (plot_kit.marker_radius_px(fig, a.get_markersize())
                                         + plot_kit.marker_radius_px(fig, b.get_markersize()))
    assert inset.get_window_extent(renderer).width > 200
    key = [t.get_text() for t in fig.legends[0].get_texts()]
    numbers = sorted(int(t.get_text()) for panel in (ax, inset) for t in number_labels(panel))
    assert numbers == list(range(1, 7)) and len([k for k in key if k[:1].isdigit()]) == 6
    assert sorted(t.get_text() for t in number_labels(inset)) == ["2", "3", "4", "5"]


def test_measured_roofline_places_kernels_by_the_dram_bytes_it_charged() -> None:
    c = compare(Workload(4096), "h200", profile="measured")
    fig = plot.roofline(c)
    (ax,) = fig.axes
    expected = sorted((k.flops / k.dram_bytes, k.flops / k.time_s)
                      for a in c.algorithms for k in a.kernels if k.flops)
    assert all(k.dram_bytes is not None for a in c.algorithms for k in a.kernels)
    drawn = sorted((float(m.get_xdata()[0]), float(m.get_ydata()[0])) for m in markers(ax)
                   if m.get_marker() != "*")
    # one marker per (point, algorithm): standard's three kernels and the two fused ones
    assert np.allclose(sorted(set(drawn)), sorted(set(expected)), rtol=1e-12)
    assert "DRAM" in ax.get_xlabel()
    assert any(label.get_text().startswith("DRAM 4.27 TB/s measured")
               for label in fig.legends[0].get_texts())


# ---------------------------------------------------------------------------------------------
# against N


def assert_legend_outside(fig: Any) -> None:
    renderer = rendered(fig)
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    for ax in fig.axes:
        assert not plot_kit.boxes_overlap(box, ax.get_window_extent(renderer))
        assert_inside_figure(fig, ax.title, renderer)
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0


def test_many_series_keep_the_legend_off_the_data() -> None:
    result = sweep(SweepSpec(n=(256, 1024, 4096), d=(64, 128), gpu=("a100", "h100")))
    for figure in (plot.traffic_vs_n, plot.time_vs_n):
        fig = figure(result)
        assert_legend_outside(fig)
        assert len(fig.legends[0].get_texts()) >= 12
        # two GPUs, two SRAM sizes: the title names both, not the first series' alone
        title = fig.axes[0].get_title()
        assert "NVIDIA A100 80GB SXM4" in title and "NVIDIA H100 SXM5 80GB" in title
        assert "163 KiB" in title and "227 KiB" in title


def hollow_ns(ax: Any, color: str) -> list[int]:
    return sorted(int(x) for line in ax.get_lines() if line.get_markerfacecolor() == "white"
                  and line.get_color() == color for x in line.get_xdata())


def test_standard_is_hollow_where_it_needs_more_hbm_than_the_gpu() -> None:
    # Figure 2's shape on an 80 GB A100: standard's softmax holds S and P (N² fp16 each) for
    # 64 × 16 heads: 2 · 2 B · N² · 1024 = 68.7 GB at N 4096 (fits with Q, K, V, O's 2.1 GB),
    # 275 GB at N 8192 (does not)
    ns = (1024, 2048, 4096, 8192, 16384)
    result = sweep(SweepSpec(n=ns, heads=(16,), batch=(64,), gpu=("a100",)))
    figures = [plot.traffic_vs_n(result), plot.time_vs_n(result)]
    for fig in figures:
        (ax,) = fig.axes
        assert hollow_ns(ax, plot.color_of("standard")) == [8192, 16384]
        assert hollow_ns(ax, plot.color_of("flash1")) == []
        key = [t.get_text() for t in fig.legends[0].get_texts()]
        assert any(k.startswith("standard") and "> 80.0 GB HBM from N = 8,192" in k for k in key)
        assert "hollow markers: more HBM than the GPU has" in key
    times = lines_by_label(figures[1].axes[0])
    standard = next(line for label, line in times.items() if label.startswith("standard —"))
    assert list(standard.get_ydata()) == result.algorithm("standard").time_s.tolist()


def lines_by_label(ax: Any) -> dict[str, Any]:
    return {line.get_label(): line for line in ax.get_lines()}


# ---------------------------------------------------------------------------------------------
# 2-D block sweep


def test_two_block_axes_draw_a_heatmap_with_the_cells_that_do_not_fit_hatched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bq, bkv = (16, 64, 256), (32, 128, 512, 1024)
    result = sweep(SweepSpec(n=(4096,), heads=(16,), batch=(8,), gpu=("a100",),
                             algorithms=("flash2",), block_q=bq, block_kv=bkv))
    fig = plot.block_heatmap(result, "flash2")
    traffic, time = fig.axes[:2]  # the two panels (their colour bars follow)
    a = result.algorithm("flash2")
    grid = traffic.images[0].get_array()
    assert grid.shape == (len(bq), len(bkv))
    for p in range(result.points):
        i, j = bq.index(int(a.block_q[p])), bkv.index(int(a.block_kv[p]))
        assert grid[i, j] == a.hbm_bytes[p]
        assert time.images[0].get_array()[i, j] == a.time_s[p]
    for panel in (traffic, time):
        hatched = {(round(r.get_y() + 0.5), round(r.get_x() + 0.5)) for r in panel.patches
                   if r.get_gid() == "no-fit"}
        expected = {(bq.index(int(a.block_q[p])), bkv.index(int(a.block_kv[p])))
                    for p in range(result.points) if not a.fits_sram[p]}
        assert hatched == expected and expected  # some pairs overflow 163 KiB
        assert [t.get_text() for t in panel.get_xticklabels()] == [str(v) for v in bkv]
    # every cell's text fits inside its cell
    renderer = rendered(fig)
    for panel in (traffic, time):
        for t in panel.texts:
            x, y = t.get_position()
            cell = panel.transData.transform([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)])
            box = t.get_window_extent(renderer)
            assert cell[0][0] <= box.x0 and box.x1 <= cell[1][0], t.get_text()
            assert cell[0][1] <= box.y0 and box.y1 <= cell[1][1], t.get_text()
    assert_legend_outside(fig)
    # sweep --plot writes the heatmap, not a 1-D plot of the first B_r
    stems: list[str] = []
    monkeypatch.setattr(plot, "save", lambda fig, stem, overwrite: stems.append(
        Path(stem).name) or [])
    plot.sweep_figures(result, tmp_path)
    assert stems == ["blocks_flash2"]


# ---------------------------------------------------------------------------------------------
# GPU comparison and block sweep: the same legend rule, and HBM


def test_gpu_comparison_says_which_bars_need_more_hbm_than_the_gpu() -> None:
    # N 16,384, 16 heads, batch 8: standard's S and P are 2 · 2 B · 16,384² · 128 = 137 GB,
    # more than any of these GPUs has (80, 80, 24, 16 GB); FlashAttention holds O(N d)
    result = sweep(SweepSpec(n=(16384,), heads=(16,), batch=(8,), gpu=("a100", "h100", "l4",
                                                                          "t4")))
    fig = plot.gpu_comparison(result)
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 12
    over = [t for t in texts if t.endswith("more HBM than the GPU has")]
    assert over == texts[:4]  # the bars are drawn algorithm by algorithm: standard first
    assert_legend_outside(fig)


def test_block_sweep_legend_is_below_both_panels() -> None:
    result = sweep(SweepSpec(n=(1024,), heads=(16,), batch=(64,), gpu=("a100-40gb-sxm",),
                             algorithms=("flash1",), block_kv=(32, 128, 512, 1024)))
    fig = plot.block_sweep(result)
    assert_legend_outside(fig)
    key = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "does not fit the SRAM" in key and "standard attention (no tiles)" in key


def test_the_bisection_along_n_agrees_with_every_point() -> None:
    from iosim.analysis.hbm_fit import hbm_fits

    ns = tuple(2**k for k in range(8, 17))
    result = sweep(SweepSpec(n=ns, heads=(16,), batch=(64,), gpu=("a100",)))
    every = np.arange(result.points)
    for name in ("standard", "flash1", "flash2"):
        assert (hbm_fits(result, name, every, along_n=True)
                == hbm_fits(result, name, every)).all()
    # and it does find the edge: standard stops fitting at N 8,192 (the test above)
    assert hbm_fits(result, "standard", every, along_n=True).tolist() == [True] * 5 + [False] * 4
