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
from tests._triton_compat import patch_interpreter  # noqa: E402

patch_interpreter()
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
