"""What hostile10 (2 Dec 2026) found in the environment a command runs in. Each test is one
finding; its comment says what it did before (on main at 6d7ab46)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from iosim.inputs import yaml_cache

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_a_console_that_cannot_write_the_symbols_gets_them_replaced(encoding: str,
                                                                    tmp_path: Path) -> None:
    # before: a UnicodeEncodeError traceback ('⌈' of the blocks line), exit 1, nothing printed
    env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONPATH": str(ROOT),
           "IOSIM_CACHE_DIR": ""}
    done = subprocess.run([sys.executable, "-m", "iosim", "compare", "--gpu", "h200", "--n",
                           "1024"], capture_output=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr.decode(encoding)[-300:]
    out = done.stdout.decode(encoding)
    assert "blocks    flash1: B_r" in out and "?M/4d?" in out
    refused = subprocess.run([sys.executable, "-m", "iosim", "compare", "--gpu", "h200", "--n",
                              "0"], capture_output=True, env=env, cwd=tmp_path, timeout=120)
    assert refused.returncode == 2
    assert refused.stderr.decode(encoding).startswith("Error: --n must be at least 1")


@pytest.mark.parametrize(("variables", "expected"), [
    # before: relative/x/iosim, made in the working folder by the first command
    ({"XDG_CACHE_HOME": "relative/x", "HOME": "/home/someone"}, "/home/someone/.cache/iosim"),
    # before: relative/.cache/iosim in the working folder
    ({"XDG_CACHE_HOME": "", "HOME": "relative"}, None),
])
def test_a_relative_cache_home_makes_no_folder_in_the_working_folder(
        monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], expected: str | None
        ) -> None:
    monkeypatch.delenv(yaml_cache.CACHE_DIR_ENV, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert yaml_cache.cache_dir() == expected
