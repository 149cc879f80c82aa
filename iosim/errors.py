"""Errors the core raises. The CLI turns each into one line and exit status 2.

A core error names the parameters it is about in Python's terms: `Workload(4, heads=4,
kv_heads=3)` raises "kv_heads=3 does not divide heads=4". The message is written once, with
each parameter marked by `arg(name, value)` (or `arg(name)` for the name alone); `str(error)`
spells the marks as Python keywords, and the CLI, through `message_for`, as its flags
("--kv-heads 3 does not divide --heads 4").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

_START, _SEP, _END = "\ue000", "\ue001", "\ue002"
"""Private-use characters around a marked parameter: they never occur in a user's text."""



@cache
def _mark() -> re.Pattern[str]:
    """A marked parameter's pattern, compiled when a message is first spelled (a run without an
    error never needs it: start-up time)."""
    return re.compile(f"{_START}([^{_SEP}{_END}]*)(?:{_SEP}([^{_END}]*))?{_END}")


def arg(name: str, value: object = None) -> str:
    """A parameter inside an error message: `name` (the Python keyword) and its value, if any.

    Returns marked text for an f-string; the error renders it for Python or for the CLI.
    """
    if value is None:
        return f"{_START}{name}{_END}"
    return f"{_START}{name}{_SEP}{value}{_END}"


def python_style(name: str, value: str | None) -> str:
    """`kv_heads=3`, or `kv_heads` alone."""
    return name if value is None else f"{name}={value}"


def render(message: str, style: Callable[[str, str | None], str] = python_style) -> str:
    """The message with every marked parameter spelled by `style(name, value or None)`."""
    return _mark().sub(lambda m: style(m.group(1), m.group(2)), message)


def params_of(message: str) -> tuple[str, ...]:
    """The parameters a marked message names, in order, each once."""
    return tuple(dict.fromkeys(m.group(1) for m in _mark().finditer(message)))


class IosimError(Exception):
    """Bad input or an impossible request; the message says what is wrong and how to fix it.

    `param` is the parameter the error is about (the first one the message names, unless
    given); `message_for(style)` spells the message's parameters another way (the CLI's flags).
    """

    def __init__(self, problem: str = "", *, param: str | None = None) -> None:
        super().__init__(render(problem))
        self.problem = problem
        names = params_of(problem)
        self.param = param if param is not None else (names[0] if names else None)

    def message_for(self, style: Callable[[str, str | None], str]) -> str:
        """The message with its parameters spelled by `style(name, value or None)`."""
        return render(self.problem, style)


class ConfigError(IosimError):
    """A hardware YAML that is malformed, has unknown or missing keys, or wrong values."""

    def __init__(self, path: str, key: str | None, problem: str) -> None:
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.key = key


class UnknownGpuError(IosimError):
    """A --gpu value that is neither a known name, an alias nor a YAML file."""


class NotInResultError(IosimError, KeyError):
    """A result asked for an algorithm it did not run (`Comparison.algorithm("flash2")` of a
    compare whose implementation runs another); a KeyError too, as it was documented."""

    __str__ = Exception.__str__  # the message, not KeyError's quoted repr of it


class WorkloadError(IosimError):
    """A workload that cannot exist (non-positive sizes, kv-heads not dividing heads, ...)."""


class TilingError(IosimError):
    """Block sizes that do not fit in the SRAM, or an SRAM too small for the head dimension."""


class UnknownModelError(IosimError):
    """A --model value that is neither a shipped model, an alias nor a model YAML file."""


class ModelError(IosimError):
    """A model preset that cannot apply: a flag contradicting one of its figures, a layer kind
    it lacks, a form (latent KV) it has no dimensions for."""
