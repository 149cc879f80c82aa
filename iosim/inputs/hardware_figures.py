"""One figure of a GPU YAML ({value, source, estimate, note}) and a mapping of them per dtype
(peak_flops), read strictly into SI units: the shape hardware_yaml.py reads at the top level
and hardware_measured.py under `measured`."""

from __future__ import annotations

from typing import Any

from iosim.errors import ConfigError
from iosim.inputs.excerpts import clip, excerpt
from iosim.inputs.hardware import PEAK_DTYPES, Figure
from iosim.inputs.limits import MAX_SM_COUNT, check_figure
from iosim.inputs.safe_yaml import refuse_unknown_keys, yaml_kind
from iosim.inputs.units import parse_quantity

_FIGURE_KEYS = {"value", "source", "estimate", "note"}


def read_figure(path: str, key: str, raw: Any, dimension: str) -> Figure:
    """`key` of the file at `path`: {value, source, estimate, note}, its value a quantity of
    `dimension` (parse_quantity's) or, for "count", a whole number from 1 to MAX_SM_COUNT."""
    if not isinstance(raw, dict):
        raise ConfigError(path, key, f"expected a mapping {{value: ..., source: ...}}, got "
                                     f"{yaml_kind(raw)}")
    refuse_unknown_keys(path, key, raw, _FIGURE_KEYS)
    if "value" not in raw:
        raise ConfigError(path, f"{key}.value", "missing")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source",
                          "missing; every figure needs a source (or estimate: true and a reason)")
    estimate = raw.get("estimate", False)
    if not isinstance(estimate, bool):
        raise ConfigError(path, f"{key}.estimate", "must be true or false")
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise ConfigError(path, f"{key}.note", "must be text")
    value = raw["value"]
    if dimension == "count":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"{key}.value", f"must be a whole number, got {yaml_kind(value)}")
        if not 1 <= value <= MAX_SM_COUNT:
            raise ConfigError(path, f"{key}.value", f"must be a whole number from 1 to "
                                                    f"{MAX_SM_COUNT:,}, got {excerpt(value)}")
        number = float(value)
    else:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(path, f"{key}.value", f"must be a number or a quantity such as "
                                                    f"'2039 GB/s', got {yaml_kind(value)}")
        try:
            number = parse_quantity(value, dimension)
        except (ValueError, OverflowError) as exc:
            raise ConfigError(path, f"{key}.value", str(exc)) from None
    if not number > 0:
        raise ConfigError(path, f"{key}.value", f"must be positive, got {excerpt(value)}")
    problem = check_figure(number, value)
    if problem is not None:
        raise ConfigError(path, f"{key}.value", problem)
    return Figure(number, source.strip(), estimate, note)


def read_peak_figures(path: str, key: str, raw: Any, *, required: bool,
                      extra: tuple[str, ...] = ()) -> dict[str, Figure]:
    """`key` of the file at `path`: a mapping dtype -> figure in FLOP/s (non-empty where
    `required`), its keys the dtypes of PEAK_DTYPES and `extra`."""
    allowed = (*PEAK_DTYPES, *extra)
    if not isinstance(raw, dict) or (required and not raw):
        raise ConfigError(path, key, f"expected a mapping of dtype -> figure ({', '.join(allowed)})")
    for dtype in raw:
        if dtype not in allowed:
            raise ConfigError(path, f"{key}.{clip(dtype)}",
                              f"unknown dtype; allowed: {', '.join(allowed)}")
    return {dtype: read_figure(path, f"{key}.{dtype}", fig, "flops_per_s")
            for dtype, fig in raw.items()}
