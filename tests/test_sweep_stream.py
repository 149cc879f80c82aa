"""Issue 13 item 5: streamed CSV, JSON Lines and JSON hold every row of `SweepResult.columns()`
exactly, whatever the chunk size (the chunks are an implementation detail)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from iosim.analysis.sweep import SweepSpec, sweep
from iosim.output import sweep_stream

SPEC = SweepSpec(n=(1, 512, 1000), d=(64, 128), gpu=("a100", "h100"), causal=(False, True),
                 pass_=("fwd",), heads=(8,), kv_heads=(2, 8))
BLOCKS = sweep_stream.BLOCK_COLUMNS


def _expected(value: object, name: str) -> object:
    item = value.item() if hasattr(value, "item") else value  # type: ignore[union-attr]
    if name in BLOCKS and not item:
        return None
    return item


@pytest.mark.parametrize("chunk", [1, 7, 1 << 14])
def test_every_format_holds_every_cell(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(sweep_stream, "CHUNK_POINTS", chunk)
    result = sweep(SPEC)
    cols = result.columns()
    rows = len(cols["algorithm"])
    text = io.StringIO()
    sweep_stream.write_json(result, text)
    document = json.loads(text.getvalue())
    assert document["points"] == result.points and len(document["rows"]) == rows
    lines = io.StringIO()
    sweep_stream.write_jsonl(result, lines)
    jsonl = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert jsonl[0] == {"metadata": result.metadata()}
    assert jsonl[1:] == document["rows"]
    table = io.StringIO()
    sweep_stream.write_csv(result, table)
    records = list(csv.DictReader(io.StringIO(table.getvalue())))
    assert len(records) == rows
    for i in (0, 1, rows // 2, rows - 1):
        for name, values in cols.items():
            want = _expected(values[i], name)
            assert document["rows"][i][name] == want, (i, name)
            cell = records[i][name]
            assert cell == ("" if want is None else str(want) if not isinstance(want, float)
                            else repr(want)), (i, name)
