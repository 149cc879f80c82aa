"""The attention algorithms iosim counts, each written once as its loop nest."""

from __future__ import annotations

from iosim.algorithms.base import Algorithm
from iosim.algorithms.cascade import Cascade
from iosim.algorithms.flash1 import Flash1
from iosim.algorithms.flash2 import Flash2
from iosim.algorithms.splitkv import SplitKV
from iosim.algorithms.standard import Standard
from iosim.algorithms.triton_bwd import TritonKernels
from iosim.errors import IosimError
from iosim.inputs.excerpts import excerpt

ALGORITHMS: dict[str, Algorithm] = {
    a.name: a for a in (Standard(), Flash1(), Flash2(), SplitKV(), TritonKernels(), Cascade())}
DEFAULT_ALGORITHMS: tuple[str, ...] = ("standard", "flash1", "flash2")
"""What `compare` runs when not told: splitkv joins them for a decoding step (N = 1)."""


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm named `name` (case and spaces ignored); IosimError if none."""
    if not isinstance(name, str):
        raise IosimError(f"an algorithm is named by text, got {excerpt(name)}; use any of "
                         f"{', '.join(ALGORITHMS)}", param="algorithms")
    try:
        return ALGORITHMS[name.strip().lower()]
    except KeyError:
        from iosim.inputs.suggest import did_you_mean

        raise IosimError(
            f"unknown algorithm {excerpt(name)}.{did_you_mean(name, ALGORITHMS)} Use any of "
            f"{', '.join(ALGORITHMS)} (comma-separated)"
        ) from None


__all__ = ["ALGORITHMS", "DEFAULT_ALGORITHMS", "Algorithm", "get_algorithm"]
