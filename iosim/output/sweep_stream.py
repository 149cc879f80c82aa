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
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np

from iosim.analysis.sweep import SweepResult
from iosim.output import strict_json, text_columns

CHUNK_POINTS = 1 << 14
"""Points per written block: bounds the memory to a few tens of MB whatever the sweep's size."""

BLOCK_COLUMNS = ("block_q", "block_kv", "bwd_block_q", "bwd_block_kv")
"""0 in the arrays means "no block" (untiled, or no backward): written as empty / null."""


Chunk = tuple[dict[str, np.ndarray], dict[str, tuple[Any, ...]]]
"""A chunk's columns, its names coded: (columns, the values of each coded column)."""


def _chunks(result: SweepResult) -> Iterator[Chunk]:
    for start in range(0, result.points, CHUNK_POINTS):
        coded: dict[str, tuple[Any, ...]] = {}
        yield result.columns(start=start, max_points=CHUNK_POINTS, coded=coded), coded


def _text_columns(columns: dict[str, np.ndarray], coded: dict[str, tuple[Any, ...]], *,
                  empty: str, text: Callable[[Any], str], boolean: tuple[str, str]
                  ) -> list[text_columns.Column]:
    """Each column as text: blocks 0 as `empty`, non-finite floats as `empty`, booleans as the
    pair (true, false), names through `text`."""
    out = []
    for name, values in columns.items():
        if name in coded:
            out.append(text_columns.coded_names(values, coded[name], text))
        elif name in BLOCK_COLUMNS:
            out.append(text_columns.integers(values, zero=empty))
        elif values.dtype.kind == "b":
            out.append(text_columns.booleans(values, true=boolean[0], false=boolean[1]))
        elif values.dtype.kind in "iu":
            out.append(text_columns.integers(values))
        elif values.dtype.kind == "f":
            out.append(text_columns.floats(values, non_finite=empty))
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
                empty: str, text: Callable[[Any], str], boolean: tuple[str, str]) -> list[str]:
    """The chunk's rows: the per-point columns formatted once per point and repeated on
    each of its algorithms' rows, in strings of a few thousand rows; `separators` as in
    `text_columns.join_rows`."""
    columns, coded = chunk
    k = len(result.algorithms)
    lead = per_point_columns(result)
    assert list(columns)[:len(lead)] == list(lead)
    per_point = {name: columns[name][::k] for name in lead}
    per_row = {name: values for name, values in columns.items() if name not in lead}
    options: dict[str, Any] = {"empty": empty, "text": text, "boolean": boolean}
    cells = [text_columns.repeat(c, k) for c in _text_columns(per_point, coded, **options)]
    cells += _text_columns(per_row, coded, **options)
    return text_columns.text_parts(cells, separators)


def write_csv(result: SweepResult, stream: IO[str]) -> None:
    """Every row as CSV, the header first; booleans True/False, missing blocks empty."""
    header_written = False
    for chunk in _chunks(result):
        columns = chunk[0]
        if not header_written:
            stream.write(",".join(columns) + "\n")
            header_written = True
        separators = ["", *[","] * (len(columns) - 1), "\n"]
        for part in _chunk_text(result, chunk, separators, empty="", text=_csv_text,
                                boolean=("True", "False")):
            stream.write(part)


ROW_START = ",\n  "
"""Before each row of a JSON document (the first row's comma dropped)."""


def _json_rows(result: SweepResult, before: str, after: str) -> Iterator[str]:
    """The rows as JSON objects, each between `before` and `after`, a few thousand rows a
    string."""
    for chunk in _chunks(result):
        keys = [json.dumps(name) + ": " for name in chunk[0]]
        separators = [before + "{" + keys[0], *[", " + key for key in keys[1:]], "}" + after]
        yield from _chunk_text(result, chunk, separators, empty="null", text=json.dumps,
                               boolean=("true", "false"))


def write_jsonl(result: SweepResult, stream: IO[str]) -> None:
    """JSON Lines: the sweep's metadata on the first line ({"metadata": ...}), then one object
    per row."""
    stream.write(strict_json.dumps({"metadata": result.metadata()}, ensure_ascii=False) + "\n")
    for rows in _json_rows(result, "", "\n"):
        stream.write(rows)


def write_json(result: SweepResult, stream: IO[str]) -> None:
    """One JSON document {metadata..., "rows": [...]}, written incrementally."""
    head = strict_json.dumps(result.metadata(), indent=1, ensure_ascii=False)
    stream.write(head[:-2] + ',\n "rows": [')
    first = True
    for rows in _json_rows(result, ROW_START, ""):
        # every row starts with ROW_START; the first row's comma is dropped (one copy of one
        # string, where cutting a separator off each string copied the whole file)
        stream.write(rows[1:] if first else rows)
        first = False
    stream.write("\n ]\n}\n")


__all__ = ["CHUNK_POINTS", "write_csv", "write_json", "write_jsonl"]
