"""`iosim gpus`: the shipped GPU models and their sources."""

from __future__ import annotations

import click

from iosim.cli import cli
from iosim.cli.catalog import echo_catalogue, format_option
from iosim.inputs.gpus import list_hardware, resolve_hardware


@cli.group("gpus", invoke_without_command=True)
@format_option
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
    from iosim.output import render_gpus

    hardware = list_hardware()
    echo_catalogue(fmt, lambda: [render_gpus.gpu_dict(h) for h in hardware],
                   lambda: [render_gpus.gpus_table(hardware)])


@gpus_command.command("show")
@click.argument("name")
@format_option
def gpus_show(name: str, fmt: str) -> None:
    """Every figure of one GPU (a name, an alias or a YAML path) with its source."""
    from iosim.output import render_gpus

    resolved = resolve_hardware(name)
    echo_catalogue(fmt, lambda: render_gpus.gpu_dict(resolved.hardware),
                   lambda: ([f"({resolved.note})"] if resolved.note else [])
                   + [render_gpus.gpu_detail(resolved.hardware)])
