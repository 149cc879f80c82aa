"""The rich console every command prints through.

A terminal keeps its own width. A pipe or file gets $COLUMNS when set (so `COLUMNS=80 iosim ...`
and tests render exactly what an 80-column terminal shows), else `pipe_width` columns; and piped
output carries no trailing spaces (rich pads every table row to the table's width).
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

PIPE_WIDTH = 110
"""Columns of piped output when $COLUMNS is unset: wide enough that prose lines rarely wrap."""


class _RstripWriter:
    """A text stream that drops the spaces at the end of each line it passes on."""

    def __init__(self, target: IO[str]) -> None:
        self._target = target
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._target.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._pending and not self._pending.endswith(" "):
            self._target.write(self._pending)
            self._pending = ""
        self._target.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def pipe_columns(default: int = PIPE_WIDTH) -> int:
    """Columns for output that is not a terminal: $COLUMNS when it is a number ≥ 40, else `default`."""
    columns = env_columns()
    return columns if columns is not None and columns >= 40 else default


def env_columns() -> int | None:
    """$COLUMNS as a whole number, or None when unset or not one: "²" is a digit to
    str.isdigit() and no number to int() (it was a ValueError traceback)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return columns if columns >= 0 else None


def plain_width(*, pipe_width: int = PIPE_WIDTH) -> int | None:
    """The columns of standard output where it is surely no terminal to rich (a pipe or a file:
    $COLUMNS or `pipe_width`), so what rich would print there is plain text (output/plain.py);
    None where rich may see a terminal (isatty, $FORCE_COLOR, $TTY_COMPATIBLE, IPython, IDLE)."""
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        terminal = isatty is None or isatty()
    except ValueError:
        terminal = True
    if (terminal or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ
            or "IPython" in sys.modules or "idlelib" in sys.modules):
        return None
    return pipe_columns(pipe_width)


_STYLE_ENVIRONMENT = ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                      "JUPYTER_COLUMNS", "JUPYTER_LINES")
"""Variables that change what rich writes to a terminal: where one is set, rich draws."""


def terminal_width() -> int | None:
    """The columns rich draws to where standard output is a terminal that rich styles as
    output/plain.py's styled layout does (bold and italic, no colour): rich's own rule for the
    width (the first of stdin, stdout, stderr that is a terminal; $COLUMNS when a number; else
    80). None where rich may write otherwise: no terminal, Windows, a dumb terminal, IPython or
    IDLE, or an environment variable of `_STYLE_ENVIRONMENT`."""
    if (os.name == "nt" or any(name in os.environ for name in _STYLE_ENVIRONMENT)
            or os.environ.get("TERM", "").lower() in ("dumb", "unknown")
            or "IPython" in sys.modules or "idlelib" in sys.modules):
        return None
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    width = None
    for descriptor in (0, 1, 2):
        try:
            width = os.get_terminal_size(descriptor).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    columns = env_columns()
    if columns is not None:
        width = columns
    return width or 80


def make_console(*, pipe_width: int = PIPE_WIDTH, stderr: bool = False) -> Console:
    """A terminal keeps its own width; a pipe or file gets $COLUMNS or `pipe_width` columns."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    probe = Console(file=stream)
    if probe.is_terminal:
        return probe
    # highlight=False: a pipe gets no colours, so the highlighter's regexes over every cell would
    # style text whose styles are then dropped (a third of compare's drawing time); the bytes
    # written are the same.
    return Console(file=_RstripWriter(stream), width=pipe_columns(pipe_width),  # type: ignore[arg-type]
                   highlight=False)


__all__ = ["PIPE_WIDTH", "make_console", "pipe_columns", "plain_width", "terminal_width"]
