"""`iosim explain`: the ideas behind the counts, worked on small numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from iosim.analysis.explain import SoftmaxTrace, online_softmax, parse_scores, parse_values
from iosim.cli import cli


@cli.group("explain")
def explain_group() -> None:
    """Worked examples of what FlashAttention does, step by step.

    \b
    Example:
      iosim explain softmax --scores 2,1,0,3 --block 2
    """


def _g(x: float) -> str:
    return "−∞" if x == -math.inf else f"{x:g}".replace("-", "−")


def _f(x: float) -> str:
    return f"{x:.4f}".replace("-", "−")


def _vec(v: Sequence[float] | None) -> str:
    return "" if v is None else "[" + ", ".join(_f(x) for x in v) + "]"


def _diff(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def _blocks_table(t: SoftmaxTrace) -> Table:
    table = Table(title=f"Online softmax: {len(t.scores)} scores in blocks of {t.block}",
                  box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for name, justify in (("block", "right"), ("scores", "left"), ("block max", "right"),
                          ("m_old → m_new", "left"), ("rescale", "right"),
                          ("l_old × rescale", "right"), ("+ block sum", "right"),
                          ("= running sum l", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in t.steps:
        first = s.max_before == -math.inf
        table.add_row(str(s.index), ", ".join(_g(x) for x in s.scores), _g(s.block_max),
                      f"{_g(s.max_before)} → {_g(s.max_after)}",
                      "—" if first else _f(s.rescale),
                      "0" if first else _f(s.rescaled_sum), _f(s.block_sum), _f(s.sum_after))
    return table


def _output_table(t: SoftmaxTrace) -> Table:
    table = Table(title="Partial output after each block",
                  box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for name, justify in (("block", "right"), ("Õ = rescale·Õ_old + Σ exp(s − m_new)·v", "left"),
                          ("O = Õ / l", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in t.steps:
        table.add_row(str(s.index), _vec(s.unnormalised), _vec(s.output))
    return table


def _weights_table(t: SoftmaxTrace) -> Table:
    table = Table(title="Final weights next to a one-pass softmax", box=box.SIMPLE_HEAD,
                  title_justify="left", pad_edge=False)
    for name in ("score", "online exp(s − m) / l", "one-pass softmax", "|difference|"):
        table.add_column(name, justify="right")
    for s, w, o in zip(t.scores, t.weights, t.one_pass_weights, strict=True):
        table.add_row(_g(s), _f(w), _f(o), _diff(abs(w - o)))
    return table


LEGEND = ("m = running max, l = running sum, rescale = exp(m_old − m_new) (— on the first block)\n"
          "block sum = Σ exp(s − m_new) over the block's scores")


def print_trace(t: SoftmaxTrace, console: Console) -> None:
    console.print(_blocks_table(t))
    console.print(Text(LEGEND))
    console.print()
    if t.output is not None:
        console.print(_output_table(t))
    console.print(_weights_table(t))
    lines = [f"final max m = {_g(t.final_max)}, sum l = {_f(t.final_sum)}; largest weight "
             f"difference from one pass: {_diff(t.max_weight_difference)}"]
    if t.output is not None and t.one_pass_output is not None:
        lines.append(f"output O: online {_vec(t.output)}, one pass {_vec(t.one_pass_output)}; "
                     f"largest difference {_diff(t.max_output_difference or 0.0)} (float64)")
    console.print(Text("\n".join(lines)))


SEED_SCORES = "2,1,0,3"
"""Seed 000's toy run: "Scores 2, 1, 0 and 3 (illustrative) arrive in two blocks" (block 2)."""


@explain_group.command("softmax")
@click.option("--scores", default=SEED_SCORES, show_default=True, metavar="LIST",
              help="One row of attention scores, comma-separated, e.g. 2,1,0,3 or 1,-2,0.5 "
                   "(default: seed 000's toy run, two blocks of two).")
@click.option("--block", type=int, default=2, show_default=True,
              help="Scores per block (the tile width B_c).")
@click.option("--values", default=None, metavar="VECTORS",
              help="One value vector per score: vectors separated by ';', components by ',' "
                   "(e.g. '1,0;0,1;1,1;2,0'); a plain list of one number per score is scalars.")
def softmax_command(scores: str, block: int, values: str | None) -> None:
    """The online softmax block by block: running max, rescale factor, running sum.

    With --values, also the partial output after each block; then the final weights (and
    output) next to a one-pass softmax.

    \b
    Examples:
      iosim explain softmax
      iosim explain softmax --scores 2,1,0,3 --block 2
      iosim explain softmax --scores 1,3,-2,0.5,2.5,4 --block 3 --values '1,0;0,1;1,1;2,0;0,2;3,1'
    """
    parsed = parse_scores(scores)
    vectors = parse_values(values, len(parsed)) if values is not None else None
    trace = online_softmax(parsed, block, vectors)
    from iosim.output import render

    print_trace(trace, render.make_console())
