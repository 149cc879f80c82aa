"""The README's first lines and example outputs cannot drift from the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_readme_outputs_are_current():
    out = subprocess.run([sys.executable, "tools/readme_sync.py", "--check", "README.md"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_readme_starts_with_the_two_commands_ci_runs():
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```bash") + 1: lines.index("```bash") + 3]
    assert block[0].endswith("iosim compare --n 4096 --gpu a100")
    assert block[1].endswith("pytest -q")
    # .ci/run runs those two lines word for word, first, in a fresh venv (issue 13 item 1)
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"README_INSTALL='{block[0]}'" in ci and f"README_TESTS='{block[1]}'" in ci
    assert ci.index('eval "$README_INSTALL"') < ci.index("pip install -q \"torch")
