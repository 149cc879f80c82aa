"""The package's public API: every name resolves, lazily, and importing iosim stays light."""

from __future__ import annotations

import subprocess
import sys

import iosim


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in iosim.__all__:
        assert getattr(iosim, name) is not None, name
    assert set(iosim.__all__) <= set(dir(iosim))


def test_no_function_shadows_a_module() -> None:
    """`import iosim.analysis.compare as m` is the module, `iosim.compare` the function."""
    import iosim.analysis.compare as module

    assert module.__name__ == "iosim.analysis.compare"
    assert callable(iosim.compare) and iosim.compare is module.compare


def test_import_iosim_loads_no_executor_sweep_or_plots() -> None:
    heavy = ("iosim.execute", "iosim.analysis.sweep", "iosim.analysis.verify", "iosim.output",
             "pandas", "matplotlib", "click", "rich")
    code = f"import sys, iosim; print([m for m in sys.modules if m.startswith({heavy!r})])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
