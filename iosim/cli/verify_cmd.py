"""`iosim verify`: closed form = tile walk = executor, on seeded random data."""

from __future__ import annotations

import sys

import click

from iosim.analysis.verify import verify
from iosim.cli import cli
from iosim.cli.common import (
    comma_list,
    decoding_fields,
    decoding_options,
    mask_options,
    parse_seqlens,
    typed,
)
from iosim.cli.lists import Choice
from iosim.cli.model_flags import model_options, workload_of
from iosim.errors import IosimError, arg
from iosim.execute import EXECUTOR_DTYPES
from iosim.inputs.workload import PASSES
from iosim.output import strict_json

VERIFY_DTYPES = {"fp16": "float16", "fp32": "float32", "fp64": "float64",
                 **{name: name for name in EXECUTOR_DTYPES}}
"""The vocabulary of every other command (fp16, fp32) and the executor's NumPy names."""


def executor_dtype(value: str) -> str:
    """--dtype fp16|fp32|fp64 (or float16|float32|float64) as the executor's NumPy name."""
    key = value.strip().lower()
    if key in VERIFY_DTYPES:
        return VERIFY_DTYPES[key]
    if key == "bf16":
        raise click.BadParameter("bf16 has no NumPy type for the executor to compute in; use "
                                 "fp16 (bf16 moves the same 2 bytes per element, so its counts "
                                 "are fp16's).", param_hint="'--dtype'")
    from iosim.inputs.suggest import did_you_mean

    raise click.BadParameter(f"'{value}' is not a dtype the executor runs.{did_you_mean(key, VERIFY_DTYPES)} "
                             f"Use fp16, fp32 or fp64.", param_hint="'--dtype'")


@cli.command("verify")
@click.option("--n", "n", type=int, required=True, help="Query sequence length N.")
@click.option("--n-kv", type=int, default=None, help="Key/value length (default: --n).")
@click.option("--d", "d", type=int, default=64, show_default=True, help="Head dimension.")
@click.option("--d-v", "d_v", type=int, default=None,
              help="Head dimension of V and O (default: --d).")
@click.option("--latent-kv", is_flag=True,
              help="MLA's latent cache: V is the first --d-v columns of K (--kv-heads 1).")
@click.option("--fp8-scales", type=Choice(["tensor", "block"]), default=None,
              help="Count the workload as FP8 (e4m3, FA3's forward) with these descale "
                   "factors; the executor quantises and dequantises (its numbers stay --dtype).")
@click.option("--heads", type=int, default=1, show_default=True, help="Query heads.")
@click.option("--kv-heads", type=int, default=None, help="Key/value heads, GQA/MQA (default: --heads).")
@click.option("--batch", type=int, default=1, show_default=True, help="Batch size.")
@click.option("--causal", is_flag=True, help="Causal mask, bottom-right aligned (tiled kernels skip blocks).")
@click.option("--sparsity", type=float, default=1.0, show_default=True,
              help="Block-sparse: the fraction of non-zero blocks, 0 < s <= 1 (standard applies the "
                   "same mask densely).")
@mask_options
@click.option("--dtype", default="fp64", show_default=True, metavar="fp16|fp32|fp64",
              callback=lambda ctx, param, value: executor_dtype(value),
              help="The executor's numbers (fp16 accumulates in fp32); float16, float32 and "
                   "float64 are aliases.")
@click.option("--block", type=click.IntRange(min=1), default=64, show_default=True,
              help="B_r = B_c, rows per query block and per key/value block.")
@click.option("--block-q", type=click.IntRange(min=1), default=None, help="B_r, overriding --block.")
@click.option("--block-kv", type=click.IntRange(min=1), default=None,
              help="B_c, overriding --block.")
@click.option("--sram", default=None, metavar="SIZE",
              help="SRAM budget per program, e.g. 32KiB (default: the working set of the blocks).")
