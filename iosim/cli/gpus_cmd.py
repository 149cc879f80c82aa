"""`iosim gpus`: the shipped GPU models and their sources."""

from __future__ import annotations

import click

from iosim.cli import cli
from iosim.inputs.gpus import list_hardware, resolve_hardware
from iosim.output import strict_json


@cli.group("gpus", invoke_without_command=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.pass_context
def gpus_command(ctx: click.Context, fmt: str) -> None:
    """List the shipped GPU models: name, aliases, HBM bandwidth, SRAM, peak fp16.

    \b
    Example:
      iosim gpus
      iosim gpus show h100
    """
    if ctx.invoked_subcommand is not None:
        return
    from iosim.output import render, render_gpus

    hardware = list_hardware()
    if fmt == "json":
        click.echo(strict_json.dumps([render_gpus.gpu_dict(h) for h in hardware], indent=2,
                                     ensure_ascii=False))
        return
    render.make_console().print(render_gpus.gpus_table(hardware))


@gpus_command.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def gpus_show(name: str, fmt: str) -> None:
    """Every figure of one GPU (a name, an alias or a YAML path) with its source."""
    from iosim.output import render, render_gpus

    resolved = resolve_hardware(name)
    if fmt == "json":
        click.echo(strict_json.dumps(render_gpus.gpu_dict(resolved.hardware), indent=2,
                                     ensure_ascii=False))
        return
    console = render.make_console()
    if resolved.note:
        console.print(f"({resolved.note})")
    console.print(render_gpus.gpu_detail(resolved.hardware))
