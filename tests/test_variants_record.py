"""The committed H200 record of issue 14's variants (tests/data/h200-variants.json): its schema,
that every timed point passed its float64 check, and that its sweeps say what the brief asked.

Made by `bash benchmarks/variants_h200.sh OUT` on the lent H200 (two runs, merged by
benchmarks/variants_merge.py; each run's command is inside the record).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.conftest import DATA

RECORD = json.loads((DATA / "h200-variants.json").read_text())
SECTIONS = ("flex", "flex2", "decode", "paged", "cascade", "mla", "fp8", "repeat", "decode_judge",
            "cascade_judge", "decode_fresh", "cascade_fresh", "fp8_e5m2", "cascade_fresh2",
            "decode_fresh2", "cascade_fresh3", "mla_fresh", "fp8_fresh", "fp8_block", "fp8_fresh2",
            "mla_fresh2", "mla_fresh3", "cascade_fresh4", "decode_fresh3", "cascade_fresh5",
            "mla_fresh4", "fp8_fresh3", "cascade_fresh6", "cascade_fresh7", "cascade_fresh8",
            "cascade_fresh9")
DESCRIPTORS = ("id", "kind", "dtype", "d", "n", "heads", "kv_heads", "batch", "causal")
TOLERANCE = {"fp16": 2e-3, "bf16": 1e-2}
BLOCK_N = RECORD["decode_config"]["block_n"]


def points() -> list[dict[str, Any]]:
    return [p for s in SECTIONS for p in RECORD[s]]


def test_runs_name_their_command_and_device() -> None:
    assert RECORD["schema"] == "iosim/h200-variants/1"
    for run in RECORD["runs"]:
        assert run["command"].startswith("PYTHONPATH=$PWD python3 benchmarks/variants_h200.py")
        env = run["environment"]
        assert env["name"] == "NVIDIA H200" and env["sm_count"] == 132
        assert env["torch"] and env["triton"] and env["driver"]


@pytest.mark.parametrize("section", ["flex", "decode", "paged", "cascade", "mla", "fp8"])
def test_sections_hold_enough_shapes(section: str) -> None:
    # the brief: >= 6 Flex shapes per mask kind, >= 8 decode shapes, >= 8 shared-prefix batches;
    # issue 14: >= 5 shapes per variant
    wanted = {"flex": 12, "decode": 8, "paged": 8, "cascade": 8, "mla": 5, "fp8": 5}
    assert len(RECORD[section]) >= wanted[section]


def test_every_point_is_described_in_iosim_terms_and_passed_its_check() -> None:
    for p in points():
        assert all(k in p for k in DESCRIPTORS), p["id"]
        assert p["status"] == "ok"
        errors = [p["rel_error"]] if "rel_error" in p else [
            r["rel_error"] for key in ("sweep", "splitkv", "cascade") for r in p.get(key, [])]
        # fp8: against the dequantized inputs, P rounded to the input format
        # (calibrate/variants_mla_fp8.py FP8_TOLERANCE: e5m2 has one mantissa bit fewer)
        tol = {"fp8_e4m3": 4e-2, "fp8_e5m2": 8e-2}.get(p["dtype"]) or TOLERANCE[p["dtype"]]
        assert errors and all(0 <= e <= tol for e in errors), p["id"]


def test_flex_masks_cover_windows_and_documents() -> None:
    flex = RECORD["flex"]
    windows = [p for p in flex if p["window"]]
    docs = [p for p in flex if p["seqlens"]]
    assert len({p["causal"] for p in windows}) == 2 and len(windows) >= 6
    assert len(docs) >= 6
    for p in docs:
        assert sum(p["seqlens"]) == p["n"]
    for p in flex:
        assert p["mask_block_size"] == [p["block_size"]] * 2
        assert p["block_grid"] == [math.ceil(p["n"] / p["block_size"])] * 2
        # some working sets exceed the 60 MiB L2
    assert any(2 * p["n_kv"] * p["kv_heads"] * p["d"] * 2 > 60 * 2**20 for p in flex)


def test_decode_sweeps_time_every_split_count() -> None:
    for p in RECORD["decode"] + RECORD["repeat"]:
        top = min(128, math.ceil(p["n_kv"] / BLOCK_N))
        assert [r["splits"] for r in p["sweep"]] == list(range(1, top + 1)), p["id"]
        fastest = min(p["sweep"], key=lambda r: r["time_s"])
        assert p["best_splits"] == fastest["splits"]
        assert all(r["time_p20_s"] <= r["time_s"] <= r["time_p80_s"] for r in p["sweep"])
    batches = {p["batch"] for p in RECORD["decode"]}
    assert min(batches) == 1 and max(batches) == 64
    assert {p["heads"] == p["kv_heads"] for p in RECORD["decode"]} == {True, False}


def test_page_sizes_cover_one_to_256_and_contiguous() -> None:
    sizes = {p["page_size"] for p in RECORD["paged"]}
    assert sizes == {1, 8, 16, 64, 128, 256, None}


def test_each_side_of_cascade_wins_somewhere() -> None:
    winners = [p["winner"] for p in RECORD["cascade"]]
    assert set(winners) == {"cascade", "splitkv"}
    for p in RECORD["cascade"]:
        best = {"cascade": p["best_cascade"]["time_s"], "splitkv": p["best_splitkv"]["time_s"]}
        assert p["winner"] == min(best, key=best.__getitem__)
        assert len(p["suffix_lens"]) == p["batch"]


def test_counters_belong_to_recorded_points_and_add_up() -> None:
    ids = {p["id"] for p in points()}
    counted = [c for run in RECORD["counters"] for c in run["points"]]
    assert RECORD["counters"] and all(run["status"] == "ok" for run in RECORD["counters"])
    assert len(counted) >= 100
    for c in counted:
        assert c["id"] in ids
        assert c["kernels"], c["count_id"]
        k = c["kernels"]
        assert c["dram_read_bytes"] == pytest.approx(sum(x["dram__bytes_read.sum"] for x in k), rel=1e-4)
        assert c["dram_write_bytes"] >= sum(x["dram__bytes_write.sum"] for x in k) * (1 - 1e-4)
    # each Flex point is one fused kernel
    flex = {p["id"] for p in RECORD["flex"] + RECORD["flex2"]}
    assert {len(c["kernels"]) for c in counted if c["id"] in flex} == {1}


def test_refusals_are_recorded_with_their_reason() -> None:
    # Flex's kernel tiles (BLOCK_M 128) must divide the block mask's BLOCK_SIZE: 64 is refused
    for r in RECORD["refused"]:
        assert r["section"] in SECTIONS and r["status"].startswith("failed: ")
