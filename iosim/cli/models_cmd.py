"""`iosim models`: the shipped model presets and their sources."""

from __future__ import annotations

import click

from iosim.cli import cli
from iosim.cli.catalog import echo_catalogue, format_option
from iosim.inputs.model_files import list_models, resolve_model


@cli.group("models", invoke_without_command=True)
@format_option
@click.pass_context
def models_command(ctx: click.Context, fmt: str) -> None:
    """List the model presets of --model: heads, KV heads, head dims, layers, windows, MLA.

    \b
    Example:
      iosim models
      iosim models show gemma-3-12b
    """
    if ctx.invoked_subcommand is not None:
        return
    from iosim.output import render_models

    models = list_models()
    echo_catalogue(fmt, lambda: [render_models.model_dict(m) for m in models],
                   lambda: [render_models.models_table(models)])


@models_command.command("show")
@click.argument("name")
@format_option
def models_show(name: str, fmt: str) -> None:
    """Every figure of one model (a name, an alias or a YAML path) with its source."""
    from iosim.output import render_models

    model = resolve_model(name)
    echo_catalogue(fmt, lambda: render_models.model_dict(model),
                   lambda: [render_models.model_detail(model)])
