"""Shared test setup."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import matplotlib
import pytest
from hypothesis import settings
from rich.console import Console

matplotlib.use("Agg")

# Without an NVIDIA GPU the Triton kernels run under Triton's interpreter; the variable must be
# set before triton is first imported (its own jit functions are decorated at import).
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Hypothesis profiles (docs/input-limits.md): `ci`, the default under `pytest -q`, keeps
# hypothesis's own defaults for every test (the fuzz suite takes a quarter of max_examples per
# property); `thorough` (HYPOTHESIS_PROFILE=thorough pytest tests/test_fuzz.py) runs ≥ 3,000
# fuzz cases. Deadlines are off in both: the fuzz suite times each case itself.
settings.register_profile("ci", deadline=None)
settings.register_profile("thorough", max_examples=1200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DATA = Path(__file__).parent / "data"
SEED_ACCELERATOR = DATA / "seed-accelerator.yaml"


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendered output must not depend on the developer's terminal."""
    for name in ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "unknown")


def render_plain(renderable: object, width: int = 110) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]
