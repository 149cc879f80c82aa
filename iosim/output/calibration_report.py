"""The calibration report: predicted vs measured for every point (CSV, Markdown, plots) and the
summary `iosim calibrate` prints. Figures go through output/plot.py (Agg canvas, `save`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from iosim.calibrate.fit_result import BytesCheck, FitResult, Point, sdpa_ratios
from iosim.errors import IosimError
from iosim.output.files import write_text_atomically
from iosim.output.plot import new_figure, save
from iosim.output.render import fmt_bytes, fmt_rate, fmt_time, records_csv
from iosim.output.tables import markdown_table, simple_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REGENERATE = ("iosim calibrate --gpu h200 --from tests/data/h200-calibration.json "
              "--out configs/gpus/h200.yaml --force --report reports/calibration-h200")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def _mask(causal: bool) -> str:
    return "causal" if causal else "full"


# ---------------------------------------------------------------------------------------------
# records (CSV)


def _sig(row: dict[str, Any]) -> dict[str, Any]:
    """Floats to 6 significant digits (timer resolution is far coarser), for stable CSV diffs."""
    return {k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in row.items()}


def point_records(result: FitResult) -> list[dict[str, Any]]:
    """One CSV row per measured point: its shape, measured and predicted time (s), DRAM bytes
    (measured, estimated, L2-oblivious), programs per SM and relative errors."""
    rows = []
    for p in result.points:
        m = p.m
        rows.append({
            "id": m.id, "kernel": m.kernel, "class": m.kind, "split": p.split, "dtype": m.dtype,
            "n": m.n, "d": m.d, "batch": m.batch, "heads": m.heads, "causal": m.causal,
            "block": m.block_label, "size": m.size,
            "measured_time_s": m.time_s, "time_p20_s": m.time_p20_s, "time_p80_s": m.time_p80_s,
            "predicted_time_s": p.predicted_time_s, "roof_time_s": p.roof_time_s,
            "time_error": p.time_error, "io_bytes": m.io_bytes,
            "l2_oblivious_bytes": p.l2_oblivious_bytes, "dram_estimate_bytes": p.dram_bytes,
            "flops": m.flops, "achieved_flops_per_s": m.flops / m.time_s if m.flops else None,
            "achieved_bytes_per_s": m.io_bytes / m.time_s, "programs_per_sm": p.programs_per_sm,
            "registers": m.regs or None, "shared_bytes": m.shared_bytes or None,
            "rel_error_vs_torch": m.rel_error,
        })
    return [_sig(r) for r in rows]


def bytes_records(result: FitResult) -> list[dict[str, Any]]:
    """One CSV row per ncu-counted point: measured DRAM read/write bytes beside iosim's L2-aware
    estimate and the L2-oblivious count, with their relative errors."""
    return [_sig({
        "id": b.id, "algorithm": b.algorithm, "set": "grid" if b.grid else "l2-regimes",
        "main": b.main, "n": b.n, "d": b.d, "batch_heads": b.heads, "causal": b.causal,
        "block": b.block, "concurrent_programs": b.estimate.concurrent_programs,
        "measured_dram_read_bytes": b.measured_dram_read_bytes,
        "measured_dram_write_bytes": b.measured_dram_write_bytes,
        "measured_dram_bytes": b.measured_dram_bytes,
        "predicted_dram_read_bytes": b.estimate.read_bytes,
        "predicted_dram_write_bytes": b.estimate.write_bytes,
        "predicted_dram_bytes": b.predicted_dram_bytes, "dram_error": b.error,
        "l2_oblivious_bytes": b.l2_oblivious_bytes, "measured_l2_bytes": b.measured_l2_bytes,
    }) for b in result.bytes_checks]


# ---------------------------------------------------------------------------------------------
# terminal summary


def _table(title: str, columns: Sequence[str], left: Sequence[str]) -> Table:
    # one space apart (padding 0): the summary's tables fit 80 columns; headers wrap, values not
    return simple_table(title, [(c, "left" if c in left else "right") for c in columns],
                        padding=0)


def print_summary(result: FitResult, console: Console, *, out: Path, record: Path | None,
                  report: Path | None) -> None:
    """Print a fit's summary to `console`: the device, the measured ceilings (B/s, FLOP/s), the
    fitted efficiencies, Triton against SDPA, predicted against measured time (s) and DRAM bytes,
    the acceptance checks, and the paths `out`, `record` and `report` were written to."""
    c, dev = result.ceilings, result.calibration.device
    console.print(f"device    {dev.get('name')} · driver {dev.get('driver')} · torch "
                  f"{dev.get('torch')} · Triton {dev.get('triton')}")
    peaks = " · ".join(f"{k} matmul {fmt_rate(v, 'FLOP/s')}" for k, v in c.peak_flops_per_s.items())
    console.print(f"ceilings  HBM {fmt_rate(c.hbm_bandwidth_bytes_per_s, 'B/s')} · {peaks}")
    eff = " · ".join(f"{k} {v:.3f}" for k, v in result.efficiency.items())
    vector = ("" if result.vector_flops_per_s is None else
              f" · softmax FLOPs at {fmt_rate(result.vector_flops_per_s, 'FLOP/s')}")
    console.print(f"fitted    efficiency {eff}{vector}")
    for note in result.calibration.notes:
        console.print(f"note      {note}")
    console.print(f"counters  {result.calibration.counters.status}")

    table = _table("Fused Triton forward (main blocks) vs torch SDPA (flash backend)",
                   ("N", "d", "mask", "blocks", "Triton TFLOP/s", "SDPA TFLOP/s", "ratio"),
                   ("mask", "blocks"))
    for r in sdpa_ratios(result):
        table.add_row(str(r["n"]), str(r["d"]), _mask(r["causal"]), r["main_block"],
                      f"{r['triton_tflops']:.0f}", f"{r['sdpa_tflops']:.0f}", f"{r['ratio']:.2f}×")
    console.print(table)

    table = _table("Time: predicted vs measured (main configurations)",
                   ("kernel", "N", "d", "mask", "split", "measured", "predicted", "error"),
                   ("kernel", "mask", "split"))
    for p in result.points:
        if p.split in ("fit", "holdout"):
            table.add_row(p.m.kernel, str(p.m.n), str(p.m.d), _mask(p.m.causal), p.split,
                          fmt_time(p.m.time_s), _time(p), _pct(p.time_error))
    console.print(table)

    checks = [b for b in result.bytes_checks if b.main]
    if checks:
        table = _table("DRAM bytes: iosim's L2-aware estimate vs ncu (main configurations)",
                       ("algorithm", "N", "d", "B·H", "mask", "ncu DRAM", "estimate", "error",
                        "L2-oblivious"), ("algorithm", "mask"))
        for b in checks:
            table.add_row(b.algorithm + ("" if b.grid else " *"), str(b.n), str(b.d), str(b.heads),
                          _mask(b.causal), fmt_bytes(b.measured_dram_bytes),
                          fmt_bytes(b.predicted_dram_bytes), _pct(b.error),
                          fmt_bytes(b.l2_oblivious_bytes))
        console.print(table)
        console.print("* outside the acceptance grid: S, P or a head's K/V near or above the L2")

    table = _table("Acceptance", ("check", "target", "worst", "passed"), ("check", "worst"))
    for a in result.acceptance():
        table.add_row(a["check"], a["target"], a["worst"], "yes" if a["passed"] else "NO")
    console.print(table)
    console.print(f"wrote     {out}" + (f", {record}" if record else "") +
                  (f", {report}/" if report else ""))


def _time(p: Point) -> str:
    return "—" if p.predicted_time_s is None else fmt_time(p.predicted_time_s)


# ---------------------------------------------------------------------------------------------
# report folder


def write_report(result: FitResult, folder: Path, *, overwrite: bool = False) -> list[Path]:
    """points.csv, bytes.csv, three plots and README.md into `folder`; returns the files.
    Refuses to replace any of them unless `overwrite` (--force)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = ("points.csv", "bytes.csv", "time.png", "dram.png", "throughput.png", "README.md")
    existing = [folder / n for n in names if (folder / n).exists()]
    if existing and not overwrite:
        raise IosimError(f"{existing[0]} exists; pass --force to overwrite it, or choose another "
                         f"folder")
    files = [folder / "points.csv", folder / "bytes.csv"]
    write_text_atomically(files[0], records_csv(point_records(result)))
    write_text_atomically(files[1], records_csv(bytes_records(result)))
    files += plot_all(result, folder, overwrite=True)
    readme = folder / "README.md"
    write_text_atomically(readme, markdown(result))
    return [*files, readme]


