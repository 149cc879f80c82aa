"""benchmarks/variants_h200.py's held-out sections (decode_judge, cascade_judge) on their tiny
points under Triton's interpreter: every split count (cascade: every split pair) built, checked
against the float64 reference and timed, as the GPU run does them on the real points."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.interpreter
torch = pytest.importorskip("torch")
if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("the GPU runs the real points (benchmarks/variants_h200.sh)", allow_module_level=True)
os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_the_judge_sections_time_every_split_count_of_their_tiny_points(tmp_path: Path) -> None:
    import variants_h200 as run

    from iosim.calibrate import variants_sections as VS
    from iosim.calibrate.variants_ncu import key_blocks

    gen = torch.Generator().manual_seed(14)
    clock = run.Clock(60.0)
    decode = run.run_decode(VS.TINY["decode_judge"], gen, clock, lambda _: None,
                            all_splits=True, page_sizes=[None])
    cascade = run.run_cascade(VS.TINY["cascade_judge"], gen, clock, lambda _: None)
    for row, point in zip(decode, VS.TINY["decode_judge"], strict=True):
        assert row["status"] == "ok", row["status"]
        top = min(128, key_blocks(point["n_kv"]))
        assert [s["splits"] for s in row["sweep"]] == list(range(1, top + 1))
    for row in cascade:
        assert row["status"] == "ok", row["status"]
        assert row["winner"] in ("cascade", "splitkv") and row["cascade"] and row["splitkv"]


def test_the_dry_run_builds_and_checks_a_point_in_a_fresh_process(tmp_path: Path) -> None:
    """`TRITON_INTERPRET=1 python benchmarks/variants_h200.py OUT --sections cascade` on the CPU,
    in a process of its own (no test's set-up): its kernels' runtime loop bounds run under Triton
    3.6's interpreter with NumPy >= 2.4 (iosim/calibrate/triton_interpreter.py, applied by
    kernels_common.py), the tiny cascade point is checked and timed, and the dry run exits 0
    (1 if a point failed)."""
    import json
    import subprocess

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(root / "benchmarks/variants_h200.py"),
                           str(tmp_path), "--sections", "cascade"], env=env, cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    record = json.loads((tmp_path / "variants-h200.json").read_text())
    assert [r["status"] for r in record["cascade"]] == ["ok"]
