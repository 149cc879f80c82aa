"""A Python value's type at the API, checked before it is used: numpy's ints and floats taken
as Python's, a flag a bool, names as a list or one comma-separated string, a name or a
`pathlib.Path`, a whole number in a range, one of a few names, an iosim object where one is
expected. The bounds these checks are given are in limits.py."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from iosim.errors import IosimError, arg
from iosim.inputs.excerpts import excerpt


def _numpy_bool(value: object) -> bool:
    """Whether `value` is numpy's bool (np.bool_; named "bool" since numpy 2), without
    importing numpy."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


def as_whole(value: Any) -> Any:
    """`value` as a Python int when it is a whole number of another integer type (numpy's
    int64, uint32, ...: what `np.arange` and array indexing give), else unchanged, so that the
    checks below accept them and what is stored is a plain int. bool (and numpy's bool_) stay
    as they are: a flag is not a count."""
    if isinstance(value, int) or _numpy_bool(value):
        return value
    index = getattr(type(value), "__index__", None)
    if index is None or isinstance(value, (str, bytes)):
        return value
    try:
        return int(index(value))
    except (TypeError, ValueError):
        return value


def as_real(value: Any) -> Any:
    """`value` as a Python float when it is a real number of another type (numpy's float32 or
    int64), else unchanged; bools stay as they are."""
    if isinstance(value, (bool, int, float)) or _numpy_bool(value):
        return value
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return float(value)  # numpy's float32, int64, ... scalars (numbers.Real, unimported)
    return value


def check_flag(name: str, value: object, *, error: type[IosimError] = IosimError) -> bool:
    """True or False (numpy's bool_ too); anything else, such as the truthy string "no" or
    None, is refused: a flag taken for its truth value would silently mean something else."""
    if isinstance(value, bool):
        return value
    if _numpy_bool(value):
        return bool(value)
    raise error(f"{arg(name)} must be True or False, got {excerpt(value)}", param=name)


def as_names(name: str, value: object, *, error: type[IosimError] = IosimError
             ) -> tuple[str, ...]:
    """A list of names: a sequence of strings, or one string of comma-separated names (as the
    CLI's flags take them), so that "flash2" is one name and not five letters."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(","))
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise error(f"{arg(name)} must be a list of names or one comma-separated string, got "
                f"{excerpt(value)}", param=name)


def check_path_text(name: str, value: object, *, error: type[IosimError] = IosimError) -> str:
    """A name or a file path: a str, or an os.PathLike (pathlib.Path) as its str."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        return value
    raise error(f"{arg(name)} must be a name or a file path (a str or pathlib.Path), got "
                f"{excerpt(value)}", param=name)


def check_int(name: str, value: object, *, low: int = 1, high: int, what: str = "",
              error: type[IosimError] = IosimError) -> int:
    """A whole number in [low, high]; `name` is the parameter (n, block_kv, seed, ...), which
    the CLI spells as its flag. Numpy integers count as whole numbers (as_whole)."""
    value = as_whole(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{arg(name)} must be a whole number, got {excerpt(value)}")
    if value < low:
        raise error(f"{arg(name)} must be at least {low}, got {excerpt(value)}")
    if value > high:
        reason = f" ({what})" if what else ""
        raise error(f"{arg(name, excerpt(value))} is beyond the {high:,} iosim models{reason}; "
                    f"use a value of at most {high:,}")
    return value


def check_instance(name: str, value: object, kind: type, example: str) -> None:
    """`value` is an iosim `kind` (a Workload, Model, Hardware): a str or number given for one
    was an AttributeError deep inside; `example` shows how one is made."""
    if not isinstance(value, kind):
        raise IosimError(f"{arg(name)} must be an iosim.{kind.__name__}, got {excerpt(value)}; "
                         f"e.g. {example}", param=name)


def check_probability(name: str, value: object, *,
                      error: type[IosimError] = IosimError) -> float:
    """A probability in [0, 1) such as dropout_p: a finite real number, not a bool."""
    value = as_real(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= value < 1.0:
        raise error(f"{arg(name)} must be in [0, 1) (a number), got {excerpt(value)}", param=name)
    return float(value)


def check_choice(name: str, value: object, choices: Sequence[str], *, what: str,
                 error: type[IosimError] = IosimError) -> str:
    """One of `choices`, a str (an array or list compared with `in` was a ValueError or a
    TypeError); `what` names it in the message ("tile rule", "profile")."""
    if isinstance(value, str) and value in choices:
        return value
    raise error(f"unknown {what} {excerpt(value)}; use {' or '.join(choices)}", param=name)
