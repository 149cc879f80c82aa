"""`iosim verify`: closed form = tile walk = executor, on seeded random data."""

from __future__ import annotations

import json
import sys

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from iosim.analysis.verify import Verification, verify
from iosim.cli import cli
from iosim.cli.common import comma_list
from iosim.execute import EXECUTOR_DTYPES
from iosim.inputs.workload import PASSES, Workload

OK, BAD = "✓", "✗"


def _mark(good: bool) -> str:
    return OK if good else BAD


def _sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def _header(v: Verification) -> Text:
    w = v.workload
    heads = f"{w.heads} heads" + (f" / {w.heads_kv} kv" if w.heads_kv != w.heads else "")
    kv = f" (kv {w.seq_kv})" if w.seq_kv != w.n else ""
    mask = "causal" if w.causal else "non-causal"
    if w.sparsity != 1:
        mask += f", block-sparse s = {w.sparsity:g}"
    extra = f", unfused {','.join(w.unfused)}" if w.unfused else ""
    if "dropout" in w.unfused:
        extra += f" (p = {v.dropout_p:g})"
    tiled = [a for a in v.algorithms if a.block_q is not None]
    lines = [f"workload  batch {w.batch} × {heads}, N {w.n}{kv}, d {w.d}, {mask}, pass {w.pass_}"
             f"{extra}",
             f"data      {v.dtype}, standard normal Q, K, V{', dO' if w.pass_ != 'fwd' else ''}, "
             f"seed {v.seed}"]
    if tiled:
        a = tiled[0]
        both = " (both passes)" if w.pass_ != "fwd" else ""
        lines.append(f"blocks    B_r × B_c = {a.block_q} × {a.block_kv}{both}")
        split = next((x.splits for x in v.algorithms if x.splits is not None), None)
        if split is not None:
            lines.append(f"splits    splitkv: {split} KV split{'s' if split > 1 else ''} per query "
                         f"block" + (", combined by splitkv_combine" if split > 1 else ""))
        lines.append(f"SRAM      {v.sram_bytes:,} B: {v.sram_source}")
    return Text("\n".join(lines))


