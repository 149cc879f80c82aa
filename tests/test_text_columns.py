"""Issue 13 item 5: the chunk-at-once text of output/text_columns.py is, byte for byte, what
writing each cell with Python (`repr` for floats, `str` for integers) gives — on random columns
that hold what a per-cell shortcut would get wrong: inf, nan, -0.0, subnormal and huge floats,
integers beyond 2^53 and at the int64/uint64 ends, names with commas, quotes, non-ASCII and NUL."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from iosim.output import text_columns

SPECIAL_FLOATS = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                  1.7976931348623157e308, 1e16, 9999999999999998.0, 1e-4, 9.999999999999999e-05,
                  0.1, 1 / 3, 2.0 ** 53, 2.0 ** 63, 123456789012345678.0, 1.0, 1e22, 1e23]
SPECIAL_INTS = [0, 1, -1, 9, 10, -10, 2 ** 53, 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 63 - 1, -(2 ** 63)]
NAMES = ["a100-80gb-sxm", "flash2", "a,b", 'say "hi"', "two\nlines", "café", "nul\0inside", ""]


def _random_floats(rng: np.random.Generator, n: int) -> np.ndarray:
    bits = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64)
    scaled = rng.random(n) * 10.0 ** rng.integers(-12, 4, n)  # times and ratios of a sweep
    picked = rng.choice(np.array(SPECIAL_FLOATS), n)
    which = rng.integers(0, 3, n)
    return np.where(which == 0, bits.view(np.float64), np.where(which == 1, scaled, picked))


def _float_text(value: float) -> str:
    return repr(value) if math.isfinite(value) else "null"


@pytest.mark.parametrize("seed", range(4))
def test_rows_equal_the_per_cell_text(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    floats = _random_floats(rng, n)
    ints = np.where(rng.random(n) < 0.5, rng.integers(-(2 ** 63), 2 ** 63 - 1, n, dtype=np.int64),
                    rng.choice(np.array(SPECIAL_INTS, dtype=np.int64), n))
    small = rng.integers(0, 3, n)  # a block size: 0 is "no block"
    unsigned = rng.integers(0, 2 ** 64 - 1, n, dtype=np.uint64)
    flags = rng.random(n) < 0.5
    labels = np.array(NAMES, dtype=object)[rng.integers(0, len(NAMES), n)]
    columns = [text_columns.floats(floats, non_finite="null"), text_columns.integers(ints),
               text_columns.integers(small, zero="null"), text_columns.integers(unsigned),
               text_columns.booleans(flags, true="yes", false="no"),
               text_columns.names(labels, json.dumps)]
    separators = ["{", ", ", "; ", "|", " ", ",", "}\n"]
    got = text_columns.join_rows(columns, separators)
    want = "".join(
        "{" + _float_text(f) + ", " + str(i) + "; " + (str(s) if s else "null")
        + "|" + str(u) + " " + ("yes" if b else "no") + "," + json.dumps(name) + "}\n"
        for f, i, s, u, b, name in zip(floats.tolist(), ints.tolist(), small.tolist(),
                                       unsigned.tolist(), flags.tolist(), labels.tolist(),
                                       strict=True))
    assert got == want


def test_a_raw_nul_and_non_ascii_name_survive() -> None:
    column = text_columns.names(np.array(["nul\0inside", "café", "x"], dtype=object), str)
    assert text_columns.join_rows([column], ["", "\n"]) == "nul\0inside\ncafé\nx\n"


def test_repeat_puts_each_row_on_consecutive_rows() -> None:
    column = text_columns.repeat(text_columns.integers(np.array([7, -12])), 3)
    assert text_columns.join_rows([column], ["", ","]) == "7,7,7,-12,-12,-12,"
