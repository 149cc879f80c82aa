"""Report folders: `iosim report` writes plots, tables, summary.json, index.md and index.html.

A report is one GPU and one workload seen four ways: the comparison tables, the roofline, HBM
traffic against N, the block-size sweep of each tiled algorithm's resident (outer-loop) block,
and the same workload on other GPUs. The folder is self-contained: index.html shows the PNGs
inline (each linked to its SVG) and opens from disk in any browser; index.md is the same for
GitHub. Tables are CSV (pandas). summary.json holds the key numbers, the exact command and the
iosim version. Nothing in it depends on the date: rebuilt from the same inputs with the same
matplotlib, every file but the SVGs (whose clip-path ids matplotlib draws from object ids) is
the same byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iosim._version import __version__
from iosim.algorithms import ALGORITHMS, DEFAULT_ALGORITHMS
from iosim.analysis.compare import compare
from iosim.analysis.comparison import Comparison
from iosim.analysis.sweep import SweepResult, SweepSpec, sweep
from iosim.errors import IosimError
from iosim.inputs.excerpts import clip
from iosim.inputs.gpus import list_hardware, resolve_hardware
from iosim.inputs.output_paths import check_folder
from iosim.inputs.units import FP8_DTYPES
from iosim.inputs.workload import Workload
from iosim.output import strict_json
from iosim.output.document import Block, Code, Heading, Image, Links, Para, TableBlock, to_html, to_markdown
from iosim.output.files import write_atomically, write_text_atomically
from iosim.output.folders import ensure_writable_dir
from iosim.output.tables import table_cells
from iosim.record import Record, field

SCHEMA = "iosim.report/1"
REPORT_SUFFIXES = (".png", ".svg", ".csv", ".json", ".md", ".html")
"""What a report writes (a folder of that name in --out is refused, even with --force)."""


class ReportRequest(Record):
    """Everything a report depends on (and so what its command line must say)."""

    gpu: str
    workload: Workload
    n_range: tuple[int, ...]
    block_range: tuple[int, ...]
    compare_gpus: tuple[str, ...]
    sram: str | None = None
    profile: str = "spec"
    command: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    """compare's other arguments: algorithms, block_q, block_kv, sram_elements, splits (the
    flags `iosim report` shares with `iosim compare`); the sweeps follow them too."""
    subject: str | None = None
    """What the workload is of (a model preset's name and layer kind), for the title."""


class Report(Record, frozen=False):
    """What was written, for the CLI to print and the tests to check."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def default_compare_gpus(dtype: str = "fp16", profile: str = "spec") -> tuple[str, ...]:
    """Every shipped GPU — for an FP8 workload, those with FP8 tensor cores (peak_flops.fp8);
    for the measured profile, those with a measured section (the others have no such roofs)."""
    return tuple(h.name for h in list_hardware()
                 if (dtype not in FP8_DTYPES or "fp8" in h.peak_flops_per_s)
                 and (profile != "measured" or h.measured is not None))


def build_report(request: ReportRequest, folder: Path, *, force: bool = False) -> Report:
    """Compute everything, then write the folder (refusing a non-empty one unless force)."""
    check_folder(folder, "out")  # early, creating nothing: the folder is made once all is computed
    if force and folder.is_dir():
        # with --force files are replaced, but never a folder in their place: refuse before the
        # first file, not after nineteen
        taken = sorted(p.name for p in folder.iterdir() if p.is_dir() and p.suffix in REPORT_SUFFIXES)
        if taken:
            raise IosimError(f"--out {clip(str(folder))} holds a folder named {clip(taken[0])} "
                             f"where the report writes a file; remove it or choose another --out")
    ensure_writable_dir(folder, "--out", must_be_empty=True, force=force, create=False)
    from iosim.output import plot, render_tables
    from iosim.output.render_sweep import roofline_records, sweep_frame

    w = request.workload
    options = dict(request.options)
    comparison = compare(w, request.gpu, sram=request.sram, profile=request.profile,  # type: ignore[arg-type]
                         **options)
    hw = comparison.hardware
    kv_heads = None if w.kv_heads == w.heads else w.kv_heads
    sram_given = request.sram or options.get("sram_elements")
    common = {"d": (w.d,), "d_v": (None if w.d_v == w.d else w.d_v,), "heads": (w.heads,),
              "kv_heads": (kv_heads,), "batch": (w.batch,),
              "dtype": (w.dtype,), "causal": (w.causal,), "pass_": (w.pass_,),
              "unfused": w.unfused, "profile": request.profile, "latent_kv": w.latent_kv,
              "fp8_scales": w.fp8_scales,
              "n_kv": (None if w.n_kv == w.n else w.n_kv,),
              "sparsity": (w.sparsity,),  # splits: the heuristic's at each point
              "window": (w.window,), "seqlens": w.seqlens, "packing": w.packing,
              "block_q": (options.get("block_q"),), "block_kv": (options.get("block_kv"),),
              "algorithms": (DEFAULT_ALGORITHMS if options.get("impl") is not None else
                             tuple(a.name for a in comparison.algorithms)),
              "impl": options.get("impl"),
              "sram_bytes": (comparison.sram_bytes if sram_given else None,),
              "page_size": w.page_size, "prefix_len": w.prefix_len, "suffix_lens": w.suffix_lens}
    gpu = (request.gpu,)
    n_range, n_note = _masked_n_range(request.n_range, w)
    # a shared-prefix batch is one decoding step (N = 1, N_kv its longest request): no N range
    n_range = (1,) if w.prefix_len is not None else n_range
    by_n = sweep(SweepSpec(n=n_range, gpu=gpu, **{  # type: ignore[arg-type]
        **common, "seqlens": None, "packing": "varlen"}))
    tiled = [a for a in comparison.algorithms if a.tiling is not None]
    block_sweeps: list[tuple[str, str, SweepResult]] = []
    for a in tiled:
        if a.impl is not None:
            continue  # an implementation's blocks are its code's: no block sweep
        axis = "block_kv" if ALGORITHMS[a.name].outer == "kv" else "block_q"
        spec = SweepSpec(n=(w.n,), gpu=gpu, **{**common, "algorithms": (a.name,),  # type: ignore[arg-type]
                                                 axis: request.block_range})
        block_sweeps.append((a.name, axis, sweep(spec)))
    # the report's GPU first, then the others, each once; each GPU with its own SRAM
    others = {resolve_hardware(g).hardware.name: g for g in request.compare_gpus}
    others.pop(hw.name, None)
    by_gpu = sweep(SweepSpec(n=(w.n,), gpu=(request.gpu, *others.values()),
                             **{**common, "sram_bytes": (None,)}))  # type: ignore[arg-type]

    ensure_writable_dir(folder, "--out", must_be_empty=True, force=force)
    report = Report(folder)
    blocks: list[Block] = []

    def figure(fig: Any, stem: str, alt: str) -> Image:
        paths = plot.save(fig, folder / stem, overwrite=True)  # the folder was checked above
        report.files += paths
        width, height = (int(v * 150) for v in fig.get_size_inches())
        return Image(f"{stem}.png", f"{stem}.svg", alt, width, height)

    def table_csv(frame: Any, name: str) -> str:
        path = folder / name
        write_atomically(path, lambda temporary: frame.to_csv(temporary, index=False,
                                                              lineterminator="\n"))
        report.files.append(path)
        return name

    import pandas as pd

    title = f"iosim report — {hw.display_name}"
    if request.subject is not None:
        title = f"iosim report — {request.subject} on {hw.display_name}"
    blocks += [
        Heading(1, title),
        Para(f"**Workload** {w.describe()}. **GPU** {hw.display_name} (`{hw.name}`, "
             f"{request.profile} profile). **SRAM** M = {comparison.sram_bytes // w.element_bytes:,}"
             f" {w.dtype} elements ({comparison.sram_source})."),
        Para(f"Made by iosim {__version__} with:"),
        Code(_wrap_command(request.command)),
        Para("Every number is an exact count of the algorithms' loop nests (the paper's "
             "Algorithm 0 for standard attention, Algorithm 1 for FlashAttention, "
             "FlashAttention-2's Algorithm 1), timed on a roofline of the GPU's "
             + ("datasheet ceilings" if request.profile == "spec" else
                "measured ceilings and kernel efficiencies")
             + ". Counts are L2-oblivious: HBM↔SRAM traffic as Theorem 2 counts it."),
    ]

    # 1. the comparison
    blocks += [Heading(2, "1. Standard attention vs FlashAttention")]
    if w.masked:  # what the window or the packing does to each tiled kernel (mask_summary.py)
        from iosim.analysis.mask_summary import comparison_masks, mask_lines

        masks = comparison_masks(w, comparison.algorithms, comparison.hardware.sm_count)
        blocks += [Para(f"**Mask** {line}.") for line in mask_lines(w, masks)]
    for table in (render_tables.summary_table(comparison, wide=True),
                  render_tables.kernel_table(comparison, wide=True),
                  render_tables.tensor_table(comparison)):
        blocks.append(_rich_table(table))
    verdict = _shared_prefix_verdict(comparison, request)
    if verdict is not None:  # compare's closing sentence, from the decoding time model
        blocks.append(Para(verdict.sentence()))
    kernels = table_csv(pd.DataFrame(render_rows(comparison)), "compare_kernels.csv")
    terms = table_csv(pd.DataFrame(comparison.term_records()), "compare_terms.csv")
    blocks.append(Links([("kernels (CSV)", kernels), ("traffic terms with their algorithm "
                                                      "lines (CSV)", terms)]))

    # 2. roofline
    blocks += [Heading(2, "2. Roofline"),
               Para("Each kernel at its arithmetic intensity (FLOPs per HBM byte) and its "
                    "roofline performance; the ridge point is where the HBM roof meets the "
                    f"{w.dtype} compute roof."),
               figure(plot.roofline(comparison), "roofline", "roofline"),
               Links([("points (CSV)", table_csv(pd.DataFrame(roofline_records(comparison)),
                                                 "roofline_points.csv"))]),
               Para("The same kernels once per memory level (a hierarchical roofline): at one "
                    "performance, FLOPs over the bytes each moves at DRAM (the L2-aware "
                    "estimate), between L2 and the SMs (the L2-oblivious count) and in SRAM "
                    "(resident tiles re-read at every block pair). A dot under a ceiling "
                    "far from it says that level is not what limits the kernel."),
               figure(plot.hierarchical_roofline(comparison), "roofline_levels",
                      "hierarchical roofline")]

    # 3. traffic vs N
    blocks += [Heading(2, "3. HBM traffic and time vs sequence length"),
               Para("Standard attention moves Θ(Nd + N²) bytes, FlashAttention Θ(N²d²/M) "
                    "(Theorem 2): both grow as N² at large N, FlashAttention's a factor ≈ d²/M "
                    "lower. Grey guides: N², Theorem 2's N²d²/M term and the compulsory traffic."),
               *([Para(n_note)] if n_note else []),
               figure(plot.traffic_vs_n(by_n), "traffic_vs_n", "HBM traffic vs N"),
               Para(_hbm_sentence(by_n, hw.hbm_capacity_bytes)),
               figure(plot.time_vs_n(by_n), "time_vs_n", "roofline time vs N"),
               Links([("data (CSV)", table_csv(sweep_frame(by_n), "traffic_vs_n.csv"))])]

    # 4. block sizes
    blocks += [Heading(2, "4. Block size"),
               Para("The resident (outer-loop) block of each tiled algorithm, the other block "
                    "by Alg. 1 line 1: B_c for FlashAttention (K/V outer), B_r for "
                    "FlashAttention-2 (Q outer). Larger blocks mean fewer passes and less "
                    "traffic, until the kernel turns compute-bound; hollow markers do not fit "
                    "the SRAM (their counts show what they would cost if they did).")]
    for name, axis, result in block_sweeps:
        stem = f"{axis.replace('_', '-')}_sweep_{name}"
        blocks += [figure(plot.block_sweep(result, axis=axis), stem, f"{name} block sweep"),
                   Links([("data (CSV)", table_csv(sweep_frame(result), f"{stem}.csv"))])]

    # 5. GPUs
    blocks += [Heading(2, "5. The same workload on other GPUs"),
               Para("Each GPU with its own SRAM per block (so its own Alg. 1 blocks) and its "
                    f"{request.profile} ceilings."),
               figure(plot.gpu_comparison(by_gpu), "gpu_comparison", "GPU comparison"),
               Links([("data (CSV)", table_csv(sweep_frame(by_gpu), "gpu_comparison.csv"))])]

    summary = _summary(request, comparison, by_gpu, report, folder)
    if verdict is not None:
        summary["shared_prefix"] = verdict.to_dict()
    write_text_atomically(folder / "summary.json",
                          strict_json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    report.files.append(folder / "summary.json")
    blocks += [Heading(2, "Files"),
               Links([(p.name, p.name) for p in sorted(report.files, key=lambda p: p.name)])]
    write_text_atomically(folder / "index.md", to_markdown(blocks))
    write_text_atomically(folder / "index.html", to_html(blocks, title))
    report.files += [folder / "index.md", folder / "index.html"]
    report.summary = summary
    return report


def _masked_n_range(n_range: tuple[int, ...], w: Workload) -> tuple[tuple[int, ...], str]:
    """The N values of the N sweep under a mask, and what the report says about them: a window
    needs N_kv >= W (shorter sequences are left out), and packed sequences exist at one N only
    (the sweep runs one sequence of each N instead)."""
    notes = []
    if w.seqlens is not None:
        notes.append(f"The {len(w.seqlens):,} packed sequences exist at N = {w.n:,} only: this "
                     f"sweep runs one unpacked sequence of each N.")
    if w.window is not None and w.n_kv == w.n:
        kept = tuple(n for n in n_range if n >= w.window) or (w.n,)
        if kept != n_range:
            notes.append(f"N below the window ({w.window:,}) is left out.")
        n_range = kept
    return n_range, " ".join(notes)


def _hbm_sentence(by_n: SweepResult, capacity_bytes: float) -> str:
    """Where along N each algorithm stops fitting the GPU's memory (the plots' hollow markers)."""
    import numpy as np

    from iosim.analysis.hbm_fit import hbm_fits
    from iosim.output.render import fmt_bytes

    order = np.argsort(by_n.axis_values("n"), kind="stable")
    ns = by_n.axis_values("n")[order]
    over = []
    for a in by_n.algorithms:
        fits = hbm_fits(by_n, a.name, order, along_n=True)
        if not fits.all():
            over.append(f"{a.name} from N = {int(ns[np.argmin(fits)]):,}")
    if not over:
        return (f"Every point fits the GPU's {fmt_bytes(capacity_bytes)} of HBM (inputs, outputs "
                f"and what each algorithm holds beside them).")
    return (f"Hollow markers need more than the GPU's {fmt_bytes(capacity_bytes)} of HBM "
            f"(inputs, outputs and what the algorithm holds beside them): "
            + "; ".join(over) + ". Their counts are what the GPU would move if it had the "
            "memory.")


def _wrap_command(command: str, width: int = 88) -> str:
    """One shell command over several lines (backslash continuations), split between options."""
    import shlex

    words = shlex.split(command)
    lines: list[str] = []
    current = ""
    i = 0
    while i < len(words):
        # keep an option with its value
        take = 2 if words[i].startswith("--") and i + 1 < len(words) and not words[
            i + 1].startswith("--") else 1
        piece = shlex.join(words[i:i + take])
        if current and len(current) + 1 + len(piece) > width:
            lines.append(current)
            current = "    " + piece
        else:
            current = f"{current} {piece}" if current else piece
        i += take
    lines.append(current)
    return " \\\n".join(lines)


def render_rows(c: Comparison) -> list[dict[str, Any]]:
    """The comparison's per-kernel records (compare_kernels.csv: bytes, FLOPs, seconds)."""
    return c.to_records()


