"""Columns of numbers and names as text, a whole chunk at once (the streamed sweep files).

Writing a million-point sweep cell by cell cost about a microsecond a cell, most of it Python's
shortest round-trip `repr` of the floats. Here every column becomes a byte matrix (one row per
table row, the text padded with NUL bytes) in a few NumPy operations, the columns and separators
are laid side by side, and the padding is dropped in one pass:

- integers: their decimal digits, four at a time from a table (the text of `%d`, exact at any
  int64 or uint64);
- floats: `repr` once per *distinct bit pattern* in the chunk (a sweep repeats its times and
  ratios a lot; -0.0 and 0.0 stay apart), then looked up: every float is still Python's own
  shortest round-trip text, byte for byte;
- names and booleans: one text per distinct value, looked up.

A NUL byte inside a name (UTF-8 never holds the byte 0xFF) travels as 0xFF and is put back after
the padding is dropped, so even that name is written as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_NUL_STANDIN = 0xFF
"""Stands for a NUL byte of a text while NUL is the padding: no UTF-8 text holds 0xFF."""


@dataclass(frozen=True)
class Cells:
    """One column as text: row i of `matrix` (uint8) holds the i-th text, padded with 0 bytes
    anywhere; `nul` says whether some text held a NUL byte (written as 0xFF)."""

    matrix: np.ndarray
    nul: bool = False


def _table(texts: Sequence[str], index: np.ndarray) -> Cells:
    """The column whose row i is texts[index[i]]."""
    encoded = [t.encode("utf-8") for t in texts]
    joined = b"".join(encoded)
    nul = b"\0" in joined
    lengths = np.fromiter(map(len, encoded), dtype=np.intp, count=len(encoded))
    width = max(1, int(lengths.max()) if len(encoded) else 1)
    table = np.zeros((len(encoded), width), dtype=np.uint8)
    # every text's bytes scattered into its row at once (a Python call per text cost ~1 µs)
    rows = np.repeat(np.arange(len(encoded)), lengths)
    starts = np.cumsum(lengths) - lengths
    cols = np.arange(len(joined)) - np.repeat(starts, lengths)
    data = np.frombuffer(joined, dtype=np.uint8)
    if nul:
        data = np.where(data == 0, np.uint8(_NUL_STANDIN), data)
    table[rows, cols] = data
    return Cells(table[index], nul)


_QUADS = np.array([list(f"{i:04d}".encode()) for i in range(10_000)], dtype=np.uint8)
"""The four digits of 0 .. 9999: a number's digits are looked up four at a time."""
_QUAD_WORDS = _QUADS.view(np.uint32).reshape(-1)
"""The same four bytes as one 32-bit word each, so that a lookup moves a word, not four bytes."""

_POWERS = np.array([10 ** i for i in range(20)], dtype=np.uint64)


def integers(values: np.ndarray, *, zero: str | None = None) -> Cells:
    """Each whole number in decimal (as `%d`); with `zero`, 0 is written as that text."""
    values = np.asarray(values)
    unsigned = values.dtype.kind == "u"
    negative = np.zeros(len(values), dtype=bool) if unsigned else values < 0
    # magnitudes as uint64: exact for every int64, the most negative included
    rest = values.astype(np.uint64) if unsigned else np.where(
        negative, (-(values + 1)).astype(np.uint64) + np.uint64(1), values.astype(np.uint64))
    length = np.maximum(np.searchsorted(_POWERS, rest, side="right"), 1)  # digits of each
    digits = int(length.max()) if len(rest) else 1
    groups = -(-digits // 4)
    quads = np.empty((len(values), groups), dtype=np.uint32)
    quad = np.uint64(10_000)
    for group in range(groups):  # right-aligned: the last four digits in the last word
        quads[:, groups - 1 - group] = _QUAD_WORDS[(rest % quad).astype(np.intp)]
        rest = rest // quad
    matrix = quads.view(np.uint8).reshape(len(values), 4 * groups)  # the words' bytes in order
    width = max(4 * groups + int(negative.any()), len(zero or ""))
    if width > 4 * groups:
        wide = np.zeros((len(values), width), dtype=np.uint8)
        wide[:, width - 4 * groups:] = matrix
        matrix = wide
    matrix *= np.arange(width)[None, :] >= (width - length)[:, None]  # leading zeros to NUL
    if negative.any():
        matrix[negative, width - 1 - length[negative]] = ord("-")
    if zero is not None:
        blank = values == 0
        matrix[blank] = 0
        text = np.frombuffer(zero.encode("utf-8"), dtype=np.uint8)
        matrix[np.ix_(blank, np.arange(len(text)))] = text
    return Cells(matrix)


def floats(values: np.ndarray, *, non_finite: str) -> Cells:
    """Each float as `repr` (shortest round-trip text); inf and nan as `non_finite`."""
    values = np.asarray(values)
    bits = values.view(f"i{values.dtype.itemsize}")  # exact identity: -0.0 is not 0.0
    distinct, index = np.unique(bits, return_inverse=True)
    numbers = distinct.view(values.dtype)
    texts = list(map(float.__repr__, numbers.tolist()))  # a C loop: no Python call per value
    for at in np.flatnonzero(~np.isfinite(numbers)).tolist():
        texts[at] = non_finite
    return _table(texts, index.reshape(-1))


def booleans(values: np.ndarray, *, true: str, false: str) -> Cells:
    """`true` or `false` per value."""
    return _table([false, true], np.asarray(values, dtype=bool).astype(np.intp))


def names(values: np.ndarray, text: Callable[[Any], str]) -> Cells:
    """text(value) per value, computed once per distinct value."""
    items = np.asarray(values).tolist()
    distinct = list(dict.fromkeys(items))
    code = {value: i for i, value in enumerate(distinct)}
    index = np.fromiter(map(code.__getitem__, items), dtype=np.intp, count=len(items))
    return _table([text(v) for v in distinct], index)


def repeat(cells: Cells, times: int) -> Cells:
    """Each row `times` times in a row (a point's columns on each of its algorithms' rows)."""
    return Cells(np.repeat(cells.matrix, times, axis=0), cells.nul)


def join_rows(columns: Sequence[Cells], separators: Sequence[str]) -> bytes:
    """Row i is separators[0] + columns[0][i] + separators[1] + ... + columns[-1][i] +
    separators[-1] (one more separator than columns: the row's start and end), UTF-8."""
    assert len(separators) == len(columns) + 1 and columns
    seps = [s.encode("utf-8") for s in separators]
    assert not any(b"\0" in s for s in seps)
    rows = len(columns[0].matrix)
    width = sum(map(len, seps)) + sum(c.matrix.shape[1] for c in columns)
    matrix = np.empty((rows, width), dtype=np.uint8)
    at = 0
    for sep, column in zip(seps, [*columns, None], strict=True):
        matrix[:, at:at + len(sep)] = np.frombuffer(sep, dtype=np.uint8)
        at += len(sep)
        if column is not None:
            size = column.matrix.shape[1]
            matrix[:, at:at + size] = column.matrix
            at += size
    text: bytes = matrix.tobytes().translate(None, b"\0")  # the padding dropped (C, one pass)
    if any(c.nul for c in columns):
        text = text.replace(bytes([_NUL_STANDIN]), b"\0")
    return text


__all__ = ["Cells", "booleans", "floats", "integers", "join_rows", "names", "repeat"]