def _md_rows(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    return [[str(x) for x in r] for r in rows]


def markdown(result: FitResult) -> str:
    """The calibration report's README.md: the device, ceilings, fitted efficiencies, every point's
    predicted vs measured time and bytes, and the command that regenerates the folder."""
    cal, dev, c = result.calibration, result.calibration.device, result.ceilings
    lines = [
        f"# Calibration: {dev.get('name')} ({result.hardware.name})",
        "",
        "Made by `iosim calibrate` from one run of `benchmarks/calibrate_h200.sh` on the lent "
        "GPU; every number below comes from the measurement file "
        "`tests/data/h200-calibration.json`. Regenerate this folder (no GPU needed) with:",
        "",
        f"    {REGENERATE}",
        "",
        "| | |", "|---|---|",
        f"| device | {dev.get('name')}, {dev.get('sm_count')} SMs, "
        f"{dev.get('l2_bytes', 0) / 2**20:.0f} MiB L2, {dev.get('memory_bytes', 0) / 2**30:.1f} GiB,"
        f" compute capability {dev.get('compute_capability')} |",
        f"| driver · CUDA | {dev.get('driver')} · {dev.get('cuda')} |",
        f"| torch · Triton · Python | {dev.get('torch')} · {dev.get('triton')} · "
        f"{dev.get('python')} |",
        f"| measured | {cal.created} |",
        f"| command | `{cal.command}` |",
        f"| counters | {cal.counters.status}"
        + (f" — {cal.counters.version}; `{cal.counters.command}`"
           if cal.counters.command else "") + " |",
        "",
    ]
    for note in cal.notes:
        lines += [f"Note: {note}", ""]
    lines += ["## Acceptance", ""]
    lines.append(markdown_table(["check", "target", "worst", "passed"], _md_rows(
        [(a["check"], a["target"], a["worst"], "yes" if a["passed"] else "**no**")
         for a in result.acceptance()])))
    lines += ["", "## Ceilings and fitted profile (`measured:` in configs/gpus/h200.yaml)", ""]
    rows: list[list[object]] = [["HBM bandwidth", fmt_rate(c.hbm_bandwidth_bytes_per_s, "B/s"),
                                 c.hbm_source]]
    rows += [[f"{k} matmul", fmt_rate(v, "FLOP/s"), c.peak_sources[k]]
             for k, v in c.peak_flops_per_s.items()]
    if result.vector_flops_per_s is not None:
        rows.append(["softmax (elementwise) rate", fmt_rate(result.vector_flops_per_s, "FLOP/s"),
                     "fitted with the fused efficiency (fit.py)"])
    rows += [[f"efficiency: {k}", f"{v:.3f}", "fitted at N ∈ {1024, 4096, 16384}"]
             for k, v in result.efficiency.items()]
    lines.append(markdown_table(["figure", "value", "source"], _md_rows(rows)))
    lines += ["", "Time model (iosim's measured profile): t = max(DRAM bytes / bandwidth, matmul "
              "FLOPs / matmul peak + softmax FLOPs / softmax rate) / efficiency of the kernel's "
              "class, with the L2-aware DRAM estimate.", ""]

    lines += ["## Fused forward vs torch SDPA (flash backend), fp16", ""]
    lines.append(markdown_table(
        ["N", "d", "mask", "blocks", "Triton TFLOP/s", "SDPA TFLOP/s", "ratio",
         "best blocks", "best TFLOP/s"],
        _md_rows([(r["n"], r["d"], _mask(r["causal"]), r["main_block"],
                   f"{r['triton_tflops']:.0f}", f"{r['sdpa_tflops']:.0f}", f"{r['ratio']:.2f}×",
                   r["best_block"], f"{r['best_tflops']:.0f}") for r in sdpa_ratios(result)]),
        [True, True, False, False, True, True, True, False, True]))
    lines += ["", "TFLOP/s count 4·N²·d per head, halved when causal (the FlashAttention papers' "
              "convention), for both.", ""]

    lines += ["## Time: predicted vs measured", "", "Main configurations (`fit`: used for the "
              "efficiencies; `holdout`: judged).", ""]
    lines.append(_points_table([p for p in result.points if p.split in ("fit", "holdout")]))
    lines += ["", "Standard path (S = QKᵀ + softmax + O = PV):", ""]
    lines.append(markdown_table(["N", "d", "split", "measured", "predicted", "error"], _md_rows(
        [(r["n"], r["d"], r["split"], fmt_time(r["measured_time_s"]),
          fmt_time(r["predicted_time_s"]), _pct(r["error"])) for r in result.standard_paths()]),
        [True, True, False, True, True, True]))
    lines += ["", "Other block configurations and the other S = QKᵀ kernel (2-D output tiles), "
              "predicted with the same profile:", ""]
    lines.append(_points_table([p for p in result.points if p.split == "other"]))
    lines += ["", "![measured vs predicted time](time.png)", ""]

    lines += ["## DRAM bytes: L2-aware estimate vs ncu", "",
              "ncu's dram__bytes_read.sum + dram__bytes_write.sum of the kernel(s), plus the "
              "write-backs of the dirty lines they left in L2 (counted on the evict kernel that "
              "follows; calibrate/ncu.py). L2-oblivious: the paper's count, every tile load "
              "charged to HBM; ncu L2: lts__t_bytes.sum.", ""]
    grid = [b for b in result.bytes_checks if b.grid]
    lines.append(_bytes_table(grid))
    extra = [b for b in result.bytes_checks if not b.grid]
    if extra:
        lines += ["", "Outside the acceptance grid: S and P near the L2 size (standard), a head's "
                  "K/V near or above it (fused); these test the L2 model itself:", ""]
        lines.append(_bytes_table(extra))
    lines += ["", "![DRAM bytes: estimate vs ncu](dram.png)", "",
              "![fused throughput](throughput.png)", ""]
    return "\n".join(lines)


def _points_table(points: Sequence[Point]) -> str:
    return markdown_table(
        ["kernel", "N", "d", "mask", "blocks", "split", "measured", "predicted", "error",
         "DRAM estimate", "L2-oblivious"],
        _md_rows([(p.m.kernel, p.m.n, p.m.d, _mask(p.m.causal), p.m.block_label or "—", p.split,
                   fmt_time(p.m.time_s), _time(p), _pct(p.time_error),
                   fmt_bytes(p.dram_bytes or 0), fmt_bytes(p.l2_oblivious_bytes or 0))
                  for p in points]),
        [False, True, True, False, False, False, True, True, True, True, True])


def _bytes_table(checks: Sequence[BytesCheck]) -> str:
    return markdown_table(
        ["algorithm", "N", "d", "B·H", "mask", "blocks", "ncu DRAM", "estimate", "error",
         "L2-oblivious", "ncu L2"],
        _md_rows([(b.algorithm, b.n, b.d, b.heads, _mask(b.causal), b.block or "—",
                   fmt_bytes(b.measured_dram_bytes), fmt_bytes(b.predicted_dram_bytes),
                   _pct(b.error), fmt_bytes(b.l2_oblivious_bytes), fmt_bytes(b.measured_l2_bytes))
                  for b in checks]),
        [False, True, True, True, False, False, True, True, True, True, True])


# ---------------------------------------------------------------------------------------------
# plots


def plot_all(result: FitResult, folder: Path, *, overwrite: bool = False) -> list[Path]:
    """time.png, dram.png and throughput.png into `folder`, through plot.save (Agg, never
    replacing a file unless `overwrite`); returns the files."""
    files = []
    for name, draw in (("time", _plot_time), ("dram", _plot_dram),
                       ("throughput", _plot_throughput)):
        files += save(draw(result), folder / name, ("png",), overwrite=overwrite)
    return files


def _diagonal(ax: Any, lo: float, hi: float, band: float) -> None:
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.fill_between([lo, hi], [lo * (1 - band), hi * (1 - band)], [lo * (1 + band), hi * (1 + band)],
                    color="0.85", zorder=0, label=f"±{band:.0%}")
    ax.set_xscale("log")
    ax.set_yscale("log")


def _plot_time(result: FitResult) -> Figure:
    fig, ax = new_figure(6.4, 5.2)
    points = [p for p in result.points if p.predicted_time_s is not None]
    styles = {"qk": ("tab:blue", "s"), "softmax": ("tab:green", "^"), "pv": ("tab:purple", "D"),
              "attn_fwd": ("tab:red", "o")}
    times = [t for p in points for t in (p.m.time_s, p.predicted_time_s or p.m.time_s)]
    _diagonal(ax, min(times) * 0.8e6, max(times) * 1.25e6, 0.15)
    for kernel, (color, marker) in styles.items():
        for split, fill in (("fit", "none"), ("holdout", color), ("other", "0.6")):
            sel = [p for p in points if p.m.kernel == kernel and p.split == split]
            if sel:
                ax.scatter([p.m.time_s * 1e6 for p in sel],
                           [(p.predicted_time_s or 0) * 1e6 for p in sel], marker=marker,
                           facecolors=fill, edgecolors=color, s=28,
                           label=f"{kernel} ({split})")
    ax.set_xlabel("measured time (µs, median)")
    ax.set_ylabel("predicted time (µs, measured profile)")
    ax.set_title(f"{result.calibration.device.get('name')}: time, predicted vs measured")
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    return fig


def _plot_dram(result: FitResult) -> Figure:
    fig, ax = new_figure(6.4, 5.2)
    checks = list(result.bytes_checks)
    if not checks:
        ax.text(0.5, 0.5, "no hardware counters in this measurement file", ha="center")
        return fig
    values = [v for b in checks for v in (b.measured_dram_bytes, b.l2_oblivious_bytes)]
    _diagonal(ax, min(values) * 0.8 / 1e6, max(values) * 1.25 / 1e6, 0.10)
    for algorithm, color in (("standard", "tab:blue"), ("flash2", "tab:red")):
        for grid, marker in ((True, "o"), (False, "D")):
            sel = [b for b in checks if b.algorithm == algorithm and b.grid == grid]
            if not sel:
                continue
            where = "grid" if grid else "L2 regimes"
            ax.scatter([b.measured_dram_bytes / 1e6 for b in sel],
                       [b.predicted_dram_bytes / 1e6 for b in sel], color=color, marker=marker,
                       s=22, label=f"{algorithm}, L2-aware estimate ({where})")
            ax.scatter([b.measured_dram_bytes / 1e6 for b in sel],
                       [b.l2_oblivious_bytes / 1e6 for b in sel], color=color, marker="x", s=22,
                       alpha=0.5, label=f"{algorithm}, L2-oblivious count ({where})")
    ax.set_xlabel("ncu DRAM bytes (MB: reads + writes + write-backs)")
    ax.set_ylabel("iosim (MB)")
    ax.set_title("DRAM bytes: iosim vs Nsight Compute")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def _plot_throughput(result: FitResult) -> Figure:
    rows = sdpa_ratios(result)
    ds = sorted({r["d"] for r in rows}) or [0]
    fig, axes = new_figure(5.2 * len(ds), 4.0, 1, len(ds), squeeze=False)
    for ax, d in zip(axes[0], ds, strict=True):
        for causal, style in ((False, "-"), (True, "--")):
            sel = sorted((r for r in rows if r["d"] == d and r["causal"] == causal),
                         key=lambda r: r["n"])
            if not sel:
                continue
            ns = [r["n"] for r in sel]
            ax.plot(ns, [r["triton_tflops"] for r in sel], style, marker="o", color="tab:red",
                    label=f"Triton ({_mask(causal)})")
            ax.plot(ns, [r["sdpa_tflops"] for r in sel], style, marker="s", color="tab:gray",
                    label=f"SDPA flash ({_mask(causal)})")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("N")
        ax.set_ylabel("TFLOP/s (4N²d per head, halved if causal)")
        ax.set_title(f"fused forward, d = {d}, fp16")
        ax.legend(fontsize=7)
    return fig
