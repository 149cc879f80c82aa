"""SweepResult.columns() refuses arguments it would slice wrongly: a negative start or count was
sliced from the end (a table of the wrong rows, no error), a float or text was a TypeError, an
algorithm that was not swept a KeyError, and one name given as a string was read letter by
letter (review7 left these)."""

from __future__ import annotations

import pytest

import iosim


@pytest.fixture(scope="module")
def grid() -> iosim.SweepResult:
    return iosim.sweep(iosim.SweepSpec(n=(1024, 2048, 4096), gpu=("h200",)))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"start": -1}, "start must be at least 0"),
    ({"max_points": -1}, "max_points must be at least 0"),
    ({"start": "x"}, "start must be a whole number"),
    ({"max_points": 1.5}, "max_points must be a whole number"),
    ({"start": True}, "start must be a whole number"),
    ({"start": 4}, "start=4 is past the sweep's 3 points"),
    ({"algorithms": ["nope"]}, "unknown swept algorithm 'nope'"),
    ({"algorithms": "flash2"}, "algorithms must be a list of swept algorithm names"),
])
def test_a_wrong_argument_is_one_iosim_error(grid, kwargs, message):
    with pytest.raises(iosim.IosimError, match=message):
        grid.columns(**kwargs)


def test_the_right_arguments_cut_the_rows_they_name(grid):
    # 3 points x 3 algorithms: start 1, one point -> that point's 3 rows, n = 2048
    rows = grid.columns(start=1, max_points=1)
    assert list(rows["n"]) == [2048] * 3
    assert list(grid.columns(algorithms=("flash2",))["algorithm"]) == ["flash2"] * 3
    assert len(grid.columns(start=3)["n"]) == 0  # the end: an empty table, not an error
