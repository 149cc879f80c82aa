"""Lists and ranges on the command line: `--n 512..65536`, `--d 64,128`, `--block-kv auto,64..512`.

Grammar (a value is a comma-separated list of items, each a number or a range):

    512            one value
    512..65536     doubling: 512, 1024, 2048, ... up to and including 65536 (the end is kept
                   only if the doubling reaches it: 100..1000 is 100, 200, 400, 800)
    64..512:64     arithmetic, step 64: 64, 128, 192, ..., 512
    64..4096*4     geometric, factor 4: 64, 256, 1024, 4096
    auto           (block sizes, SRAM) the default rule, where the flag allows it

Values keep the order given; repeats are dropped. A descending or empty range, a step below 1, a
factor below 2, a non-number or an empty item is refused with one line naming the flag.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import click

from iosim.inputs.excerpts import clip, excerpt
from iosim.inputs.units import parse_quantity

MAX_VALUES = 10_000
"""Values one flag may expand to (guards `1..1000000000:1` before it is built)."""

_RANGE = re.compile(r"^(?P<start>[^.]+)\.\.(?P<stop>[^:*]*)(?:(?P<kind>[:*])(?P<by>.*))?$")

HELP = ("N, a list 1024,4096 or a range: a..b doubles (512..65536), a..b:s steps by s, "
        "a..b*k multiplies by k")


def _integer(text: str) -> int:
    text = text.strip().replace("_", "")
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f"{excerpt(text)} is not a whole number")
    return int(text)


def _size(text: str) -> int:
    """A size such as 96KiB or 98304 (bytes)."""
    try:
        value = parse_quantity(text.strip(), "bytes")
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    if not math.isfinite(value) or value != int(value):
        raise ValueError(f"{excerpt(text.strip())} is not a whole number of bytes")
    return int(value)


def parse_list(
    text: str, flag: str, *, number: Callable[[str], int] = _integer, minimum: int = 1,
    auto: bool = False,
) -> tuple[int | None, ...]:
    """Expand a list/range value; raises click.BadParameter (one line, exit 2) when it is bad.

    `auto` allows the word auto, returned as None (the flag's default rule).
    """
    try:
        return _expand(text, number=number, minimum=minimum, auto=auto)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}. {_usage(auto)}", param_hint=f"'{flag}'") from None


def _usage(auto: bool) -> str:
    extra = "; auto = the default rule" if auto else ""
    return (f"Write a list such as 64,128 or a range: 512..65536 (doubling), 64..512:64 (step) "
            f"or 64..4096*4 (factor){extra}.")


def _expand(text: str, *, number: Callable[[str], int], minimum: int,
            auto: bool) -> tuple[int | None, ...]:
    if not text.strip():
        raise ValueError("no values given")
    out: list[int | None] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise ValueError(f"empty item in {excerpt(text)}")
        if item.lower() == "auto":
            if not auto:
                raise ValueError("'auto' is not allowed here")
            out.append(None)
            continue
        match = _RANGE.match(item)
        if match is None:
            value = number(item)
            _at_least(value, minimum, item)
            out.append(value)
            continue
        out.extend(_range(item, match, number, minimum))
        if len(out) > MAX_VALUES:
            raise ValueError(f"{excerpt(item)} expands to more than {MAX_VALUES:,} values; use a larger "
                             f"step or factor")
    return tuple(dict.fromkeys(out))


def _range(item: str, match: re.Match[str], number: Callable[[str], int],
           minimum: int) -> list[int]:
    if not match.group("stop").strip():
        raise ValueError(f"range {excerpt(item)} has no end; write e.g. 512..65536")
    start, stop = number(match.group("start")), number(match.group("stop"))
    _at_least(start, minimum, item)
    if stop < start:
        raise ValueError(f"range {excerpt(item)} is descending (empty); write the smaller end first: "
                         f"{clip(match.group('stop').strip(), 30)}..{clip(match.group('start').strip(), 30)}")
    kind, by_text = match.group("kind"), match.group("by")
    if kind == ":":
        step = _integer(by_text or "")
        if step < 1:
            raise ValueError(f"range {excerpt(item)} needs a step of at least 1, got {step}")
        if (stop - start) // step + 1 > MAX_VALUES:
            raise ValueError(f"{excerpt(item)} expands to more than {MAX_VALUES:,} values; use a "
                             f"larger step")
        return list(range(start, stop + 1, step))
    factor = 2 if kind is None else _integer(by_text or "")
    if factor < 2:
        raise ValueError(f"range {excerpt(item)} needs a factor of at least 2, got {factor}")
    if start < 1:
        raise ValueError(f"geometric range {excerpt(item)} must start at 1 or more")
    values = []
    value = start
    while value <= stop:
        values.append(value)
        value *= factor
    return values


def _at_least(value: int, minimum: int, item: str) -> None:
    if value < minimum:
        raise ValueError(f"{excerpt(item)} must be at least {minimum}")


def parse_sizes(text: str, flag: str, *, auto: bool = True) -> tuple[int | None, ...]:
    """A list/range of sizes: 64KiB,128KiB or 32KiB..256KiB (doubling); plain numbers are bytes."""
    return parse_list(text, flag, number=_size, auto=auto)


def parse_fractions(text: str, flag: str) -> tuple[float, ...]:
    """A comma-separated list of fractions in (0, 1], e.g. 0.125,0.25,1 (no ranges)."""
    out = []
    for raw in text.split(","):
        item = raw.strip()
        try:
            value = float(item)
        except ValueError:
            shown = f"{excerpt(item)}" if item else "an empty item"
            raise click.BadParameter(f"{shown} is not a number; write fractions such as "
                                     f"0.25,0.5,1.", param_hint=f"'{flag}'") from None
        if not 0 < value <= 1:
            raise click.BadParameter(f"{excerpt(item)} is not in (0, 1]; write fractions such as "
                                     f"0.25,0.5,1.", param_hint=f"'{flag}'")
        out.append(value)
    return tuple(dict.fromkeys(out))


def parse_choices(text: str, flag: str, choices: Sequence[str]) -> tuple[str, ...]:
    """A comma-separated list of names from `choices` (case-insensitive), repeats dropped."""
    out = []
    for raw in text.split(","):
        item = raw.strip().lower()
        if item not in choices:
            shown = f"'{raw.strip()}'" if raw.strip() else "an empty item"
            raise click.BadParameter(f"{shown} is not one of {', '.join(choices)}."
                                     f"{_did_you_mean(raw, choices)}", param_hint=f"'{flag}'")
        out.append(item)
    return tuple(dict.fromkeys(out))


_BOOLEAN = {"yes": True, "on": True, "true": True, "1": True,
            "no": False, "off": False, "false": False, "0": False}


def parse_booleans(text: str, flag: str) -> tuple[bool, ...]:
    """yes/no (on/off, true/false, 1/0), comma-separated: `--causal no,yes` sweeps both."""
    out = []
    for raw in text.split(","):
        item = raw.strip().lower()
        if item not in _BOOLEAN:
            raise click.BadParameter(f"'{raw.strip()}' is not yes or no; write e.g. "
                                     f"{flag} no,yes to sweep both.", param_hint=f"'{flag}'")
        out.append(_BOOLEAN[item])
    return tuple(dict.fromkeys(out))


def parse_names(text: str, flag: str) -> tuple[str, ...]:
    """Free names (GPUs): comma-separated, none empty, repeats dropped."""
    items = [raw.strip() for raw in text.split(",")]
    if not all(items):
        raise click.BadParameter(f"empty item in '{text}'.", param_hint=f"'{flag}'")
    return tuple(dict.fromkeys(items))


def describe(values: Sequence[Any]) -> str:
    """A list flag's values as the user could type them back ("auto" for the default, None)."""
    return ",".join("auto" if v is None else str(v) for v in values)


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    from iosim.inputs.suggest import did_you_mean  # difflib: imported only for a mistake

    return did_you_mean(word, choices) if word.strip() else ""


class Choice(click.Choice):  # type: ignore[type-arg]  # generic from click 8.2 only
    """click.Choice whose refusal also suggests the closest choices ('fp8e4m3' -> fp8_e4m3)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """click's conversion; a value that is none of the choices gets 'Did you mean ...?'."""
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            hint = _did_you_mean(str(value), [str(c) for c in self.choices])
            if not hint:
                raise
            raise click.BadParameter(f"{exc.message}{hint}", ctx=exc.ctx,
                                     param=exc.param) from None
