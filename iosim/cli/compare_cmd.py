"""`iosim compare`: one workload, every algorithm, one GPU."""

from __future__ import annotations

from typing import Any

import click

from iosim.analysis.cascade_verdict import cascade_verdict
from iosim.analysis.compare import compare
from iosim.cli import cli
from iosim.cli.common import (
    compare_arguments,
    comparison_options,
    format_option,
    refuse_impossible_sram,
    split_choice,
    splits_auto,
    wide_option,
    workload_from,
)


@cli.command("compare")
@comparison_options
@format_option
@wide_option
def compare_command(fmt: str, wide: bool, **params: Any) -> None:
    """Traffic, FLOPs, roofline bound and time of each algorithm, per kernel and per tensor.

    \b
    Example:
      iosim compare --n 4096 --gpu a100
      iosim compare --n 4096 --gpu my-gpu.yaml --sram-elements 65536 --format json
      iosim compare --n 1024 --heads 16 --batch 64 --gpu a100-40gb-sxm --pass fwdbwd
      iosim compare --n 1 --n-kv 32768 --d 128 --heads 32 --kv-heads 8 --gpu h100
      iosim compare --model gemma-2-9b --n 8192 --gpu h100
      iosim compare --n 1 --n-kv 8192 --d 128 --heads 32 --kv-heads 8 --batch 4 --gpu h200 \\
          --algo splitkv --splits auto
    """
    if params.get("model") is not None or params.get("layer") is not None:
        _compare_model(fmt, wide, params)
        return
    choice = split_choice(params) if splits_auto(params) else None
    arguments = compare_arguments({**params, "splits": None} if choice else params)
    result = compare(workload_from(params), params["gpu"], **arguments)
    if choice is not None:  # splitkv runs the best pick; cascade keeps its own split rule
        from iosim.analysis.split_choice import with_best_pick

        result = with_best_pick(result, choice, **{k: arguments[k] for k in (
            "block_q", "block_kv", "sram", "sram_elements", "profile", "tiles")})
    refuse_impossible_sram(result, params["force"])
    from iosim.output import render

    verdict = cascade_verdict(result, **{k: arguments[k] for k in (
        "sram", "sram_elements", "profile", "tiles")})
    if fmt == "json":
        if choice is None and verdict is None:
            click.echo(render.comparison_json(result))
        else:
            from iosim.output import strict_json

            extra = {**({"splits_auto": choice.to_dict()} if choice else {}),
                     **({"shared_prefix": verdict.to_dict()} if verdict else {})}
            click.echo(strict_json.dumps({**result.to_dict(), **extra}, indent=2,
                                         ensure_ascii=False))
    elif fmt == "csv":
        click.echo(render.comparison_csv(result), nl=False)
    elif fmt == "markdown":
        click.echo(render.comparison_markdown(result), nl=False)
        if choice is not None:
            from iosim.output.render_splits import split_choice_markdown

            click.echo("\n" + split_choice_markdown(choice), nl=False)
        for note in _closing_notes(result, verdict):
            click.echo("\n" + note)
    else:
        plain = _plain_output(result, verdict, wide) if choice is None else None
        if plain is not None:  # the same characters rich would write, laid out without it
            click.echo(plain, nl=False)
            return
        console = render.make_console()
        if wide:  # as _plain_output: no cell cut
            console.width = render.wide_width(result, console.width)
        render.print_comparison(result, console, wide=wide)
        if choice is not None:
            from iosim.output.render_splits import print_split_choice

            print_split_choice(choice, console)
        for note in _closing_notes(result, verdict):
            console.print(note, highlight=False)


def _plain_output(result: Any, verdict: Any, wide: bool) -> str | None:
    """The default output as rich would print it to a pipe or a terminal (output/plain.py), or
    None where plain.py does not know rich's layout (rich draws it then)."""
    from iosim.output.console import plain_width, terminal_width
    from iosim.output.render import plain_comparison

    width, styled = plain_width(), False
    if width is None:
        width, styled = terminal_width(), True
    if width is None:
        return None
    if wide:  # every column, none cut: wider than the terminal where a table needs it
        from iosim.output.render import wide_width

        width = wide_width(result, width)
    # the notes printed as rich prints a str
    return plain_comparison(result, width, wide=wide, styled=styled,
                            notes=_closing_notes(result, verdict))


def _closing_notes(result: Any, verdict: Any) -> list[str]:
    """The sentences after the tables: the shared-prefix verdict, and what paging costs."""
    notes = [verdict.sentence()] if verdict is not None else []
    if result.paging is not None:
        notes.append(result.paging.note[0].upper() + result.paging.note[1:] + ".")
    return notes


def _compare_model(fmt: str, wide: bool, params: dict[str, Any]) -> None:
    """--model: every layer kind (or --layer's), and the whole model's sums."""
    from iosim.analysis.model_compare import compare_model
    from iosim.cli.model_flags import builder, given_fields, model_of
    from iosim.output import render, render_model

    model = model_of(params)
    assert model is not None
    result = compare_model(model, builder(params, workload_from), params["gpu"],
                           given=given_fields(params), latent_kv=bool(params.get("latent_kv")),
                           layer=params.get("layer"), **compare_arguments(params))
    for lc in result.layers:
        refuse_impossible_sram(lc.comparison, params["force"])
    if fmt == "json":
        click.echo(render_model.model_comparison_json(result))
    elif fmt == "csv":
        click.echo(render_model.model_comparison_csv(result), nl=False)
    elif fmt == "markdown":
        click.echo(render_model.model_comparison_markdown(result), nl=False)
    else:
        render_model.print_model_comparison(result, render.make_console(), wide=wide)
