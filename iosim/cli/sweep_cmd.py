"""`iosim sweep`: every workload flag takes a list or a range; the grid is evaluated vectorised."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from iosim.algorithms import ALGORITHMS
from iosim.analysis.requests import decoding_defaults
from iosim.analysis.sweep import SweepResult, SweepSpec, sweep
from iosim.analysis.sweep_spec import SPLITS_AUTO
from iosim.cli import cli
from iosim.cli.common import (
    FORMATS,
    comma_list,
    parse_seqlens,
    parse_suffix_lens,
    typed,
    wide_option,
)
from iosim.cli.lists import (
    HELP,
    Choice,
    parse_booleans,
    parse_choices,
    parse_fractions,
    parse_list,
    parse_names,
    parse_sizes,
)
from iosim.cli.model_flags import model_options, sweep_with_model
from iosim.cli.paths import PathType
from iosim.errors import IosimError
from iosim.inputs.units import DTYPE_BYTES
from iosim.inputs.workload import PASSES, UNFUSED_OPS

STREAMED = ("csv", "jsonl", "json")
"""Formats written chunk by chunk (output/sweep_stream.py): every row, in bounded memory."""

PROGRESS_AFTER_S = 0.3
"""A sweep shows a progress bar (on a terminal) once it has run this long."""


def _ints(flag: str, *, auto: bool = False) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        return None if value is None else parse_list(value, flag, auto=auto)
    return callback


def _splits(value: str | None) -> tuple[int | str, ...] | None:
    """--splits' list: numbers and ranges, and the word auto (SweepSpec's SPLITS_AUTO)."""
    if value is None:
        return None
    out: list[int | str] = []
    for part in value.split(","):
        if part.strip().lower() == SPLITS_AUTO:
            out.append(SPLITS_AUTO)
        else:
            try:
                out.extend(v for v in parse_list(part, "--splits") if v is not None)
            except click.BadParameter as exc:
                raise click.BadParameter(f"{exc.message.rstrip('.')}, or auto (each point's "
                                         "fastest count)",
                                         param_hint="'--splits'") from None
    return tuple(dict.fromkeys(out))


def _windows(value: str | None) -> tuple[int | None, ...] | None:
    """--window's list; the word none is no window (parse_list's auto, spelt for windows)."""
    if value is None:
        return None
    words = ",".join("auto" if part.strip().lower() == "none" else part
                     for part in value.split(","))
    try:
        return parse_list(words, "--window", auto=True)
    except click.BadParameter as exc:
        raise click.BadParameter(exc.message.replace("auto = the default rule",
                                                     "none = no window"),
                                 param_hint="'--window'") from None


@cli.command("sweep")
@click.option("--gpu", required=True, metavar="LIST",
              help="GPUs, comma-separated: names, aliases or YAML paths (see `iosim gpus`).")
@click.option("--n", "n", required=True, metavar="RANGE", callback=_ints("--n"), help=HELP + ".")
@click.option("--n-kv", metavar="RANGE", callback=_ints("--n-kv"),
              help="Key/value lengths (default: = N at each point).")
@click.option("--d", "d", default="64", show_default=True, metavar="RANGE", callback=_ints("--d"),
              help="Head dimensions (of Q·K).")
@click.option("--d-v", metavar="RANGE", callback=_ints("--d-v"),
              help="Head dimensions of V and O (default: = d at each point; MLA: 128 with d 192).")
@click.option("--latent-kv", is_flag=True,
              help="MLA absorbed decoding at every point: V is the first d_v columns of the "
                   "one latent KV head (--kv-heads 1, --d 576 --d-v 512).")
@click.option("--fp8-scales", type=Choice(["tensor", "block"]), default=None,
              help="FP8 descale granularity of the fp8_e4m3/fp8_e5m2 points (default: tensor).")
@click.option("--heads", default="1", show_default=True, metavar="RANGE",
              callback=_ints("--heads"), help="Query heads.")
@click.option("--kv-heads", metavar="RANGE", callback=_ints("--kv-heads"),
              help="KV heads for GQA/MQA (default: = heads); each must divide every --heads.")
@click.option("--batch", default="1", show_default=True, metavar="RANGE",
              callback=_ints("--batch"), help="Batch sizes.")
@click.option("--dtype", default="fp16", show_default=True, metavar="LIST",
              help=f"Dtypes, any of {','.join(DTYPE_BYTES)}.")
@click.option("--causal", is_flag=False, flag_value="yes", default="no", show_default=True,
              metavar="[LIST]", help="Causal mask: the bare flag means yes; no,yes sweeps both.")
@click.option("--pass", "pass_", default="fwd", show_default=True, metavar="LIST",
              help=f"Passes, any of {','.join(PASSES)}.")
@click.option("--unfused", default=None, metavar="LIST",
              help=f"Extra N×N kernels of the unfused standard pipeline (the same at every "
                   f"point): any of {','.join(UNFUSED_OPS)}.")
@click.option("--page-size", type=int, default=None,
              help="Paged KV cache: tokens per page, the same at every point (flash2, splitkv).")
@click.option("--prefix-len", type=int, default=None,
              help="Shared-prefix decoding batch (the same at every point): prefix tokens.")
@click.option("--suffix-lens", default=None, metavar="LIST",
              help="Each request's own tokens, e.g. 16,40,9 (sets the batch and N_kv).")
@click.option("--block-q", metavar="RANGE", callback=_ints("--block-q", auto=True),
              help="B_r values; auto = Alg. 1 line 1 (default).")
@click.option("--block-kv", metavar="RANGE", callback=_ints("--block-kv", auto=True),
              help="B_c values; auto = Alg. 1 line 1 (default).")
@click.option("--sparsity", default="1", show_default=True, metavar="LIST",
              help="Block-sparse fractions of non-zero blocks (Prop. 4), e.g. 0.25,0.5,1.")
@click.option("--window", metavar="RANGE", callback=lambda ctx, param, value: _windows(value),
              help="Sliding windows W, e.g. 512..8192 or none,4096 (none: no window; "
                   "docs/variants-masks.md).")
@click.option("--seqlens", default=None, metavar="LIST",
              help="Packed variable-length sequences, the same at every point (one --n: their "
                   "sum), e.g. 512,3000,77.")
@click.option("--packing", type=Choice(["varlen", "document"]), default="varlen",
              show_default=True, help="How --seqlens are cut into blocks (FA2 varlen, or "
              "FlexAttention's document mask).")
@click.option("--splits", metavar="RANGE", callback=lambda ctx, param, value: _splits(value),
              help="splitkv's KV splits; auto = each point's fastest count under the decoding "
                   "time model, as compare's --splits auto (default: FlashAttention-2's "
                   "heuristic).")
@click.option("--sram", metavar="SIZES", help="SRAM M as sizes, e.g. 64KiB,128KiB or "
              "32KiB..256KiB; auto = the GPU's sram_per_block (default).")
@click.option("--sram-elements", metavar="RANGE", callback=_ints("--sram-elements", auto=True),
              help="SRAM M in elements of the dtype, e.g. 65536,98304.")
@click.option("--algo", default=None, metavar="LIST",
              help=f"Algorithms, comma-separated: {','.join(ALGORITHMS)} (default: "
                   f"standard,flash1,flash2, and splitkv when N includes 1 in a forward sweep).")
@click.option("--impl", default=None, metavar="NAME|PATH",
              help="Sweep an implementation (configs/impls: sdpa-flash, torch-naive, ...) "
                   "instead of the algorithms: compare --impl at every point.")
@click.option("--profile", type=Choice(["spec", "measured"]), default="spec",
              show_default=True, help="Datasheet roofs, or the calibrated ones of the YAML.")
@click.option("--format", "fmt", type=Choice([*FORMATS, "jsonl"]), default="table",
              show_default=True,
              help="Output format (table and markdown show --limit rows; csv, jsonl (JSON "
                   "Lines: metadata, then a row per line) and json stream every row).")
@model_options
@wide_option
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True,
              help="Rows shown by the table and markdown formats.")
@click.option("--plot", "plot_dir", default=None, metavar="DIR", type=PathType(path_type=Path),
              help="Also write the figures (PNG and SVG) into DIR.")
@click.option("--force", is_flag=True, help="Let --plot overwrite figures already in DIR.")
def sweep_command(gpu: str, n: tuple[int, ...], n_kv: tuple[int, ...] | None,
                  d: tuple[int, ...], d_v: tuple[int, ...] | None, heads: tuple[int, ...],
                  kv_heads: tuple[int, ...] | None, latent_kv: bool, fp8_scales: str | None,
                  batch: tuple[int, ...], dtype: str, causal: str, pass_: str,
                  unfused: str | None, page_size: int | None, prefix_len: int | None,
                  suffix_lens: str | None, block_q: tuple[int | None, ...] | None,
                  block_kv: tuple[int | None, ...] | None, sparsity: str,
                  window: tuple[int | None, ...] | None, seqlens: str | None, packing: str,
                  splits: tuple[int | str, ...] | None, sram: str | None,
                  sram_elements: tuple[int | None, ...] | None, algo: str | None,
                  impl: str | None, profile: str, fmt: str, wide: bool, limit: int, plot_dir: Path | None,
                  force: bool, model: str | None, layer: str | None) -> None:
    """Evaluate a grid of workloads × GPUs × block sizes with the exact closed forms.

    Every workload flag takes one value, a list (1024,4096) or a range: a..b doubles
    (512..65536), a..b:s steps by s (64..512:64), a..b*k multiplies by k (64..4096*4).
    Block and SRAM lists may hold `auto` (the default rule). Blocks that do not fit the SRAM
    are marked (fits: NO), not refused: their counts show what they would cost.

    \b
    Examples:
      iosim sweep --gpu a100 --n 512..65536
      iosim sweep --gpu a100-40gb-sxm --n 1024 --heads 16 --batch 64 \\
          --algo flash1 --block-kv 32..2048 --plot figures/
      iosim sweep --gpu a100,h100,h200 --n 1024,4096 --d 64,128 --causal no,yes --format csv
      iosim sweep --gpu h100 --model llama-3.1-8b --n 1024..32768
    """
    if impl is not None and algo is not None:
        raise IosimError(f"--impl picks the algorithm ({impl} runs its own loop nest); drop "
                         f"--algo")
    suffixes = parse_suffix_lens(suffix_lens)
    if suffixes is not None and prefix_len is not None:  # one request per suffix, the longest
        batch = batch if typed("batch") else (len(suffixes),)  # a typed --batch is checked
        n_kv = n_kv or (prefix_len + max(suffixes),)
    spec = SweepSpec(
        n=n, gpu=parse_names(gpu, "--gpu"), n_kv=n_kv or (None,), d=d, d_v=d_v or (None,),
        heads=heads,
        kv_heads=kv_heads or (None,), batch=batch, latent_kv=latent_kv, fp8_scales=fp8_scales,
        dtype=parse_choices(dtype, "--dtype", list(DTYPE_BYTES)),
        causal=parse_booleans(causal, "--causal"),
        pass_=parse_choices(pass_, "--pass", list(PASSES)),
        sram_bytes=parse_sizes(sram, "--sram") if sram is not None else (None,),
        sram_elements=sram_elements or (None,), block_q=block_q or (None,),
        block_kv=block_kv or (None,), unfused=tuple(comma_list(unfused) or ()),
        sparsity=parse_fractions(sparsity, "--sparsity"), splits=splits or (None,),
        window=window or (None,),
        seqlens=parse_seqlens(seqlens),  # type: ignore[arg-type]
        packing=packing,
        algorithms=tuple(comma_list(algo) or default_algorithms(n, pass_, page_size,
                                                                prefix_len is not None)),
        page_size=page_size, prefix_len=prefix_len, suffix_lens=suffixes,
        profile=profile,  # type: ignore[arg-type]
        impl=impl,
    )
    spec = sweep_with_model(spec, {"model": model, "layer": layer})
    if plot_dir is not None:
        from iosim.output.folders import ensure_writable_dir

        ensure_writable_dir(plot_dir, "--plot", create=False)  # early; made once there is a result
    if fmt in STREAMED:
        keep_freed_memory()
    result = run_with_progress(spec)
    if plot_dir is not None:
        # the figures first: a refusal to overwrite one then stops before any output
        from iosim.output.plot import sweep_figure_stems, sweep_figures

        written: list[Path] = []
        if sweep_figure_stems(result):  # else no folder is made for nothing
            ensure_writable_dir(plot_dir, "--plot")
            written = sweep_figures(result, plot_dir, overwrite=force)
        if not written:
            click.echo("nothing to plot: vary --n, --block-kv/--block-q or --gpu", err=True)
        for path in written:
            click.echo(f"wrote {path}", err=True)
    from iosim.output import render_sweep

    if fmt in STREAMED:
        if fmt == "csv":  # a CSV has no metadata to carry the warning: stderr says it
            from iosim.analysis.sweep_spec import sram_beyond_the_gpus

            for note in sram_beyond_the_gpus(result.spec, tuple(result.hardware)):
                click.echo(f"warning: {note}", err=True)
        write_streamed(result, fmt)
    elif fmt == "markdown":
        click.echo(render_sweep.sweep_markdown(result, limit=limit), nl=False)
    else:
        render_sweep.print_sweep(result, limit=limit, wide=wide)


def write_streamed(result: SweepResult, fmt: str) -> None:
    """The sweep as CSV, JSON Lines or JSON on stdout, by two processes in turn where the
    machine has the cores (output/sweep_turns.py). A reader that went away ends the command
    as click does (status 1, nothing said); any other failure to write is one line, status 2."""
    from iosim.output import sweep_stream, sweep_turns

    make = {"csv": sweep_stream.csv_file, "jsonl": sweep_stream.jsonl_file}.get(
        fmt, sweep_stream.json_file)
    try:
        sweep_turns.write_in_turns(make(result), sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise click.ClickException(
            f"cannot write the sweep's {fmt} to the output: {exc.strerror or exc}") from None


def keep_freed_memory() -> None:
    """Ask glibc's malloc to keep the memory a streamed sweep frees for its next chunk.

    The sweep's temporaries, and a file's chunks of arrays (a few hundred kB each) and texts
    (about a MB a string), are freed and allocated again 60 times over a million-point sweep;
    by default glibc returns them to the system and maps fresh pages for the next chunk. On
    benchmarks/sweep_formats.py's grid, `--format jsonl` took 274,000 page faults without this
    and 190,000 with it, at the same peak memory (docs/sweeps-benchmarks.md). The process ends
    after the file. A C library without mallopt (not glibc): nothing changes."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # TypeError: Windows has no CDLL(None)
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(m_mmap_threshold, 64 << 20)  # blocks up to 64 MiB from the heap, not mmap
    mallopt(m_trim_threshold, 256 << 20)  # keep up to 256 MiB free at the heap's top


