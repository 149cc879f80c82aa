"""What `iosim gpus` and `iosim models` share: a catalogue of shipped YAMLs, listed or shown one
entry at a time, as tables or as JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from iosim.cli.lists import Choice
from iosim.output import strict_json

format_option = click.option("--format", "fmt", type=Choice(["table", "json"]),
                             default="table", show_default=True)
"""--format table|json of a catalogue command."""


def echo_catalogue(fmt: str, as_json: Callable[[], Any], printables: Callable[[], list[Any]]
                   ) -> None:
    """Print `as_json()` as indented JSON (fmt "json"), else each of `printables()` (rich
    tables or lines) on the console."""
    if fmt == "json":
        click.echo(strict_json.dumps(as_json(), indent=2, ensure_ascii=False))
        return
    from iosim.output import render

    console = render.make_console()
    for printable in printables():
        console.print(printable)
