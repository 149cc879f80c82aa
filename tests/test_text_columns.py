"""Issue 13 item 5: the chunk-at-once text of output/text_columns.py is, byte for byte, what
writing each cell with Python (`repr` for floats, `str` for integers) gives — on random columns
that hold what a per-cell shortcut would get wrong: inf, nan, -0.0, subnormal and huge floats,
integers beyond 2^53 and at the int64/uint64 ends, names with commas, quotes, non-ASCII and NUL."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.output import text_columns
from tests.conftest import examples

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


# --- the fast writer against a plain per-cell Python writer, on random chunks -----------------

FLOAT_POOL = [*SPECIAL_FLOATS, -1e-300, 1e300, -2.5, 1e-7, 6.02214076e23]
INT_POOL = [*SPECIAL_INTS, 1 << 40, -(1 << 40), 12345678901]
NAME_POOL = [*NAMES, "π≈3.14", "日本語", "emoji 🚀", "tab\there", "back\\slash", "%d %r %%"]


def _column(rng: np.random.Generator, kind: str, n: int, distinct: int) -> tuple[Any, Any]:
    """(the column for text_columns, the plain text of each of its n values)."""
    pick = rng.integers(0, distinct, n)  # few distinct values: segments and sharing get used
    if kind == "float":
        pool = np.where(rng.random(distinct) < 0.5, rng.choice(np.array(FLOAT_POOL), distinct),
                        _random_floats(rng, distinct))
        values = pool[pick]
        return (text_columns.floats(values, non_finite="NA"),
                [repr(v) if math.isfinite(v) else "NA" for v in values.tolist()])
    if kind in ("int", "block"):
        wide = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, distinct,
                            dtype=np.int64)
        near = rng.integers(-3, 1 << int(rng.integers(1, 45)), distinct)
        pool = np.where(rng.random(distinct) < 0.3, rng.choice(np.array(INT_POOL), distinct),
                        np.where(rng.random(distinct) < 0.5, wide, near))
        if kind == "block":
            pool = np.abs(pool % 1000) * (rng.random(distinct) < 0.7)  # 0 is "no block"
            return (text_columns.integers(pool[pick], zero=""),
                    [str(v) if v else "" for v in pool[pick].tolist()])
        return text_columns.integers(pool[pick]), [str(v) for v in pool[pick].tolist()]
    if kind == "uint":
        pool = rng.integers(0, 2 ** 64 - 1, distinct, dtype=np.uint64)
        return text_columns.integers(pool[pick]), [str(v) for v in pool[pick].tolist()]
    if kind == "bool":
        values = rng.random(n) < 0.5
        return (text_columns.booleans(values, true="T", false="F"),
                ["T" if v else "F" for v in values.tolist()])
    labels = np.array(NAME_POOL, dtype=object)[rng.integers(0, len(NAME_POOL), distinct)]
    if kind == "coded":
        return (text_columns.coded_names(pick, labels.tolist(), json.dumps),
                [json.dumps(v) for v in labels[pick].tolist()])
    return text_columns.names(labels[pick], str), [str(v) for v in labels[pick].tolist()]


KINDS = ["float", "int", "block", "uint", "bool", "name", "coded"]
SEPARATORS = ["", ",", ", ", '"k": ', "%", "%s%d", "→", "\n", "\0"]


@settings(max_examples=examples(60))
@given(seed=st.integers(0, 2 ** 32 - 1), points=st.integers(0, 400), times=st.integers(1, 4),
       kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=12),
       leading=st.integers(0, 12), distinct=st.integers(1, 500))
def test_the_fast_writer_equals_a_per_cell_writer(seed: int, points: int, times: int,
                                                  kinds: list[str], leading: int,
                                                  distinct: int) -> None:
    """Random chunks: a point's columns (each repeated on its `times` rows) then per-row columns
    of every kind, with few or many distinct values, against repr / %d / the names cell by
    cell."""
    rng = np.random.default_rng(seed)
    leading = min(leading, len(kinds))
    columns, texts = [], []
    for at, kind in enumerate(kinds):
        per_point = at < leading
        column, cells = _column(rng, kind, points if per_point else points * times,
                                min(distinct, max(1, points * times)))
        if per_point:
            column = text_columns.repeat(column, times)
            cells = [c for c in cells for _ in range(times)]
        columns.append(column)
        texts.append(cells)
    separators = [str(s) for s in rng.choice(np.array(SEPARATORS, dtype=object),
                                             len(kinds) + 1)]
    want = "".join(separators[0] + "".join(cell + sep for cell, sep in zip(row, separators[1:],
                                                                            strict=True))
                   for row in zip(*texts, strict=True))
    assert text_columns.join_rows(columns, separators) == want
