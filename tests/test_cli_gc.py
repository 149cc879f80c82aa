"""The console script's start-up: a command's module imported with the cyclic GC paused and
what it made frozen out of the collector's sight (cli/__init__.py:_import_command); in-process
callers import plainly, and the collector always works after."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from tests.conftest import run_cli


def test_the_console_script_freezes_its_imports_and_collects_after() -> None:
    code = ("import gc, sys; from iosim.cli import main; sys.argv = ['iosim', 'compare', "
            "'--n', '64', '--gpu', 'a100']\ntry:\n    main()\nexcept SystemExit as exit:\n"
            "    code = exit.code\nprint(code, gc.isenabled(), gc.get_freeze_count() > 1000, "
            "gc.collect() >= 0, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.split() == ["0", "True", "True", "True"], out.stderr


def test_in_process_commands_are_imported_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    from iosim.cli import cli

    # as if no test had run `explain` in this process yet: its module is imported here
    monkeypatch.delitem(sys.modules, "iosim.cli.explain_cmd", raising=False)
    monkeypatch.delitem(cli.commands, "explain", raising=False)
    frozen = gc.get_freeze_count()
    result = run_cli("explain", "softmax", "--scores", "2,1,0,3", "--block", "2")
    assert result.exit_code == 0, result.output
    assert "iosim.cli.explain_cmd" in sys.modules
    assert gc.get_freeze_count() == frozen and gc.isenabled()
