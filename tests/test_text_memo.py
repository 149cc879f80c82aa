"""Issue 13 item 5: texts kept from chunk to chunk (output/text_memo.py) change no byte. Several
chunks of one column that share some values and not others, written with one memo, against
`repr` / `%d` cell by cell — with a budget so small that the memos are emptied mid-file, with
the separators changing between chunks, and with -0.0 beside 0.0 and nan beside inf (one text,
two bit patterns)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iosim.output import text_columns
from iosim.output.text_memo import MemoBudget, TextMemo

POOL = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 0.1, 1 / 3, 1e16, 2.0 ** 63, 1e-300]


def _chunks(seed: int, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(floats, ints) of `count` chunks drawn from one pool each: values recur across chunks."""
    rng = np.random.default_rng(seed)
    floats = np.concatenate([POOL, rng.random(300) * 10.0 ** rng.integers(-9, 3, 300)])
    ints = np.concatenate([[0, -1, 2 ** 63 - 1, -(2 ** 63)], rng.integers(-10 ** 12, 10 ** 12,
                                                                           300)])
    return [(rng.choice(floats, int(rng.integers(1, 200))), rng.choice(ints, 0) if i == 2
             else rng.choice(ints, int(rng.integers(1, 200)))) for i in range(count)]


@pytest.mark.parametrize(("seed", "entries"), [(0, 1_000_000), (1, 40), (2, 0), (3, 250)])
def test_memoised_chunks_equal_the_per_cell_text(seed: int, entries: int) -> None:
    budget = MemoBudget(entries)
    float_memo, int_memo = TextMemo(budget), TextMemo(budget)
    for at, (floats, ints) in enumerate(_chunks(seed, 8)):
        before, after = (", ", "\n") if at % 3 else ('"x": ', "}\n")  # the file's separators
        got = text_columns.join_rows(
            [text_columns.floats(floats, non_finite="null", memo=float_memo)],
            [before, after])
        want = "".join(before + (repr(v) if math.isfinite(v) else "null") + after
                       for v in floats.tolist())
        assert got == want
        if len(ints):
            column = text_columns.integers(ints, zero="none", memo=int_memo)
            assert text_columns.join_rows([column], ["", ";"]) == "".join(
                (str(v) if v else "none") + ";" for v in ints.tolist())
        assert 0 <= budget.used <= entries
        assert budget.used == float_memo.size + int_memo.size


def test_a_memo_is_emptied_when_the_budget_is_spent() -> None:
    budget = MemoBudget(5)
    memo = TextMemo(budget)
    made: list[int] = []

    def make(keys: np.ndarray) -> list[str]:
        made.extend(keys.tolist())
        return [str(k) for k in keys.tolist()]

    assert memo.texts_of(np.array([1, 2, 3]), ("k",), make).tolist() == ["1", "2", "3"]
    assert memo.texts_of(np.array([3, 1]), ("k",), make).tolist() == ["3", "1"]
    assert made == [1, 2, 3]  # looked up, not made again
    memo.texts_of(np.array([4, 5, 6]), ("k",), make)  # 6 entries > 5: emptied, then kept
    assert budget.used == 3 and memo.size == 3
    memo.texts_of(np.array([4]), ("other",), make)  # made otherwise: forgotten first
    assert made == [1, 2, 3, 4, 5, 6, 4] and memo.size == 1
