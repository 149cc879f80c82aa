"""A sweep's every row as CSV, JSON Lines or JSON, written chunk by chunk to a stream.

A million-point sweep is three million rows: building them all at once (a DataFrame, a list of
dicts) took 2.5 GB for CSV and 21.5 GB for JSON. Here each chunk of CHUNK_POINTS points becomes
one block of text (output/text_columns.py: each distinct value, and each distinct combination of
neighbouring values, written once by Python itself; each float its own repr), is written, and is
dropped. benchmarks/sweep_formats.py measures it (docs/sweeps-benchmarks.md).

The columns are `SweepResult.columns()`; an untiled algorithm's block sizes are empty (CSV) or
null (JSON), as are the backward's blocks of a forward pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from iosim.analysis.sweep import SweepResult
from iosim.output import strict_json, text_columns
from iosim.output.text_memo import MemoBudget, TextMemo
from iosim.record import Record

CHUNK_POINTS = 1 << 14
"""Points per written block: bounds the memory to a few tens of MB whatever the sweep's size."""

BLOCK_COLUMNS = ("block_q", "block_kv", "bwd_block_q", "bwd_block_kv")
"""0 in the arrays means "no block" (untiled, or no backward): written as empty / null."""


Chunk = tuple[dict[str, np.ndarray], dict[str, tuple[Any, ...]]]
"""A chunk's columns, its names coded: (columns, the values of each coded column)."""


class Memos:
    """One TextMemo per numeric column of a file, sharing one budget (output/text_memo.py)."""

    def __init__(self) -> None:
        self.budget = MemoBudget()
        self.by_column: dict[str, TextMemo] = {}

    def __getitem__(self, name: str) -> TextMemo:
        if name not in self.by_column:
            self.by_column[name] = TextMemo(self.budget)
        return self.by_column[name]


def _text_columns(columns: dict[str, np.ndarray], coded: dict[str, tuple[Any, ...]], *,
                  empty: str, text: Callable[[Any], str], boolean: tuple[str, str],
                  memos: Memos) -> list[text_columns.Column]:
    """Each column as text: blocks 0 as `empty`, non-finite floats as `empty`, booleans as the
    pair (true, false), names through `text`."""
    out = []
    for name, values in columns.items():
        if name in coded:
            out.append(text_columns.coded_names(values, coded[name], text))
        elif name in BLOCK_COLUMNS:
            out.append(text_columns.integers(values, zero=empty, memo=memos[name]))
        elif values.dtype.kind == "b":
            out.append(text_columns.booleans(values, true=boolean[0], false=boolean[1]))
        elif values.dtype.kind in "iu":
            out.append(text_columns.integers(values, memo=memos[name]))
        elif values.dtype.kind == "f":
            out.append(text_columns.floats(values, non_finite=empty, memo=memos[name]))
        else:  # names: GPU, dtype, pass, algorithm, bound (few distinct values)
            out.append(text_columns.names(values, text))
    return out


def _csv_text(value: Any) -> str:
    s = str(value)
    return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\n') else s


PER_POINT = ("gpu", "dtype", "pass", "causal", "batch", "heads", "kv_heads", "d", "n", "n_kv",
             "sparsity", "sram_bytes")
"""The leading columns, equal on the rows of one point's algorithms: formatted once per point
(with d_v after d when the sweep gives d_v: per_point_columns)."""


def per_point_columns(result: SweepResult) -> tuple[str, ...]:
    """PER_POINT, with the d_v column where the sweep has one (SweepResult.columns)."""
    if result.spec.d_v == (None,):
        return PER_POINT
    at = PER_POINT.index("d") + 1
    return (*PER_POINT[:at], "d_v", *PER_POINT[at:])


def _chunk_text(result: SweepResult, chunk: Chunk, separators: list[str], *,
                empty: str, text: Callable[[Any], str], boolean: tuple[str, str],
                memos: Memos) -> list[str]:
    """The chunk's rows: the per-point columns formatted once per point and repeated on
    each of its algorithms' rows, in strings of a few thousand rows; `separators` as in
    `text_columns.join_rows`."""
    columns, coded = chunk
    k = len(result.algorithms)
    lead = per_point_columns(result)
    assert list(columns)[:len(lead)] == list(lead)
    per_point = {name: columns[name][::k] for name in lead}
    per_row = {name: values for name, values in columns.items() if name not in lead}
    options: dict[str, Any] = {"empty": empty, "text": text, "boolean": boolean, "memos": memos}
    cells = [text_columns.repeat(c, k) for c in _text_columns(per_point, coded, **options)]
    cells += _text_columns(per_row, coded, **options)
    return text_columns.text_parts(cells, separators)


