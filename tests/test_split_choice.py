"""`--splits auto` (issue 14 item 3): splitkv's predicted time per split count, the best pick
and FlashAttention-2's heuristic's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from iosim import Workload
from iosim.algorithms.splitkv import num_splits_heuristic
from iosim.analysis.compare import compare
from iosim.analysis.split_choice import choose_splits
from iosim.inputs.gpus import resolve_hardware


def test_a_large_grid_fills_the_resident_slots() -> None:
    """8 · 32 = 256 programs of MHA decoding: the pick is a count whose grid comes within 10 %
    of a whole number of waves of the resident slots (c per SM × 132 SMs)."""
    choice = choose_splits(Workload(1, n_kv=4096, d=128, heads=32, batch=8), "h200")
    assert choice.best.utilisation >= 0.9


def test_one_head_is_split_as_far_as_fa2_allows() -> None:
    """MQA with one request: one program per split, and 128 programs (FA2's limit) fill less than
    the 132·c resident slots, so every further split helps: the pick is the last count, at the
    utilisation 128 / (132·c)."""
    w = Workload(1, n_kv=131072, d=128, heads=8, kv_heads=1)
    choice = choose_splits(w, "h200")
    per_sm = next(a for a in compare(w, "h200", algorithms=["splitkv"]).algorithms
                  if a.name == "splitkv").tiling.programs_per_sm  # type: ignore[union-attr]
    assert choice.best.splits == 128
    assert choice.best.utilisation == pytest.approx(128 / (132 * per_sm))
    assert choice.rows[0].splits == 1 and choice.rows[-1].splits == 128


def test_the_heuristic_column_is_fa2s_rule() -> None:
    w = Workload(1, n_kv=8192, d=128, heads=32, kv_heads=8, batch=4)
    choice = choose_splits(w, "h200")
    sms = resolve_hardware("h200").hardware.sm_count
    assert sms is not None
    # packed GQA: 4 requests × 8 KV heads × 1 row block; 64 key blocks of 128 (B_c for d = 128)
    assert choice.heuristic == num_splits_heuristic(4 * 8 * 1, 2 * sms, 64, 128)
    assert choice.heuristic_slowdown >= 1.0
    # the rows are the counts FA2 would run: brute force over 1..64, the blocks per split
    # changing from one count to the next (an independent statement of flash_api.cpp's skip)
    per_split = {s: -(-64 // s) for s in range(1, 65)}
    assert [r.splits for r in choice.rows] == [
        s for s in range(1, 65) if s == 1 or per_split[s] != per_split[s - 1]]


def test_json_carries_every_count(iosim_cli: Any) -> None:
    code, out, err = iosim_cli("compare", "--gpu", "h200", "--n", "1", "--n-kv", "4096", "--d",
                               "128", "--heads", "8", "--kv-heads", "1", "--algo", "splitkv",
                               "--splits", "auto", "--format", "json")
    assert code == 0, err
    data = json.loads(out)["splits_auto"]
    # 32 key blocks of 128: the counts whose blocks per split differ from one split fewer's
    per_split = {s: -(-32 // s) for s in range(1, 33)}
    eligible = [s for s in range(1, 33) if s == 1 or per_split[s] != per_split[s - 1]]
    assert data["schema"] == "iosim.splits/2"
    assert [r["splits"] for r in data["rows"]] == eligible
    assert data["best"] in eligible
    # the run the tables show says its split count came from auto, not a typed --splits N
    tiling = {a["name"]: a for a in json.loads(out)["algorithms"]}["splitkv"]["tiling"]
    assert tiling["splits"] == data["best"]
    assert tiling["splits_rule"] == "--splits auto: the fastest predicted count"


@pytest.mark.parametrize(("args", "words"), [
    (["--n", "1", "--n-kv", "4096", "--splits", "auto", "--algo", "flash2"],
     "--splits auto applies to splitkv"),
    (["--n", "64", "--splits", "auto", "--algo", "splitkv", "--pass", "bwd"], "--pass fwd"),
    (["--n", "1", "--n-kv", "4096", "--splits", "many"], "neither a whole number nor auto"),
])
def test_bad_splits_auto_input_is_one_line(iosim_cli: Any, args: list[str], words: str) -> None:
    code, _out, err = iosim_cli("compare", "--gpu", "h200", *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_cascade_keeps_its_own_split_rule_beside_the_best_splitkv(iosim_cli: Any) -> None:
    args = ("compare", "--gpu", "h200", "--n", "1", "--heads", "32", "--kv-heads", "8", "--d",
            "128", "--prefix-len", "4096", "--suffix-lens", "16,40,9,100")
    code, out, err = iosim_cli(*args, "--splits", "auto", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    by_name = {a["name"]: a for a in data["algorithms"]}
    assert by_name["splitkv"]["tiling"]["splits"] == data["splits_auto"]["best"]
    code, plain, _ = iosim_cli(*args, "--format", "json")
    cascade = {a["name"]: a for a in json.loads(plain)["algorithms"]}["cascade"]
    assert by_name["cascade"]["tiling"]["splits"] == cascade["tiling"]["splits"]
    # the figure and the report run one split count for all: refused with cascade in the list
    code, _, err = iosim_cli("roofline", *args[1:], "--splits", "auto", "--out", "unused")
    assert code == 2 and "cascade splits by its own rule" in err
