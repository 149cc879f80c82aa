"""The GPU configs ship inside the wheel: a non-editable install, run elsewhere, finds all of them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_wheel_ships_the_gpu_configs(tmp_path):
    pytest.importorskip("hatchling")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(ROOT)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("iosim-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(p.name for p in (ROOT / "configs" / "gpus").glob("*.yaml"))
    assert sorted(Path(n).name for n in names if n.startswith("iosim/configs/gpus/")) == shipped
    assert "iosim/py.typed" in names
    models = sorted(p.name for p in (ROOT / "configs" / "models").glob("*.yaml"))
    assert sorted(Path(n).name for n in names if n.startswith("iosim/configs/models/")) == models

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                    str(wheel)], check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = ("import iosim, iosim.inputs.gpus as h; print(iosim.__file__); "
            "print(h.config_dir()); print(len(iosim.list_hardware()))")
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0].startswith(str(target))  # the installed copy, not the checkout
    assert out[1].startswith(str(target))
    assert int(out[2]) == len(shipped)
