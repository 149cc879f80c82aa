"""Each figure is checked by what it draws (lines' xy data, markers, scales, labels, titles)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.inputs.workload import Workload
from iosim.output import plot


def lines_by_label(ax: Any) -> dict[str, Any]:
    return {line.get_label(): line for line in ax.get_lines()}


def points(ax: Any) -> list[tuple[float, float, str, str]]:
    """Single-point marker lines: (x, y, marker, face colour)."""
    out = []
    for line in ax.get_lines():
        x, y = line.get_xdata(), line.get_ydata()
        if len(x) == 1 and line.get_marker() not in (None, "None", ""):
            out.append((float(x[0]), float(y[0]), str(line.get_marker()),
                        str(line.get_markerfacecolor())))
    return out


# ---------------------------------------------------------------------------------------------
# roofline


def test_roofline_a100() -> None:
    c = compare(Workload(4096), "a100")
    fig = plot.roofline(c)
    (ax,) = fig.axes
    bw, peak = c.roofs.hbm_bandwidth_bytes_per_s, c.roofs.matmul_flops_per_s
    lines = lines_by_label(ax)
    hbm = next(line for label, line in lines.items() if label.startswith("HBM 2.04 TB/s"))
    x = np.asarray(hbm.get_xdata())
    assert np.allclose(hbm.get_ydata(), np.minimum(x * bw, peak))
    vector = next(line for label, line in lines.items() if label.startswith("fp32 vector peak"))
    assert set(vector.get_ydata()) == {19.5e12}  # configs/gpus/a100-80gb-sxm.yaml peak fp32
    # the A100 YAML has an SRAM bandwidth (19 TB/s, FlashAttention §2.1) but no L2 bandwidth
    assert any(label.startswith("SRAM 19 TB/s est.") for label in lines)
    assert not any(label.startswith("L2") for label in lines)
    ridge = lines["ridge point 153 FLOP/B"]
    assert (ridge.get_xdata()[0], ridge.get_ydata()[0]) == (peak / bw, peak)
    # every kernel with FLOPs is a point at (FLOPs / bytes, FLOPs / time)
    expected = {(round(k.intensity_flops_per_byte, 6), round(k.flops / k.time_s))
                for a in c.algorithms for k in a.kernels if k.flops}
    drawn = {(round(x, 6), round(y)) for x, y, marker, _ in points(ax) if marker != "*"}
    assert drawn == expected
    # each point is numbered; the legend is the key (coincident kernels share a number)
    key = [t.get_text() for t in fig.legends[0].get_texts()]
    numbered = {text.split("  ", 1)[1]: text.split("  ", 1)[0] for text in key if "  " in text}
    assert set(numbered) == {"standard: S = QKᵀ, O = PV", "standard: P = softmax(S)",
                             "flash1: fused attention", "flash2: fused attention"}
    assert sorted(t.get_text() for t in ax.texts if t.get_text().isdigit()) == sorted(
        numbered.values())
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlabel() == "arithmetic intensity (FLOP per HBM byte)"
    assert ax.get_ylabel() == "performance (FLOP/s)"
    title = ax.get_title()
    assert "NVIDIA A100 80GB SXM4" in title and "N 4096, d 64, fp16" in title
    assert "83,456 fp16 elements (163 KiB)" in title and "flash1 B_r×B_c 64×326" in title
    footnote = next(t.get_text() for t in ax.texts if t.get_text().startswith("y = all FLOPs"))
    assert "init O, l, m" in footnote  # 0 FLOPs: listed, not plotted


def test_roofline_h100_draws_its_l2_roof() -> None:
    c = compare(Workload(8192, d=128, heads=8, causal=True), "h100")
    (ax,) = plot.roofline(c).axes
    l2 = next(line for label, line in lines_by_label(ax).items() if label.startswith("L2 12 TB/s"))
    x = np.asarray(l2.get_xdata())
    assert np.allclose(l2.get_ydata(), np.minimum(x * 12e12, 989e12))  # h100-sxm.yaml


# ---------------------------------------------------------------------------------------------
# traffic vs N


def test_traffic_vs_n() -> None:
    ns = (256, 512, 1024, 2048, 4096, 8192)
    result = sweep(SweepSpec(n=ns, gpu=("a100",)))
    (ax,) = plot.traffic_vs_n(result).axes
    lines = lines_by_label(ax)
    for name in ("standard", "flash1", "flash2"):
        line = next(line for label, line in lines.items() if label.startswith(name + " — slope"))
        assert list(line.get_xdata()) == list(ns)
        assert list(line.get_ydata()) == [compare(Workload(n), "a100").algorithm(name).hbm_bytes
                                          for n in ns]
    std = lines["∝ N² through standard's last point (Theorem 2: Θ(Nd + N²))"]
    assert _slope(std) == pytest.approx(2.0)
    assert std.get_ydata()[-1] == compare(Workload(8192), "a100").algorithm("standard").hbm_bytes
    theorem = lines["N²d²/M bytes (Theorem 2's FlashAttention term, constant 1)"]
    m = 166912 // 2  # 163 KiB of fp16
    assert theorem.get_ydata()[0] == pytest.approx(256 * 256 * 64**2 / m * 2)
    assert _slope(theorem) == pytest.approx(2.0)
    assert _slope(lines["compulsory: read Q, K, V, write O once (∝ N)"]) == pytest.approx(1.0)
    # the legend's slope is the log-log slope of the last two points (4Nd + 4N²: just under 2)
    std_bytes = [compare(Workload(n), "a100").algorithm("standard").hbm_bytes for n in ns[-2:]]
    slope = math.log(std_bytes[1] / std_bytes[0]) / math.log(2)
    assert f"slope {slope:.2f} at N = 8,192" in next(
        label for label in lines if label.startswith("standard"))
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlabel() == "sequence length N (tokens)"
    assert ax.get_ylabel() == "HBM traffic (bytes)"
    assert "NVIDIA A100 80GB SXM4" in ax.get_title() and "M = 83,456 elements" in ax.get_title()


def _slope(line: Any) -> float:
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    return math.log(y[-1] / y[0]) / math.log(x[-1] / x[0])


def test_traffic_vs_n_one_series_per_other_value() -> None:
    result = sweep(SweepSpec(n=(512, 1024, 2048), d=(64, 128), gpu=("a100",)))
    (ax,) = plot.traffic_vs_n(result).axes
    labels = [line.get_label() for line in ax.get_lines()]
    # blocks differ between the series, so each series' legend entry says its own: Alg. 1
    # line 1 with M = 83,456 (163 KiB of fp16): B_c = ⌈M/4d⌉, B_r = min(B_c, d)
    assert sum(label.startswith("flash1 (d 64; B_r×B_c 64×326)") for label in labels) == 1
    assert sum(label.startswith("flash1 (d 128; B_r×B_c 128×163)") for label in labels) == 1
    assert "B_r×B_c" not in ax.get_title()


def test_many_series_are_held_at_the_first_value() -> None:
    result = sweep(SweepSpec(n=(512, 1024), d=(32, 64, 128), heads=(1, 2), gpu=("a100",)))
    (ax,) = plot.traffic_vs_n(result).axes
    assert "held at their first value: heads 1, d 32" in ax.get_title()


# ---------------------------------------------------------------------------------------------
# block-size sweep: the FlashAttention Figure 2 (middle) analogue


def test_figure2_block_sweep() -> None:
    blocks = (32, 64, 128, 256, 512, 1024)
    result = sweep(SweepSpec(n=(1024,), d=(64,), heads=(16,), batch=(64,),
                             gpu=("a100-40gb-sxm",), algorithms=("flash1",), block_kv=blocks))
    fig = plot.block_sweep(result)
    top, bottom = fig.axes
    flash1 = result.algorithm("flash1")
    traffic, time = lines_by_label(top)["flash1"], lines_by_label(bottom)["flash1"]
    # the solid line runs through the blocks that fit; the dashed one continues past the SRAM
    assert list(traffic.get_xdata()) == list(blocks[:5])
    assert list(traffic.get_ydata()) == flash1.hbm_bytes[:5].tolist()
    assert list(time.get_ydata()) == flash1.time_s[:5].tolist()
    dashed = [line for line in top.get_lines()
              if line.get_linestyle() == "--" and line.get_label().startswith("_")]
    assert [list(line.get_xdata()) for line in dashed] == [[512, 1024]]
    # traffic falls with the block; time falls, then flattens on the compute floor
    assert list(traffic.get_ydata()) == sorted(traffic.get_ydata(), reverse=True)
    assert flash1.time_s[4] == flash1.time_s[5]
    floor = lines_by_label(bottom)["flash1 compute time (FLOPs at peak)"]
    assert list(floor.get_ydata()) == flash1.compute_time_s.tolist()
    # markers: shape = bound (o memory, s compute), hollow = does not fit the SRAM
    marks = sorted((x, m, face) for x, _, m, face in points(top))
    assert [m for _, m, _ in marks] == ["o", "o", "o", "o", "s", "s"]
    assert [face == "white" for _, _, face in marks] == [False] * 5 + [True]
    # the band of blocks that do not fit starts between 512 and 1024
    (band,) = [p for p in top.patches]
    assert band.get_x() == pytest.approx(math.sqrt(512 * 1024))
    standard = lines_by_label(top)["standard attention (no tiles)"]
    assert standard.get_ydata()[0] == result.baseline.hbm_bytes[0]
    assert top.get_yscale() == bottom.get_yscale() == "log" and bottom.get_xscale() == "log"
    assert bottom.get_xlabel() == "block size B_c (key/value rows per block)"
    assert top.get_ylabel() == "HBM traffic (bytes)"
    assert bottom.get_ylabel() == "estimated time (seconds, roofline)"
    title = top.get_title()
    assert "flash1 on NVIDIA A100 40GB SXM4" in title
    assert "batch 64, heads 16, d 64, N 1,024" in title
    assert "SRAM 163 KiB per block; flash1 B_r = 64 (Alg. 1 line 1)" in title


# ---------------------------------------------------------------------------------------------
# GPU comparison


def test_gpu_comparison() -> None:
    gpus = ("a100", "h100", "l4")
    result = sweep(SweepSpec(n=(4096,), heads=(16,), batch=(8,), gpu=gpus))
    (ax,) = plot.gpu_comparison(result).axes
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names == ["NVIDIA A100 80GB SXM4", "NVIDIA H100 SXM5 80GB", "NVIDIA L4"]
    bars = {}
    for container in ax.containers:
        bars[container.get_label()] = [patch.get_width() for patch in container]
    for name in ("standard", "flash1", "flash2"):
        expected = [compare(Workload(4096, heads=16, batch=8), g).algorithm(name).time_s
                    for g in gpus]
        assert bars[name] == pytest.approx(expected, rel=1e-15)
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 9 and all(t.endswith(("memory-bound", "compute-bound")) for t in texts)
    assert ax.get_xscale() == "log"  # L4 vs H100 spans more than a decade
    assert ax.get_xlabel() == "estimated time (roofline, spec ceilings)"
    assert "N 4,096" in ax.get_title() and "each GPU's sram_per_block" in ax.get_title()


# ---------------------------------------------------------------------------------------------
# files


def test_save_writes_decodable_png_and_svg(tmp_path: Path) -> None:
    import matplotlib.image

    fig = plot.roofline(compare(Workload(1024), "a100"))
    png, svg = plot.save(fig, tmp_path / "r")
    pixels = matplotlib.image.imread(png)
    width, height = (round(v * 150) for v in fig.get_size_inches())
    assert pixels.shape[:2] == (height, width)
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    # reproducible: no timestamp, the same figure gives the same PNG bytes
    png2, _ = plot.save(fig, tmp_path / "again")
    assert png.read_bytes() == png2.read_bytes()


def test_tick_text() -> None:
    assert plot.tick_text(2e9, plot._BYTE_PREFIXES) == "2 GB"
    assert plot.tick_text(5e-4, plot._TIME_PREFIXES) == "500 µs"
    assert plot.tick_text(3.12e14, plot._RATE_PREFIXES) == "312 TFLOP/s"
