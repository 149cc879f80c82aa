"""`iosim compare`: one workload, every algorithm, one GPU."""

from __future__ import annotations

import click

from iosim.analysis.compare import compare
from iosim.cli import cli
from iosim.cli.common import (
    comma_list,
    format_option,
    gpu_option,
    tiling_options,
    wide_option,
    workload_options,
)
from iosim.inputs.workload import PASSES, Workload


@cli.command("compare")
@gpu_option
@workload_options
@tiling_options
@click.option("--algo", default=None, metavar="LIST",
              help="Algorithms, comma-separated: standard,flash1,flash2,splitkv (default: the "
                   "first three, and splitkv too when --n is 1).")
@click.option("--pass", "pass_", type=click.Choice(list(PASSES)), default="fwd", show_default=True,
              help="Forward, backward, or both (a training step).")
@click.option("--sparsity", type=float, default=None, metavar="S",
              help="Block-sparse FlashAttention: fraction of non-zero blocks in (0, 1] "
                   "(tiled algorithms; standard stays dense).")
@click.option("--splits", type=int, default=None,
              help="splitkv's KV splits, 1 to the number of key blocks (default: "
                   "FlashAttention-2's heuristic for the GPU's SMs).")
@click.option("--profile", type=click.Choice(["spec", "measured"]), default="spec",
              show_default=True, help="Datasheet roofs, or the calibrated ones of the YAML.")
@format_option
@wide_option
def compare_command(gpu: str, n: int, n_kv: int | None, d: int, heads: int,
                    kv_heads: int | None, batch: int, dtype: str, causal: bool,
                    unfused: str | None, block_q: int | None, block_kv: int | None,
                    sram: str | None, sram_elements: int | None, algo: str | None,
                    pass_: str, sparsity: float | None, splits: int | None, profile: str,
                    fmt: str, wide: bool) -> None:
    """Traffic, FLOPs, roofline bound and time of each algorithm, per kernel and per tensor.

    \b
    Example:
      iosim compare --n 4096 --gpu a100
      iosim compare --n 4096 --gpu my-gpu.yaml --sram-elements 65536 --format json
      iosim compare --n 1024 --heads 16 --batch 64 --gpu a100-40gb-sxm --pass fwdbwd
      iosim compare --n 1 --n-kv 32768 --d 128 --heads 32 --kv-heads 8 --gpu h100
    """
    workload = Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv_heads, batch=batch,
                        dtype=dtype, causal=causal, unfused=tuple(comma_list(unfused) or ()),
                        pass_=pass_,  # type: ignore[arg-type]
                        sparsity=1.0 if sparsity is None else sparsity)
    result = compare(workload, gpu, algorithms=comma_list(algo), block_q=block_q,
                     block_kv=block_kv, sram=sram, sram_elements=sram_elements,
                     profile=profile, splits=splits)  # type: ignore[arg-type]
    from iosim.output import render

    if fmt == "json":
        click.echo(render.comparison_json(result))
    elif fmt == "csv":
        click.echo(render.comparison_csv(result), nl=False)
    elif fmt == "markdown":
        click.echo(render.comparison_markdown(result), nl=False)
    else:
        render.print_comparison(result, render.make_console(), wide=wide)
