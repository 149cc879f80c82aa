"""Rows of text from columns of numbers and names, a whole chunk at once (the streamed sweep files).

A sweep's columns repeat themselves: axis values, block sizes, names and flags take a handful of
values per chunk of rows, and even its counts, times and ratios only a few thousand in 49,152
rows. So no value is written twice, and no row is built cell by cell:

1. each column is coded: its distinct values in a chunk and, per row, the index of the row's
   value among them (a float by its bit pattern, so -0.0 and 0.0 stay apart);
2. each distinct value is written once, by Python itself: `repr` of a float (its shortest
   round-trip text), `%d` of an integer, a name's own text, the separator before it folded in;
3. neighbouring columns whose value *combinations* are few (the axis values of a point, an
   algorithm's blocks and flags) become one segment, written once per distinct combination;
4. each row is then a few segment texts, joined by `str.join`, PART_ROWS rows to a string.

The text is therefore, byte for byte, what writing every cell with Python gives
(tests/test_text_columns.py checks it against such a writer on random chunks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from iosim.output.text_memo import TextMemo
from iosim.record import Record

Texts = list[str] | np.ndarray
"""The texts of a column's distinct values: a list, or an object array of str."""


class Column(Record, eq=False):
    """One column in coded form: `codes` (intp, 0 .. count - 1), each standing for `times`
    consecutive rows (a point's value on each of its algorithms' rows), and `texts(before,
    after)`, the text of each distinct value in code order, each between `before` and `after`
    (a list, or an object array)."""

    codes: np.ndarray
    count: int
    texts: Callable[[str, str], Texts]
    times: int = 1

    @property
    def rows(self) -> int:
        """The rows the column covers."""
        return len(self.codes) * self.times


def _around(texts: list[str], before: str, after: str) -> list[str]:
    return [before + t + after for t in texts] if before or after else texts


def _template(before: str, conversion: str, after: str) -> str:
    """before + conversion + after as a %-format of one value (a % in before/after kept)."""
    return before.replace("%", "%%") + conversion + after.replace("%", "%%")


_TABLE_SPAN = 4
"""Values spanning up to this many times the rows (+ 1,024) are coded by a table, not a sort."""


def _ranks(starts: np.ndarray) -> np.ndarray:
    """For each position, how many `starts` (bool) are at or before it, minus one."""
    rank = starts.astype(np.intp)
    np.cumsum(rank, out=rank)  # in place: a cumsum that casts from bool is about 2.5x slower
    rank -= 1
    return rank


