"""`iosim models`: the shipped model presets and their sources."""

from __future__ import annotations

import click

from iosim.cli import cli
from iosim.inputs.model_files import list_models, resolve_model
from iosim.output import strict_json


@cli.group("models", invoke_without_command=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
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
    from iosim.output import render, render_models

    models = list_models()
    if fmt == "json":
        click.echo(strict_json.dumps([render_models.model_dict(m) for m in models], indent=2,
                                     ensure_ascii=False))
        return
    render.make_console().print(render_models.models_table(models))


@models_command.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def models_show(name: str, fmt: str) -> None:
    """Every figure of one model (a name, an alias or a YAML path) with its source."""
    from iosim.output import render, render_models

    model = resolve_model(name)
    if fmt == "json":
        click.echo(strict_json.dumps(render_models.model_dict(model), indent=2,
                                     ensure_ascii=False))
        return
    render.make_console().print(render_models.model_detail(model))
