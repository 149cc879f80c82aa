"""`iosim explain`: the ideas behind the counts, worked on small numbers."""

from __future__ import annotations

import click

from iosim.analysis.explain import online_softmax, parse_scores, parse_values
from iosim.cli import cli


@cli.group("explain")
def explain_group() -> None:
    """Worked examples of what FlashAttention does, step by step.

    \b
    Example:
      iosim explain softmax --scores 2,1,0,3 --block 2
    """


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
    from iosim.output.render_explain import print_trace

    print_trace(trace, render.make_console())