def _coded(identity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct identities, each row's index among them): by a table where the values span
    little (axis values, block sizes, names, flags: no sort), else by one sort."""
    rows = len(identity)
    if rows == 0:
        return identity, np.zeros(0, dtype=np.intp)
    low, high = int(identity.min()), int(identity.max())
    if high - low < _TABLE_SPAN * rows + 1024:
        shifted = identity - low
        present = np.zeros(high - low + 1, dtype=bool)
        present[shifted] = True
        return np.flatnonzero(present) + low, _ranks(present)[shifted]
    # value and row in one int64, sorted (a plain sort is several times faster than an argsort)
    shift = rows.bit_length()
    spread = high - low >= 1 << (63 - shift)
    if spread:  # a float's bit pattern: a hash of 63 - shift bits stands for it
        key = ((identity.view(np.uint64) * _MIX) >> np.uint64(shift + 1)).view(np.int64)
    else:
        key = identity - low
    packed = (key << shift) | np.arange(rows)
    packed.sort()
    order = packed & ((1 << shift) - 1)
    ordered = packed >> shift
    starts = np.empty(rows, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    index = np.empty(rows, dtype=np.intp)
    index[order] = _ranks(starts)
    distinct = identity[order[starts]]
    if spread and not np.array_equal(distinct[index], identity):  # two values, one hash
        distinct, index = np.unique(identity, return_inverse=True)
    return distinct, index.reshape(-1)


_MIX = np.uint64(0x9E3779B97F4A7C15)
"""An odd 64-bit multiplier (2^64 / golden ratio): spreads a bit pattern over the hash."""


def floats(values: np.ndarray, *, non_finite: str, memo: TextMemo | None = None) -> Column:
    """Each float as `repr` (shortest round-trip text); inf and nan as `non_finite`. With
    `memo`, texts it holds (by bit pattern) are looked up rather than made again."""
    values = np.asarray(values)
    if values.dtype != np.float64:
        values = values.astype(np.float64)  # exact for float16 and float32
    distinct, codes = _coded(values.view(np.int64))  # the bit pattern: -0.0 is not 0.0

    def texts(before: str, after: str) -> Texts:
        def make(bits: np.ndarray) -> list[str]:
            numbers = bits.view(np.float64)
            # %r is repr; map is a C loop: no Python call per value
            out = list(map(_template(before, "%r", after).__mod__, numbers.tolist()))
            for at in np.flatnonzero(~np.isfinite(numbers)).tolist():
                out[at] = before + non_finite + after
            return out

        if memo is None:
            return make(distinct)
        return memo.texts_of(distinct, ("float", before, after, non_finite), make)

    return Column(codes, len(distinct), texts)


def integers(values: np.ndarray, *, zero: str | None = None,
             memo: TextMemo | None = None) -> Column:
    """Each whole number in decimal (as `%d`); with `zero`, 0 is written as that text. With
    `memo`, texts it holds are looked up rather than made again."""
    values = np.asarray(values)
    if values.dtype == object:  # a sweep's counts beyond int64 (Python ints): exact digits
        return _python_integers(values, zero)
    if values.dtype.kind not in "iu":
        raise TypeError(f"integers() needs an integer array, not {values.dtype}")
    unsigned = values.dtype.kind == "u"
    # a uint64 beyond int64 is coded by its bit pattern, and read back as uint64
    distinct, codes = _coded(values.astype(np.uint64).view(np.int64) if unsigned
                             else values.astype(np.int64))

    def texts(before: str, after: str) -> Texts:
        def make(keys: np.ndarray) -> list[str]:
            numbers = keys.view(np.uint64) if unsigned else keys
            out = list(map(_template(before, "%d", after).__mod__, numbers.tolist()))
            if zero is not None:
                for at in np.flatnonzero(numbers == 0).tolist():
                    out[at] = before + zero + after
            return out

        if memo is None:
            return make(distinct)
        return memo.texts_of(distinct, ("int", unsigned, before, after, zero), make)

    return Column(codes, len(distinct), texts)


def _python_integers(values: np.ndarray, zero: str | None) -> Column:
    """integers() for an object array of Python ints (sweep_spec.counts_in_python_ints): each in
    all its digits, as JSON's and CSV's readers of big integers expect."""
    items = values.reshape(-1).tolist()
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise TypeError("integers() needs whole numbers")
    distinct = list(dict.fromkeys(items))
    code = {value: i for i, value in enumerate(distinct)}
    codes = np.fromiter(map(code.__getitem__, items), dtype=np.intp, count=len(items))
    texts = [zero if zero is not None and v == 0 else str(v) for v in distinct]
    return Column(codes, len(distinct), lambda before, after: _around(texts, before, after))


def booleans(values: np.ndarray, *, true: str, false: str) -> Column:
    """`true` or `false` per value."""
    return Column(np.asarray(values, dtype=bool).astype(np.intp), 2,
                  lambda before, after: _around([false, true], before, after))


def names(values: np.ndarray, text: Callable[[Any], str]) -> Column:
    """text(value) per value, computed once per distinct value."""
    items = np.asarray(values).tolist()
    distinct = list(dict.fromkeys(items))
    code = {value: i for i, value in enumerate(distinct)}
    codes = np.fromiter(map(code.__getitem__, items), dtype=np.intp, count=len(items))
    return Column(codes, len(distinct),
                  lambda before, after: _around([text(v) for v in distinct], before, after))


def coded_names(codes: np.ndarray, values: Sequence[Any], text: Callable[[Any], str]) -> Column:
    """text(values[code]) per code (intp, 0 .. len(values) - 1): names already coded."""
    return Column(np.asarray(codes, dtype=np.intp), len(values),
                  lambda before, after: _around([text(v) for v in values], before, after))


def repeat(column: Column, times: int) -> Column:
    """Each row `times` times in a row (a point's columns on each of its algorithms' rows)."""
    return Column(column.codes, column.count, column.texts, column.times * times)


class _Segment(Record, frozen=False, eq=False):
    """Neighbouring columns written as one piece: `key` (0 .. span - 1, one per `times` rows)
    codes their combination; `count` is how many combinations there are (estimated until the
    key is made dense: span == count)."""

    members: list[int]
    key: np.ndarray
    count: int
    times: int
    span: int
    dense: bool

    def densify(self) -> None:
        distinct, self.key = _coded(self.key)
        self.count = self.span = len(distinct)
        self.dense = True


_SPAN_LIMIT = 1 << 62
"""A segment's key is made dense before a combination could pass int64."""


def _distinct_count(key: np.ndarray, span: int) -> int:
    """How many distinct values `key` (0 .. span - 1) holds: counted where a table of the span
    is small, else estimated by linear counting over a hash table four times the rows (within
    a few per cent: it only decides how columns are grouped, never what is written)."""
    rows = len(key)
    if span <= _TABLE_SPAN * rows + 1024:
        present = np.zeros(span, dtype=bool)
        present[key] = True
        return int(np.count_nonzero(present))
    bits = (_TABLE_SPAN * rows).bit_length()
    slots = ((key.view(np.uint64) * _MIX) >> np.uint64(64 - bits)).view(np.int64)
    present = np.zeros(1 << bits, dtype=bool)
    present[slots] = True
    empty = max(1, (1 << bits) - int(np.count_nonzero(present)))
    return round((1 << bits) * math.log((1 << bits) / empty))


def _segments(columns: Sequence[Column]) -> list[_Segment]:
    """Neighbouring columns grouped. A column joins the segment before it when writing each
    combination of the longer segment once costs fewer cells than writing the two apart and
    joining one more piece per row. Columns of a point (`times` > 1) are combined per point.
    The combinations are coded (a sort) once per segment, or when their key would overflow."""
    rows = columns[0].rows
    out: list[_Segment] = []
    for at, column in enumerate(columns):
        if out:
            last = out[-1]
            apart = last.count * len(last.members) + column.count + rows
            if max(last.count, column.count) * (len(last.members) + 1) < apart:  # could pay
                if last.span * column.count > _SPAN_LIMIT:
                    last.densify()
                times = last.times if last.times == column.times else 1
                key = last.key if last.times == times else np.repeat(last.key, last.times)
                codes = column.codes if column.times == times else np.repeat(column.codes,
                                                                             column.times)
                joined = key * column.count + codes
                span = last.span * column.count
                count = _distinct_count(joined, span)
                if count * (len(last.members) + 1) < apart:
                    out[-1] = _Segment([*last.members, at], joined, count, times, span, False)
                    continue
        out.append(_Segment([at], column.codes, column.count, column.times, column.count, True))
    for segment in out:
        if not segment.dense:
            segment.densify()
    return out


PART_ROWS = 2048
"""Rows per string of `text_parts`: a few hundred kB to a MB, which the allocator reuses from
chunk to chunk (one string of a whole chunk, 10 to 30 MB, was mapped afresh each time: a
second of page faults over a million-point sweep)."""


def join_rows(columns: Sequence[Column], separators: Sequence[str]) -> str:
    """Row i is separators[0] + columns[0][i] + separators[1] + ... + columns[-1][i] +
    separators[-1] (one more separator than columns: the row's start and end)."""
    return "".join(text_parts(columns, separators))


def text_parts(columns: Sequence[Column], separators: Sequence[str]) -> list[str]:
    """join_rows's text, PART_ROWS rows to a string."""
    assert len(separators) == len(columns) + 1 and columns
    rows = columns[0].rows
    assert all(c.rows == rows for c in columns)
    if rows == 0:
        return []
    last = len(columns) - 1
    segments = _segments(columns)
    # every segment's texts in one table, and each row's pieces as indices into it: one gather
    # per string of rows (a 2-D object array filled a segment at a time cost 3–9 % more)
    texts: list[str] = []
    keys = np.empty((rows, len(segments)), dtype=np.intp)
    for at, segment in enumerate(segments):
        first = np.zeros(segment.count, dtype=np.intp)
        first[segment.key] = np.arange(len(segment.key))  # one of each combination (any will do)
        cells = []
        for c in segment.members:
            column = columns[c]
            after = separators[-1] if c == last else ""
            table = np.asarray(column.texts(separators[c], after), dtype=object)
            # the column's code at that combination's first row
            codes = column.codes[first * segment.times // column.times]
            cells.append(table[codes].tolist())
        combined = cells[0] if len(cells) == 1 else list(map("".join, zip(*cells, strict=True)))
        key = segment.key if segment.times == 1 else np.repeat(segment.key, segment.times)
        np.add(key, len(texts), out=keys[:, at])
        texts.extend(combined)
    every = np.array(texts, dtype=object)
    flat = keys.reshape(-1)
    step = PART_ROWS * len(segments)
    return ["".join(every[flat[start:start + step]].tolist())
            for start in range(0, len(flat), step)]

__all__ = ["Column", "booleans", "coded_names", "floats", "integers", "join_rows", "names", "repeat",
           "text_parts"]
