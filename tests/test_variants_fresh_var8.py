"""var7's fresh decoding sets as judged by var8 (reports/variants-h200.md, "Issue 14, var8: var7's
rules judged fresh"): the report's figures against the committed record and the shipped model.

The record: tests/data/h200-variants.json sections "mla_fresh3" and "cascade_fresh4" and their
33 ncu counts, measured at tag var7-frozen by `PYTHONPATH=$PWD timeout 280 python3
benchmarks/variants_h200.py $OUT/v --sections mla_fresh3,cascade_fresh4 --deadline-s 80
--budget-s 140 --ncu-timeout-s 70` on an NVIDIA H200 (torch 2.11.0+cu130, Triton 3.6.0,
2026-12-02; logs benchmarks/variants-h200/run-var7-fresh-dram.log, ncu-var7-fresh-dram.log).
Every figure checked here is read from the report and computed again from the record by the
model as shipped, so the report cannot drift from either: since var9 the launch-order rules are
on (shipped on var9's fresh judgement), so the shipped model is the report's "on" columns
(var7-frozen's: the same bytes on these points).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import markdown_table, without_prefix_rereads

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import var8_fresh_dram_judge as judge  # noqa: E402

RECORD: dict[str, Any] = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
REPORT = (ROOT / "reports/variants-h200.md").read_text()


def section() -> str:
    start = REPORT.index("## Issue 14, var8: var7's rules judged fresh")
    end = REPORT.index("\n## ", start + 1)
    return REPORT[start:end]


def table(header: str) -> list[list[str]]:
    """The rows of the section's table whose header line starts with `header`."""
    return markdown_table(section(), header)


def pct(cell: str) -> float:
    return float(cell.rstrip("%")) / 100


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, Any]]:
    with without_prefix_rereads():  # the model this report shipped (var10's rule came later)
        return {r["id"]: r for r in judge.fresh_dram_rows(RECORD)}


def test_the_report_lists_every_counted_fresh_point_once(rows: dict[str, dict[str, Any]]) -> None:
    reported = [r[0] for r in table("| counted point | family |")]
    counted = [p["count_id"] for c in RECORD["counters"] for p in c["points"]
               if p["id"].startswith(("mla-h-", "lcas-"))]
    assert len(reported) == len(set(reported)) == len(counted) == 33
    assert set(reported) == set(counted) == set(rows)


def test_each_row_is_ncu_and_the_shipped_model(rows: dict[str, dict[str, Any]]) -> None:
    for cells in table("| counted point | family |"):
        r = rows[cells[0]]
        assert cells[1] == r["family"]
        for at, key in ((2, "read"), (3, "write"), (4, "measured"), (7, "model")):
            assert float(cells[at].replace(",", "")) == pytest.approx(r[key] / 1e6, abs=0.006)
        # the "on" column is the shipped model's error to the rounding of its one decimal
        assert pct(cells[8]) == pytest.approx(r["error"], abs=0.0006), cells[0]


def test_the_family_counts_are_the_shipped_models(rows: dict[str, dict[str, Any]]) -> None:
    counts = judge.family_counts(list(rows.values()))
    families = table("| family | off (shipped)")
    assert [f[0] for f in families] == list(counts)
    for cells in families:
        ok, n = counts[cells[0]]
        assert cells[4] == f"{ok} of {n}"
    line = re.search(r"all fresh points within ±10 %: off (\d+) of (\d+), on (\d+) of (\d+)",
                     section())
    assert line is not None
    assert (int(line[3]), int(line[4])) == (sum(ok for ok, _ in counts.values()), len(rows))


def test_the_decision_follows_the_briefs_rule() -> None:
    # var8's verdict on its record (the brief's rule: ship only if more points are within
    # ±10 % and no family is worse); var9 shipped them on its own fresh record, with the ncu
    # protocol's residue in the judge (tests/test_variants_fresh_var9.py)
    families = {f[0]: f for f in table("| family | off (shipped)")}
    on = {f: int(c[4].split()[0]) for f, c in families.items()}
    off = {f: int(c[1].split()[0]) for f, c in families.items()}
    assert sum(on.values()) > sum(off.values())
    assert any(on[f] < off[f] for f in on)
    assert "**Decision: not shipped; the rules stay off.**" in section()


def test_the_deciding_batch_reads_q_once_from_dram() -> None:
    # an independent count from the shape: Q once + prefix K, V once + every suffix's K, V;
    # ncu's split-KV kernel read that to 1 %, where Q once per split would be 1.86 × it
    batch = next(p for p in RECORD["cascade_fresh4"] if p["id"] == "lcas-b60-p400-s50-mqa-d64")
    size = 2  # fp16
    q = batch["batch"] * batch["heads"] * batch["d"] * size
    kv = (batch["prefix_len"] + sum(batch["suffix_lens"])) * batch["kv_heads"] * batch["d"] * 2 * size
    point = next(p for c in RECORD["counters"] for p in c["points"]
                 if p["count_id"] == "lcas-b60-p400-s50-mqa-d64 splitkv s8")
    split_kernel = point["kernels"][0]
    assert split_kernel["kernel"] == "_iosim_decode_split_kernel"
    assert split_kernel["dram__bytes_read.sum"] == pytest.approx(q + kv, rel=0.01)
    assert (8 * q + kv) / (q + kv) > 1.8
    # its writes all came back through the closing evict: 0.6 MB more than the fp32 partial
    # states (O and log-sum-exp of 8 splits) and the output (O in fp16, L in fp32) it wrote
    assert all(k["dram__bytes_write.sum"] == 0 for k in point["kernels"])
    rows = batch["batch"] * batch["heads"]
    written = rows * 8 * (batch["d"] + 1) * 4 + rows * (batch["d"] * size + 4)
    assert point["dram_write_bytes"] == point["residue_write_bytes"]
    assert point["residue_write_bytes"] - written > 0.6e6


def test_the_time_figures_are_the_shipped_models() -> None:
    import decode_choices_h200 as dc

    verdicts = dc.timed_verdicts(RECORD, "cascade_fresh4")
    right = sum(r["iosim"] == r["measured"] for r in verdicts)
    times = sum(abs(r[k + "_model_us"] / r[k + "_us"] - 1) <= 0.15 for r in verdicts
                for k in ("splitkv", "cascade"))
    assert f"verdict right: {right} of {len(verdicts)}; times within ±15 %: {times} of " \
           f"{2 * len(verdicts)}" in section()
    mla = dc.mla_times(RECORD, "mla_fresh3")
    ok = sum(abs(r["error"]) <= 0.15 for r in mla)
    picks = sum(r["pick_over_fastest"] <= 1.05 for r in mla)
    assert f"MLA time within ±15 %: {ok} of {len(mla)}; pick within 5 % of the fastest: " \
           f"{picks} of {len(mla)}" in section()
