"""calibrate/rules_patched.py: a patched backward model never reads an estimate memoised under
the shipped one, nor the shipped model one memoised under the patch."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest

from iosim.calibrate import backward_fit as B
from iosim.calibrate import fresh_bwd as FB
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate.rules_patched import rules_patched
from iosim.estimates import l2_cutoff


def _memos() -> list[dict[Any, Any]]:
    return [D._MODELS, B._ESTIMATES, FB._FLASH1]


def test_every_memo_is_dropped_on_the_way_in_and_out_and_the_patches_undone() -> None:
    shipped = (l2_cutoff.FILL_SHARE, l2_cutoff.FILL_WIDTH)
    for memo in _memos():
        memo["shipped"] = "an estimate of the shipped model"
    with rules_patched(patch.object(l2_cutoff, "FILL_SHARE", 0.5),
                       patch.object(l2_cutoff, "FILL_WIDTH", 0.25)):
        assert (l2_cutoff.FILL_SHARE, l2_cutoff.FILL_WIDTH) == (0.5, 0.25)
        assert not any(_memos())
        for memo in _memos():
            memo["patched"] = "an estimate of the patched model"
    assert shipped == (l2_cutoff.FILL_SHARE, l2_cutoff.FILL_WIDTH)
    assert not any(_memos())


def test_a_comparison_that_fails_leaves_the_shipped_model() -> None:
    shipped = l2_cutoff.FILL_SHARE
    with pytest.raises(ZeroDivisionError), rules_patched(patch.object(l2_cutoff, "FILL_SHARE", 0.5)):
        FB._FLASH1["patched"] = "an estimate of the patched model"
        _ = 1 / 0
    assert shipped == l2_cutoff.FILL_SHARE and not FB._FLASH1