def _rich_table(table: Any) -> TableBlock:
    headers, rows, right = table_cells(table)
    return TableBlock(headers, rows, right, str(table.title or ""))


def _shared_prefix_verdict(c: Comparison, request: ReportRequest) -> Any:
    """compare's cascade-vs-split-KV verdict (analysis/cascade_verdict.py), or None."""
    from iosim.analysis.cascade_verdict import cascade_verdict

    options = {k: v for k, v in dict(request.options).items()
               if k in ("sram_elements", "tiles")}
    return cascade_verdict(c, sram=request.sram, profile=request.profile, **options)


def _summary(request: ReportRequest, c: Comparison, by_gpu: SweepResult, report: Report,
             folder: Path) -> dict[str, Any]:
    data = c.to_dict()
    data["hardware"]["path"] = _portable_path(data["hardware"]["path"])
    gpu_rows: list[dict[str, Any]] = [{"gpu": hw.name} for hw in by_gpu.hardware]
    for a in by_gpu.algorithms:
        for row, t, mem in zip(gpu_rows, a.time_s.tolist(), a.memory_bound.tolist(), strict=True):
            row[a.name] = {"time_s": t, "bound": "memory" if mem else "compute"}
    return {
        "schema": SCHEMA,
        "iosim_version": __version__,
        "command": request.command,
        "gpu": data["hardware"],
        "workload": data["workload"],
        "sram": data["sram"],
        "algorithms": {a["name"]: {k: a[k] for k in (
            "tiling", "hbm_read_bytes", "hbm_write_bytes", "hbm_bytes", "flops", "time_s",
            "bound", "traffic_ratio_vs_standard", "speedup_vs_standard")}
            for a in data["algorithms"]},
        "sweeps": {"n": list(request.n_range), "block": list(request.block_range),
                   "gpus": [hw.name for hw in by_gpu.hardware]},
        "gpu_comparison": gpu_rows,
        "files": sorted([*(str(p.relative_to(folder)) for p in report.files), "summary.json",
                         "index.md", "index.html"]),
    }


def _portable_path(path: str) -> str:
    """A shipped YAML as configs/gpus/NAME.yaml (no machine-specific prefix in reports)."""
    from iosim.inputs.gpus import config_dir

    p = Path(path)
    try:
        return str(Path("configs/gpus") / p.resolve().relative_to(config_dir().resolve()))
    except ValueError:
        return path
