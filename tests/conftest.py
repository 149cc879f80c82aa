"""Shared test setup."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import matplotlib
import pytest
from rich.console import Console

matplotlib.use("Agg")

# Without an NVIDIA GPU the Triton kernels run under Triton's interpreter; the variable must be
# set before triton is first imported (its own jit functions are decorated at import).
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

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