class StreamedFile(Record):
    """A streamed file: `head`, then `chunk(i)` for i in 0 .. chunks - 1 (a few strings each,
    made only when asked for: any chunk may be made in any order, by any process), then
    `tail`."""

    head: str
    chunks: int
    chunk: Callable[[int], list[str]]
    tail: str = ""


def _chunk(result: SweepResult, index: int) -> Chunk:
    coded: dict[str, tuple[Any, ...]] = {}
    columns = result.columns(start=index * CHUNK_POINTS, max_points=CHUNK_POINTS, coded=coded)
    return columns, coded


def _chunk_count(result: SweepResult) -> int:
    return -(-result.points // CHUNK_POINTS)


def csv_file(result: SweepResult) -> StreamedFile:
    """Every row as CSV, the header first; booleans True/False, missing blocks empty."""
    memos = Memos()

    def chunk(index: int) -> list[str]:
        columns = _chunk(result, index)
        separators = ["", *[","] * (len(columns[0]) - 1), "\n"]
        parts = _chunk_text(result, columns, separators, empty="", text=_csv_text,
                            boolean=("True", "False"), memos=memos)
        return [",".join(columns[0]) + "\n", *parts] if index == 0 else parts

    return StreamedFile("", _chunk_count(result), chunk)


ROW_START = ",\n  "
"""Before each row of a JSON document (the first row's comma dropped)."""


def _json_chunk(result: SweepResult, index: int, before: str, after: str,
                memos: Memos) -> list[str]:
    """A chunk's rows as JSON objects, each between `before` and `after`, a few thousand rows
    a string."""
    columns = _chunk(result, index)
    keys = [json.dumps(name) + ": " for name in columns[0]]
    separators = [before + "{" + keys[0], *[", " + key for key in keys[1:]], "}" + after]
    return _chunk_text(result, columns, separators, empty="null", text=json.dumps,
                       boolean=("true", "false"), memos=memos)


def jsonl_file(result: SweepResult) -> StreamedFile:
    """JSON Lines: the sweep's metadata on the first line ({"metadata": ...}), then one object
    per row."""
    head = strict_json.dumps({"metadata": result.metadata()}, ensure_ascii=False) + "\n"
    memos = Memos()
    return StreamedFile(head, _chunk_count(result),
                        lambda index: _json_chunk(result, index, "", "\n", memos))


def json_file(result: SweepResult) -> StreamedFile:
    """One JSON document {metadata..., "rows": [...]}, its rows written chunk by chunk."""
    head = strict_json.dumps(result.metadata(), indent=1, ensure_ascii=False)

    memos = Memos()

    def chunk(index: int) -> list[str]:
        parts = _json_chunk(result, index, ROW_START, "", memos)
        if index == 0 and parts:
            # every row starts with ROW_START; the first row's comma is dropped (one copy of
            # one string, where cutting a separator off each string copied the whole file)
            parts[0] = parts[0][1:]
        return parts

    return StreamedFile(head[:-2] + ',\n "rows": [', _chunk_count(result), chunk,
                        "\n ]\n}\n")


def write(file: StreamedFile, stream: IO[str]) -> None:
    """The file's head, chunks in order and tail, written to `stream` one string at a time."""
    stream.write(file.head)
    for index in range(file.chunks):
        for part in file.chunk(index):
            stream.write(part)
    stream.write(file.tail)


def write_csv(result: SweepResult, stream: IO[str]) -> None:
    """csv_file(result), written to `stream`."""
    write(csv_file(result), stream)


def write_jsonl(result: SweepResult, stream: IO[str]) -> None:
    """jsonl_file(result), written to `stream`."""
    write(jsonl_file(result), stream)


def write_json(result: SweepResult, stream: IO[str]) -> None:
    """json_file(result), written to `stream`."""
    write(json_file(result), stream)


__all__ = ["CHUNK_POINTS", "StreamedFile", "csv_file", "json_file", "jsonl_file", "write",
           "write_csv", "write_json", "write_jsonl"]
