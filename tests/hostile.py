"""Helpers for the hostile-input tests (test_hostile.py, test_fuzz.py): run the CLI in-process
and check the promise of issue 12: exit 0 or 2, no traceback, one `Error:` line on exit 2,
strict finite JSON on exit 0."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from iosim.cli import cli
from iosim.inputs.gpus import config_dir

A100_YAML = (config_dir() / "a100-80gb-sxm.yaml").read_text(encoding="utf-8")
"""A valid GPU file to mutate (the shipped A100 80GB)."""


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str
    exception: BaseException | None


def invoke(args: list[str]) -> Outcome:
    result = CliRunner().invoke(cli, args)
    exception = None if isinstance(result.exception, SystemExit) else result.exception
    return Outcome(result.exit_code, result.stdout, result.stderr, exception)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite JSON constant {name}")


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN, Infinity and -Infinity, as strict parsers and jq do."""
    return json.loads(text, parse_constant=_refuse_constant)


def assert_clean(outcome: Outcome, args: list[str]) -> None:
    """Exit 0 or 2; no traceback; on exit 2 stderr is exactly one `Error:` line."""
    shown = " ".join(a if len(a) < 80 else a[:77] + "..." for a in args)
    assert outcome.exception is None, f"iosim {shown}: {outcome.exception!r}"
    assert outcome.code in (0, 2), f"iosim {shown}: exit {outcome.code}\n{outcome.err[-500:]}"
    assert "Traceback" not in outcome.err, f"iosim {shown}: {outcome.err[-500:]}"
    if outcome.code == 2:
        lines = outcome.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (
            f"iosim {shown}: stderr is not one Error: line: {outcome.err[:500]!r}")
        assert len(lines[0]) < 1000, f"iosim {shown}: a {len(lines[0])}-character error line"
    if outcome.code == 0 and "json" in args:
        strict_json(outcome.out)


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under folder with its size and mtime: what a refusal must leave as it was."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            stat = path.lstat()
            out[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return out
