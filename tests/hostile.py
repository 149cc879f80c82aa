"""Helpers for the hostile-input tests (test_hostile.py, test_fuzz.py, test_hostile9_flags.py):
run the CLI in-process and check the promise of issue 12: exit 0 or 2, no traceback, one
`Error:` line on exit 2, strict finite JSON on exit 0, nothing written on a refusal, and no
case slower than CASE_SECONDS."""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from iosim.cli import cli
from iosim.inputs.gpus import config_dir

CASE_SECONDS = 5.0
SLOW_WHEN_ACCEPTED = {"roofline", "report"}
"""Commands whose accepted cases draw figures (seconds each); their refusals must be fast."""

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


def finite(value: Any, where: str = "") -> None:
    """Every float in a parsed JSON document is finite."""
    if isinstance(value, float):
        assert math.isfinite(value), f"non-finite number at {where}"
    elif isinstance(value, dict):
        for k, v in value.items():
            finite(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            finite(v, f"{where}[{i}]")


def check_run(args: list[str], folder: Path) -> Outcome:
    """Run one command line in `folder` (the working folder) and hold it to every property of
    the module doc."""
    before = snapshot(folder)
    started = time.perf_counter()
    outcome = invoke(args)
    elapsed = time.perf_counter() - started
    assert_clean(outcome, args)
    if outcome.code == 2:
        assert snapshot(folder) == before, f"iosim {' '.join(args)[:200]}: wrote files on refusal"
    if outcome.code == 0 and "json" in args:
        finite(strict_json(outcome.out))
    if not (outcome.code == 0 and args[0] in SLOW_WHEN_ACCEPTED):
        assert elapsed < CASE_SECONDS, f"iosim {' '.join(args)[:200]}: {elapsed:.1f} s"
    return outcome


@contextmanager
def workdir() -> Iterator[Path]:
    """A fresh empty folder as the working folder, for one case."""
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="iosim-fuzz-") as folder:
        os.chdir(folder)
        try:
            yield Path(folder)
        finally:
            os.chdir(previous)