def default_algorithms(n: tuple[int, ...], passes: str, page_size: int | None = None,
                       shared_prefix: bool = False) -> tuple[str, ...]:
    """As `compare`: standard, flash1, flash2, and splitkv for decoding (N = 1, forward);
    flash1 left out over a paged KV cache; standard, splitkv, cascade for a shared prefix."""
    return decoding_defaults(1 in n and passes.strip().lower() == "fwd", page_size,
                             shared_prefix=shared_prefix)


def run_with_progress(spec: SweepSpec, console: Any = None) -> SweepResult:
    """Run the sweep; past PROGRESS_AFTER_S, show a rich progress bar on a terminal's stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    console = console or Console(stderr=True)
    started = time.perf_counter()
    state: dict[str, Any] = {}

    def on_progress(done: int, total: int) -> None:
        if "progress" not in state:
            if not console.is_terminal or time.perf_counter() - started < PROGRESS_AFTER_S:
                return
            progress = Progress(TextColumn("sweep"), BarColumn(), TaskProgressColumn(),
                                TextColumn("{task.completed:,}/{task.total:,} points"),
                                TimeElapsedColumn(), console=console, transient=True)
            progress.start()
            state["progress"] = progress
            state["task"] = progress.add_task("sweep", total=total)
        state["progress"].update(state["task"], completed=done, refresh=True)

    try:
        return sweep(spec, on_progress=on_progress)
    finally:
        if "progress" in state:
            state["progress"].stop()