@click.option("--algo", default=None, metavar="LIST",
              help="Algorithms, comma-separated: standard,flash1,flash2,splitkv (default: all that "
                   "have executors for the pass).")
@click.option("--splits", type=int, default=None,
              help="splitkv's KV splits per query block (default: 2, or 1 with one key block).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random data.")
@click.option("--unfused", default=None, metavar="LIST",
              help="Standard's extra N×N kernels: any of scale,mask,dropout.")
@click.option("--dropout-p", type=float, default=0.1, show_default=True,
              help="Dropout probability when dropout is listed in --unfused.")
@click.option("--pass", "pass_", type=Choice(list(PASSES)), default="fwd", show_default=True,
              help="Pass to run: forward, backward (its forward runs first, uncounted) or both.")
@click.option("--format", "fmt", type=Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
@decoding_options
@model_options
@click.pass_context
def verify_command(ctx: click.Context, /, n: int, n_kv: int | None, d: int, d_v: int | None,
                   latent_kv: bool, fp8_scales: str | None, heads: int,
                   kv_heads: int | None, batch: int,
                   causal: bool, sparsity: float, window: int | None, seqlens: str | None,
                   packing: str, dtype: str, block: int, block_q: int | None,
                   block_kv: int | None, sram: str | None, algo: str | None, splits: int | None,
                   seed: int, unfused: str | None, dropout_p: float, pass_: str,
                   fmt: str, model: str | None, layer: str | None, page_size: int | None,
                   prefix_len: int | None, suffix_lens: str | None) -> None:
    """Prove the counts: closed form = tile walk = NumPy executor, and the output exact.

    Runs each algorithm on seeded random data through an instrumented HBM that counts every
    element read and written, and compares those counts, term by term, with the closed form and
    the tile walk; with --pass bwd|fwdbwd it checks the gradients dQ, dK, dV too. Exit status 1
    if anything disagrees, 2 for bad input.

    \b
    Example:
      iosim verify --n 256 --d 16 --block 64 --algo flash1
      iosim verify --n 300 --n-kv 200 --causal --heads 4 --kv-heads 2 --block-q 48 --block-kv 32
      iosim verify --n 256 --d 16 --block 64 --pass fwdbwd
      iosim verify --n 1 --n-kv 4096 --heads 8 --kv-heads 2 --algo splitkv --splits 4
      iosim verify --model llama-3.2-1b --n 128 --block 64
    """
    if typed("dropout_p") and "dropout" not in (comma_list(unfused) or ()):
        # the probability of a kernel that does not run would be silently ignored
        raise IosimError(f"{arg('dropout_p', dropout_p)} is the probability of the unfused "
                         f"dropout kernel; add {arg('unfused', 'dropout')} or drop "
                         f"{arg('dropout_p')}", param="dropout_p")
    fields = dict(n_kv=n_kv, d=d, heads=heads, kv_heads=kv_heads, batch=batch, causal=causal,
                  pass_=pass_, unfused=tuple(comma_list(unfused) or ()), sparsity=sparsity,
                  d_v=d_v, latent_kv=latent_kv, fp8_scales=fp8_scales,
                  dtype="fp8_e4m3" if fp8_scales else "fp16", window=window,
                  seqlens=parse_seqlens(seqlens), packing=packing)
    fields.update(decoding_fields({"n_kv": n_kv, "batch": batch, "page_size": page_size,
                                   "prefix_len": prefix_len, "suffix_lens": suffix_lens}))
    workload = workload_of(n, fields, {**ctx.params, "model": model, "layer": layer}, ctx)
    result = verify(workload, algorithms=comma_list(algo), dtype=dtype,
                    block_q=block if block_q is None else block_q,
                    block_kv=block if block_kv is None else block_kv,
                    sram=sram, seed=seed, dropout_p=dropout_p, splits=splits)
    if fmt == "json":
        click.echo(strict_json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        from iosim.output import render
        from iosim.output.render_verify import print_verification

        print_verification(result, render.make_console())
    if not result.ok:
        sys.exit(1)
