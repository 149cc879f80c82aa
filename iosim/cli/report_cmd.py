"""`iosim report`: a self-contained folder of plots, tables and summary for one GPU."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from iosim.analysis.compare import compare
from iosim.cli import cli
from iosim.cli.common import (
    command_words,
    compare_arguments,
    comparison_options_with,
    refuse_impossible_sram,
    workload_from,
)
from iosim.cli.lists import parse_list, parse_names
from iosim.cli.paths import PathType
from iosim.inputs.api_values import check_int
from iosim.inputs.limits import MAX_BLOCK, MAX_LENGTH

DEFAULT_N_RANGE = "256..65536"
DEFAULT_BLOCK_RANGE = "16..1024"


def model_subject(params: dict[str, Any]) -> str | None:
    """What the report is of under --model: the model's name and the layer kind it shows (a
    report is of one layer kind, --layer or the model's only one)."""
    if params.get("model") is None:
        return None
    from iosim.cli.model_flags import model_of
    from iosim.inputs.model_presets import choose_group

    model = model_of(params)
    assert model is not None
    group = choose_group(model, params.get("layer"))
    if len(model.kinds) == 1:
        return f"{model.display_name} (one of its {group.count} layers)"
    return (f"{model.display_name} (one of its {group.count} {group.kind} layers, of "
            f"{model.layer_count})")


@cli.command("report")
@comparison_options_with(n=1024, heads=16, batch=64)
@click.option("--out", "out_dir", required=True, metavar="DIR", type=PathType(path_type=Path),
              help="Report folder (created; must be empty unless --force).")
@click.option("--n-range", default=DEFAULT_N_RANGE, show_default=True, metavar="RANGE",
              help="N values of the traffic-vs-N sweep (a..b doubles; a..b:s; a..b*k; lists).")
@click.option("--block-range", default=DEFAULT_BLOCK_RANGE, show_default=True, metavar="RANGE",
              help="Block sizes of the block-size sweeps.")
@click.option("--compare-gpus", default=None, metavar="LIST",
              help="GPUs for the comparison (default: every shipped GPU).")
@click.pass_context
def report_command(ctx: click.Context, /, out_dir: Path, n_range: str, block_range: str,
                   compare_gpus: str | None, **params: Any) -> None:
    """Write a report folder: index.md, index.html, PNG+SVG plots, CSV tables, summary.json.

    The default workload is the FlashAttention paper's Figure 2 shape (GPT-2 medium: N 1024,
    d 64, 16 heads, batch 64, fp16). Every workload flag of `compare` works here (--force also
    writes into a non-empty folder).

    \b
    Example:
      iosim report --gpu a100 --out reports/a100
      iosim report --gpu h100 --out reports/h100 --n 4096 --d 128 --causal --force
      iosim report --gpu h100 --out reports/decode --n 1 --n-kv 32768 --d 128 --heads 32 \\
          --kv-heads 8 --batch 1
    """
    from iosim.output.report import ReportRequest, build_report, default_compare_gpus

    workload = workload_from(params)
    ns = tuple(v for v in parse_list(n_range, "--n-range") if v is not None)
    block_values = tuple(v for v in parse_list(block_range, "--block-range") if v is not None)
    for flag, values, high in (("--n-range", ns, MAX_LENGTH), ("--block-range", block_values,
                                                                MAX_BLOCK)):
        for value in values:
            check_int(flag, value, high=high)
    gpus = parse_names(compare_gpus, "--compare-gpus") if compare_gpus else default_compare_gpus(
        workload.dtype, params["profile"])
    arguments = compare_arguments(params)
    # a physically impossible SRAM is refused before anything is written (one compare: ms)
    refuse_impossible_sram(compare(workload, params["gpu"], **arguments), params["force"])
    sram, profile = arguments.pop("sram"), arguments.pop("profile")
    rest = command_words(ctx, {**params, "n_range": n_range, "block_range": block_range,
                               "compare_gpus": compare_gpus, "gpu": None})
    words = ["iosim", "report", "--gpu", params["gpu"], "--out", str(out_dir), *rest]
    request = ReportRequest(params["gpu"], workload, ns, block_values, gpus, sram, profile,
                            shlex.join(words), arguments, subject=model_subject(params))
    report = build_report(request, out_dir, force=params["force"])
    click.echo(f"wrote {len(report.files)} files to {out_dir}/ (open {out_dir / 'index.html'})")
