"""What hostile10 (2 Dec 2026) found in the Python API (docs/api.md). Each test is one finding;
its comment says what the call did before (on main at 6d7ab46)."""

from __future__ import annotations

import pytest

import iosim
from iosim.errors import TilingError

W = iosim.Workload(1024)


@pytest.mark.parametrize(("args", "kwargs", "name"), [
    # before: closed_form counted -268,169,216 bytes
    ((-1, 64, 10**5), {}, "block_q"),
    # before: a ZeroDivisionError
    ((0, 64, 10**5), {}, "block_q"),
    # before: 1.5-row blocks counted (179,310,592 bytes)
    ((1.5, 64, 10**5), {}, "block_q"),
    # before: an SRAM of NaN bytes, or of text, taken
    ((64, 64, float("nan")), {}, "sram_bytes"),
    ((64, 64, "abc"), {}, "sram_bytes"),
    ((64, 64, 10**5), {"splits": 0}, "splits"),
    ((64, 64, 10**5), {"bwd_block_kv": -3}, "bwd_block_kv"),
    ((64, 64, 10**5), {"programs_per_sm": 10**9}, "programs_per_sm"),
])
def test_a_tiling_built_in_python_is_checked_as_make_tiling_checks(
        args: tuple[object, ...], kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(TilingError, match=name):
        tiling = iosim.Tiling(*args, "test", "given", **kwargs)  # type: ignore[arg-type]
        iosim.closed_form(iosim.get_algorithm("flash2").kernels(W, tiling), W, tiling)


def test_a_valid_tiling_built_in_python_still_counts() -> None:
    # a guard (passes on main too): the bounds refuse nothing make_tiling would give
    tiling = iosim.Tiling(64, 64, 10**5, "test", "given")
    kernels = iosim.get_algorithm("flash2").kernels(W, tiling)
    assert iosim.closed_form(kernels, W, tiling).bytes > 0