def _output_table(v: Verification) -> Table:
    table = Table(title="Output and what is held at once", box=box.SIMPLE_HEAD,
                  title_justify="left", pad_edge=False)
    for name, justify in (("algorithm", "left"), ("max |x − standard|", "right"),
                          ("max |x − float64 formula|", "right"),
                          ("scores held at once", "right"), ("SRAM peak", "right"), ("", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    if all(a.name != "standard" for a in v.algorithms):
        table.add_row("standard (reference)", "", _sci(v.standard_max_abs_err_vs_float64),
                      f"{v.standard_peak_scores:,}", "—", "")
    for a in v.algorithms:
        sram = "—" if a.sram_peak_bytes is None else f"{a.sram_peak_bytes:,} B"
        table.add_row(a.name, _sci(a.max_abs_diff_vs_standard), _sci(a.max_abs_err_vs_float64),
                      f"{a.peak_scores:,}", sram, _mark(a.output_agrees))
    return table


def _gradients_table(v: Verification) -> Table:
    table = Table(title="Gradients (backward pass)", box=box.SIMPLE_HEAD, title_justify="left",
                  pad_edge=False)
    for name, justify in (("algorithm", "left"), ("gradient", "left"),
                          ("max |x − standard|", "right"), ("max |x − float64 formula|", "right"),
                          ("largest |float64|", "right"), ("", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for a in v.algorithms:
        for i, g in enumerate(a.gradients):
            table.add_row(a.name if i == 0 else "", g.name, _sci(g.max_abs_diff_vs_standard),
                          _sci(g.max_abs_err_vs_float64), f"{g.scale:.3g}" if g.scale > 1 else "≤ 1",
                          _mark(g.agrees), end_section=i == len(a.gradients) - 1)
    return table


def _counts_table(v: Verification) -> Table:
    table = Table(title="HBM traffic in elements, counted three ways", box=box.SIMPLE_HEAD,
                  title_justify="left", pad_edge=False, padding=0)
    for name, justify in (("algorithm", "left"), ("kernel", "left"), ("tensor", "left"),
                          ("op", "left"), ("closed form", "right"), ("tile walk", "right"),
                          ("executor", "right"), ("", "left")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for a in v.algorithms:
        for i, t in enumerate(a.terms):
            table.add_row(a.name if i == 0 else "", t.kernel, t.tensor, t.op,
                          f"{t.closed_form:,}", f"{t.walk:,}", f"{t.executor:,}", _mark(t.agree))
        closed, walked, executed = a.totals()
        table.add_row("", "total", "", "", f"{closed:,}", f"{walked:,}", f"{executed:,}",
                      _mark(closed == walked == executed), end_section=True)
    return table


def _footer(v: Verification) -> Text:
    lines = ["scores held: standard materialises one head's N_q × N_kv scores, a tiled kernel one "
             "B_r × B_c tile"]
    for a in v.algorithms:
        if a.stream_equal:
            lines.append(f"{a.name}: the executor issued the walk's {a.accesses:,} tile loads and "
                         f"stores one for one, in the same order {OK}")
        else:
            lines.append(f"{a.name}: access streams differ at {a.stream_difference} {BAD}")
    if v.dtype == "float64":
        lines.append("bytes: float64 is not a dtype the model counts bytes for, so counts are "
                     "compared in elements only")
    else:
        good = all(a.bytes_agree for a in v.algorithms)
        lines.append(f"bytes: every tensor the executor stored has the model's bytes per element "
                     f"{_mark(good)}" if good else f"bytes per element differ from the model {BAD}")
    if any(a.gradients for a in v.algorithms):
        lines.append(f"gradients: dK, dV per KV head; tolerance {v.algorithms[0].tolerance:g} × "
                     f"max(1, largest |float64|)")
    if v.ok:
        if any(a.gradients for a in v.algorithms):
            lines.append("All counts agree; every output and gradient equals standard attention's "
                         "to rounding.")
        else:
            lines.append("All counts agree; every output equals standard attention to rounding.")
    else:
        bad = [a.name for a in v.algorithms if not a.ok]
        lines.append(f"MISMATCH in {', '.join(bad)}")
    return Text("\n".join(lines))


def print_verification(v: Verification, console: Console) -> None:
    console.print(_header(v))
    console.print()
    console.print(_output_table(v))
    if any(a.gradients for a in v.algorithms):
        console.print(_gradients_table(v))
    console.print(_counts_table(v))
    console.print(_footer(v))


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
@click.option("--heads", type=int, default=1, show_default=True, help="Query heads.")
@click.option("--kv-heads", type=int, default=None, help="Key/value heads, GQA/MQA (default: --heads).")
@click.option("--batch", type=int, default=1, show_default=True, help="Batch size.")
@click.option("--causal", is_flag=True, help="Causal mask, bottom-right aligned (tiled kernels skip blocks).")
@click.option("--sparsity", type=float, default=1.0, show_default=True,
              help="Block-sparse: the fraction of non-zero blocks, 0 < s <= 1 (standard applies the "
                   "same mask densely).")
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
@click.option("--pass", "pass_", type=click.Choice(list(PASSES)), default="fwd", show_default=True,
              help="Pass to run: forward, backward (its forward runs first, uncounted) or both.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
def verify_command(n: int, n_kv: int | None, d: int, heads: int, kv_heads: int | None, batch: int,
                   causal: bool, sparsity: float, dtype: str, block: int, block_q: int | None,
                   block_kv: int | None, sram: str | None, algo: str | None, splits: int | None,
                   seed: int, unfused: str | None, dropout_p: float, pass_: str,
                   fmt: str) -> None:
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
    """
    workload = Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv_heads, batch=batch,
                        causal=causal, pass_=pass_,  # type: ignore[arg-type]
                        unfused=tuple(comma_list(unfused) or ()), sparsity=sparsity)
    result = verify(workload, algorithms=comma_list(algo), dtype=dtype,
                    block_q=block if block_q is None else block_q,
                    block_kv=block if block_kv is None else block_kv,
                    sram=sram, seed=seed, dropout_p=dropout_p, splits=splits)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        from iosim.output import render

        print_verification(result, render.make_console())
    if not result.ok:
        sys.exit(1)
