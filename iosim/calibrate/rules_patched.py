"""The backward model with some of its rules or constants patched, for a comparison: an earlier
rule for a report's "before" column, another constant for a sensitivity or a fit's grid.

The calibration memoises estimates (torch_bwd_dram's models, backward_fit's per-point kernel
bytes, fresh_bwd's Algorithm 4 estimates); one computed under the patched model must never be
read under the shipped one, nor the reverse, so every memo is dropped on the way in and on the
way out. Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any


def forget_estimates() -> None:
    """Drop every memoised backward estimate (after a rule or constant of the model changed)."""
    # imported here: fresh_bwd itself patches its rules through this module
    from iosim.calibrate import backward_fit as B
    from iosim.calibrate import fresh_bwd as FB
    from iosim.calibrate import torch_bwd_dram as D

    D.forget_models()
    B._ESTIMATES.clear()
    FB._FLASH1.clear()


@contextmanager
def rules_patched(*patches: AbstractContextManager[Any]) -> Iterator[None]:
    """Inside: the model with `patches` (unittest.mock patch objects, entered in order) applied,
    every memo of estimates dropped before and after."""
    forget_estimates()
    try:
        with ExitStack() as stack:
            for p in patches:
                stack.enter_context(p)
            yield
    finally:
        forget_estimates()
