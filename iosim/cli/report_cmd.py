"""`iosim report`: a self-contained folder of plots, tables and summary for one GPU."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from iosim.cli import cli
from iosim.cli.lists import parse_list, parse_names
from iosim.inputs.limits import MAX_BLOCK, MAX_LENGTH, check_int
from iosim.inputs.units import DTYPE_BYTES
from iosim.inputs.workload import Workload

DEFAULT_N_RANGE = "256..65536"
DEFAULT_BLOCK_RANGE = "16..1024"


@cli.command("report")
@click.option("--gpu", required=True, metavar="NAME|ALIAS|PATH",
              help="The GPU the report is about (see `iosim gpus`).")
@click.option("--out", "out_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="Report folder (created; must be empty unless --force).")
@click.option("--force", is_flag=True, help="Write into a non-empty folder, replacing files.")
@click.option("--n", "n", type=int, default=1024, show_default=True, help="Sequence length N.")
@click.option("--d", "d", type=int, default=64, show_default=True, help="Head dimension.")
@click.option("--heads", type=int, default=16, show_default=True, help="Query heads.")
@click.option("--kv-heads", type=int, default=None, help="KV heads (GQA/MQA; default: --heads).")
@click.option("--batch", type=int, default=64, show_default=True, help="Batch size.")
@click.option("--dtype", type=click.Choice(list(DTYPE_BYTES)), default="fp16", show_default=True)
@click.option("--causal", is_flag=True, help="Causal mask.")
@click.option("--sram", default=None, metavar="SIZE",
              help="SRAM M for the report's GPU, e.g. 192KiB (default: its sram_per_block).")
@click.option("--profile", type=click.Choice(["spec", "measured"]), default="spec",
              show_default=True, help="Datasheet roofs, or the calibrated ones of the YAML.")
@click.option("--n-range", default=DEFAULT_N_RANGE, show_default=True, metavar="RANGE",
              help="N values of the traffic-vs-N sweep (a..b doubles; a..b:s; a..b*k; lists).")
@click.option("--block-range", default=DEFAULT_BLOCK_RANGE, show_default=True, metavar="RANGE",
              help="Block sizes of the block-size sweeps.")
@click.option("--compare-gpus", default=None, metavar="LIST",
              help="GPUs for the comparison (default: every shipped GPU).")
def report_command(gpu: str, out_dir: Path, force: bool, n: int, d: int, heads: int,
                   kv_heads: int | None, batch: int, dtype: str, causal: bool, sram: str | None,
                   profile: str, n_range: str, block_range: str,
                   compare_gpus: str | None) -> None:
    """Write a report folder: index.md, index.html, PNG+SVG plots, CSV tables, summary.json.

    The default workload is the FlashAttention paper's Figure 2 shape (GPT-2 medium: N 1024,
    d 64, 16 heads, batch 64, fp16).

    \b
    Example:
      iosim report --gpu a100 --out reports/a100
      iosim report --gpu h100 --out reports/h100 --n 4096 --d 128 --causal --force
    """
    from iosim.output.report import ReportRequest, build_report, default_compare_gpus

    workload = Workload(n, d=d, heads=heads, kv_heads=kv_heads, batch=batch, dtype=dtype,
                        causal=causal)
    ns = tuple(v for v in parse_list(n_range, "--n-range") if v is not None)
    block_values = tuple(v for v in parse_list(block_range, "--block-range") if v is not None)
    for flag, values, high in (("--n-range", ns, MAX_LENGTH), ("--block-range", block_values,
                                                                MAX_BLOCK)):
        for value in values:
            check_int(flag, value, high=high)
    gpus = parse_names(compare_gpus, "--compare-gpus") if compare_gpus else default_compare_gpus()
    words = ["iosim", "report", "--gpu", gpu, "--out", str(out_dir), "--n", str(n), "--d", str(d),
             "--heads", str(heads), "--batch", str(batch), "--dtype", dtype,
             "--profile", profile, "--n-range", n_range, "--block-range", block_range]
    words += ["--kv-heads", str(kv_heads)] if kv_heads is not None else []
    words += ["--causal"] if causal else []
    words += ["--sram", sram] if sram else []
    words += ["--compare-gpus", compare_gpus] if compare_gpus else []
    words += ["--force"] if force else []
    request = ReportRequest(gpu, workload, ns, block_values, gpus, sram, profile,
                            shlex.join(words))
    report = build_report(request, out_dir, force=force)
    click.echo(f"wrote {len(report.files)} files to {out_dir}/ (open {out_dir / 'index.html'})")
