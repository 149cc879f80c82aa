"""Integer arithmetic that works alike on Python ints (one workload) and numpy arrays (sweeps).

Every rule iosim applies to a workload (block sizes, split counts, head packing, block sums) is
written once over these helpers, so that `compare` calls it with ints and `sweep` with int64
arrays that broadcast over a grid. `Int` is either; results keep the type of the inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Int = Any
"""A Python int or a numpy integer array (broadcast together)."""


def is_array(*values: Any) -> bool:
    """Whether any of the values is a numpy array (so the result must be one)."""
    return any(isinstance(v, np.ndarray) for v in values)


def cdiv(a: Int, b: Int) -> Int:
    """⌈a/b⌉ for positive b."""
    return -(-a // b)


def imax(a: Int, b: Int) -> Int:
    """max(a, b), element-wise for arrays."""
    return np.maximum(a, b) if is_array(a, b) else max(a, b)


def imin(a: Int, b: Int) -> Int:
    """min(a, b), element-wise for arrays."""
    return np.minimum(a, b) if is_array(a, b) else min(a, b)


def select(condition: Any, a: Any, b: Any) -> Any:
    """`a` where `condition` holds, else `b` (np.where for arrays)."""
    if is_array(condition, a, b):
        return np.where(condition, a, b)
    return a if condition else b


def both(a: Any, b: Any) -> Any:
    """a and b, element-wise for arrays."""
    return np.logical_and(a, b) if is_array(a, b) else bool(a and b)


def either(a: Any, b: Any) -> Any:
    """a or b, element-wise for arrays."""
    return np.logical_or(a, b) if is_array(a, b) else bool(a or b)


def check_count(name: str, value: object, error: type[Exception] | None = None) -> int:
    """`value` if it is a whole number of at least 1; else raises (IosimError by default) naming
    the parameter `name`. The one check for block sizes, split counts and SRAM sizes."""
    from iosim.errors import IosimError, arg

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise (error or IosimError)(f"{arg(name)} must be a whole number of at least 1, got "
                                    f"{value!r}")
    return int(value)


def at_first(mask: Any, *values: Int) -> tuple[int, ...]:
    """The values at the first point where `mask` holds (ints or broadcast arrays): what an error
    about a grid quotes. `mask` must hold somewhere."""
    shape = np.broadcast_shapes(np.shape(mask), *(np.shape(v) for v in values))
    full = np.broadcast_to(mask, shape)
    at = np.unravel_index(int(np.flatnonzero(full)[0]), shape)
    return tuple(int(np.broadcast_to(v, shape)[at]) for v in values)
