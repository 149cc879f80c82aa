"""A sweep's every row as CSV, JSON Lines or JSON, written chunk by chunk to a stream.

A million-point sweep is three million rows: building them all at once (a DataFrame, a list of
dicts) took 2.5 GB for CSV and 21.5 GB for JSON. Here each chunk of CHUNK_POINTS points becomes
one block of text through a single %-format template per row (C-level formatting, no per-field
Python calls), is written, and is dropped. benchmarks/sweep_formats.py measures it
(docs/sweeps-benchmarks.md).

The columns are `SweepResult.columns()`; an untiled algorithm's block sizes are empty (CSV) or
null (JSON), as are the backward's blocks of a forward pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from iosim.analysis.sweep import SweepResult
from iosim.output import strict_json

CHUNK_POINTS = 1 << 14
"""Points per written block: bounds the memory to a few tens of MB whatever the sweep's size."""

BLOCK_COLUMNS = ("block_q", "block_kv", "bwd_block_q", "bwd_block_kv")
"""0 in the arrays means "no block" (untiled, or no backward): written as empty / null."""


def _chunks(result: SweepResult) -> Any:
    for start in range(0, result.points, CHUNK_POINTS):
        yield result.columns(start=start, max_points=CHUNK_POINTS)


def _column_lists(columns: dict[str, np.ndarray], *, empty: str,
                  text: Callable[[Any], str], boolean: tuple[str, str]
                  ) -> tuple[list[str], list[list[Any]]]:
    """Per column its %-code and its values as Python objects ready for that code."""
    codes, lists = [], []
    for name, values in columns.items():
        if name in BLOCK_COLUMNS:
            codes.append("%s")
            lists.append([v if v else empty for v in values.tolist()])
        elif values.dtype.kind == "b":
            codes.append("%s")
            yes, no = boolean
            lists.append([yes if v else no for v in values.tolist()])
        elif values.dtype.kind in "iu":
            codes.append("%d")
            lists.append(values.tolist())
        elif values.dtype.kind == "f":
            finite = bool(np.isfinite(values).all())
            codes.append("%r" if finite else "%s")
            lists.append(values.tolist() if finite else [
                repr(v) if math.isfinite(v) else empty for v in values.tolist()])
        else:  # names: GPU, dtype, pass, algorithm, bound (few distinct values)
            names = {v: text(v) for v in set(values.tolist())}
            codes.append("%s")
            lists.append([names[v] for v in values.tolist()])
    return codes, lists


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


def _per_point(result: SweepResult, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The chunk's columns with the per-point ones once per point instead of once per row."""
    k = len(result.algorithms)
    lead = per_point_columns(result)
    assert list(columns)[:len(lead)] == list(lead)
    return {name: values[::k] if name in lead else values
            for name, values in columns.items()}


def _rows_text(result: SweepResult, template: str, lists: list[list[Any]], sep: str
               ) -> list[str]:
    """Every row of a chunk through `template`; the per-point columns (`lists` from
    `_per_point`) formatted once a point and joined to each of its algorithms' rows."""
    k = len(result.algorithms)
    lead = len(per_point_columns(result))
    head = sep.join(template.split(sep)[:lead])
    tail = sep.join(template.split(sep)[lead:])
    heads = [head % row for row in zip(*lists[:lead], strict=True)]
    tails = [tail % row for row in zip(*lists[lead:], strict=True)]
    return [heads[i // k] + sep + t for i, t in enumerate(tails)]


def write_csv(result: SweepResult, stream: IO[str]) -> None:
    """Every row as CSV, the header first; booleans True/False, missing blocks empty."""
    header_written = False
    for columns in _chunks(result):
        if not header_written:
            stream.write(",".join(columns) + "\n")
            header_written = True
        codes, lists = _column_lists(_per_point(result, columns), empty="", text=_csv_text,
                                     boolean=("True", "False"))
        rows = _rows_text(result, ",".join(codes), lists, ",")
        stream.write("\n".join(rows) + "\n")


def _json_rows(result: SweepResult) -> Any:
    """Each chunk's rows as JSON objects, one per line (no trailing newline)."""
    for columns in _chunks(result):
        codes, lists = _column_lists(_per_point(result, columns), empty="null",
                                     text=json.dumps, boolean=("true", "false"))
        template = ", ".join(f"{json.dumps(name)}: {code}"
                             for name, code in zip(columns, codes, strict=True))
        yield ["{" + row + "}" for row in _rows_text(result, template, lists, ", ")]


def write_jsonl(result: SweepResult, stream: IO[str]) -> None:
    """JSON Lines: the sweep's metadata on the first line ({"metadata": ...}), then one object
    per row."""
    stream.write(strict_json.dumps({"metadata": result.metadata()}, ensure_ascii=False) + "\n")
    for rows in _json_rows(result):
        stream.write("\n".join(rows) + "\n")


def write_json(result: SweepResult, stream: IO[str]) -> None:
    """One JSON document {metadata..., "rows": [...]}, written incrementally."""
    head = strict_json.dumps(result.metadata(), indent=1, ensure_ascii=False)
    stream.write(head[:-2] + ',\n "rows": [')
    first = True
    for rows in _json_rows(result):
        stream.write(("\n  " if first else ",\n  ") + ",\n  ".join(rows))
        first = False
    stream.write("\n ]\n}\n")


__all__ = ["CHUNK_POINTS", "write_csv", "write_json", "write_jsonl"]
