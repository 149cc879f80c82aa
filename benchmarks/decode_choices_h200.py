"""iosim's decoding choices against the H200 record of issue 14 (no GPU needed).

    python benchmarks/decode_choices_h200.py [tests/data/h200-variants.json]

The record (benchmarks/variants_h200.py, schema iosim/h200-variants/1) holds Triton split-KV
decode kernels timed at every split count ("decode" rows) and shared-prefix batches timed as
split-KV and as cascade at each's best split counts ("cascade" rows). For each decode shape this
prints `--splits auto`'s pick (analysis/split_choice.py, with the measured kernels' tiles:
decode_config block_r × block_n) and FA2's heuristic's, each as its measured time over the
fastest measured count; for each shared-prefix batch, iosim's verdict (compare's default tiles
and split heuristic, analysis/cascade_verdict.py) next to the measured winner. Acceptance (issue
14): the pick within 5 % of the fastest on at least 8 decode shapes; the verdict right on at
least 8 batches, including ones where each wins.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from iosim import Workload
from iosim.analysis.cascade_verdict import cascade_verdict
from iosim.analysis.compare import compare
from iosim.analysis.split_choice import choose_splits

RECORD = Path(__file__).resolve().parents[1] / "tests" / "data" / "h200-variants.json"
WITHIN = 1.05


def split_picks(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per ok decode shape: the picks and their measured time over the fastest."""
    config = record["decode_config"]
    rows = []
    for d in record["decode"]:
        if d.get("status") != "ok":
            continue
        w = Workload(1, n_kv=d["n_kv"], d=d["d"], heads=d["heads"], kv_heads=d["kv_heads"],
                     batch=d["batch"])
        measured = {r["splits"]: r["time_s"] for r in d["sweep"]}
        choice = choose_splits(w, "h200", block_q=config["block_r"], block_kv=config["block_n"])
        fastest = min(measured.values())
        rows.append({"id": d["id"], "fastest": d["best_splits"], "pick": choice.best.splits,
                     "pick_over_fastest": measured[choice.best.splits] / fastest,
                     "fa2": choice.heuristic,
                     "fa2_over_fastest": measured[choice.heuristic] / fastest})
    return rows


def verdicts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per ok shared-prefix batch: iosim's winner and ratio, the measured ones."""
    rows = []
    for c in record["cascade"]:
        if c.get("status") != "ok":
            continue
        suffixes = tuple(c["suffix_lens"])
        w = Workload(1, n_kv=c["prefix_len"] + max(suffixes), d=c["d"], heads=c["heads"],
                     kv_heads=c["kv_heads"], batch=c["batch"], prefix_len=c["prefix_len"],
                     suffix_lens=suffixes)
        verdict = cascade_verdict(compare(w, "h200", algorithms=["splitkv", "cascade"]))
        assert verdict is not None
        split, cascade = c["best_splitkv"]["time_s"], c["best_cascade"]["time_s"]
        rows.append({"id": c["id"], "iosim": verdict.winner, "iosim_ratio": verdict.ratio,
                     "measured": c["winner"],
                     "measured_ratio": max(split, cascade) / min(split, cascade)})
    return rows


def dram_points(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per split-KV point Nsight Compute counted (decode, paged, and the split-KV side
    of the shared-prefix batches): iosim's DRAM estimate (compare, the measured kernels' tiles
    and that split count: the L2-oblivious count, which the L2 model keeps for split-KV, less a
    shared prefix's duplicate reads, estimates/shared_prefix_dram.py) over the kernels' DRAM
    read + write bytes."""
    config = record["decode_config"]
    shapes = {s["id"]: s for s in record["decode"] + record["paged"] + record["cascade"]}
    rows = []
    for section in record["counters"]:
        for p in section.get("points", []):
            shape = shapes.get(p["id"])
            if shape is None or p.get("method") == "cascade" or "splits" not in p:
                continue  # cascade's prefix and suffix run their own split counts: not one
            if "prefix_len" in shape:
                suffixes = tuple(shape["suffix_lens"])
                w = Workload(1, n_kv=shape["prefix_len"] + max(suffixes), d=shape["d"],
                             heads=shape["heads"], kv_heads=shape["kv_heads"],
                             batch=shape["batch"], prefix_len=shape["prefix_len"],
                             suffix_lens=suffixes)
                kind = "shared prefix"
            else:
                w = Workload(1, n_kv=shape["n_kv"], d=shape["d"], heads=shape["heads"],
                             kv_heads=shape["kv_heads"], batch=shape["batch"],
                             page_size=shape.get("page_size"))
                kind = "paged" if shape.get("page_size") else "decode"
            result = compare(w, "h200", algorithms=["splitkv"], block_q=config["block_r"],
                             block_kv=config["block_n"], splits=p["splits"])
            splitkv = next(a for a in result.algorithms if a.name == "splitkv")
            model = splitkv.dram.bytes if splitkv.dram is not None else splitkv.hbm_bytes
            measured = sum(k["dram__bytes_read.sum"] + k["dram__bytes_write.sum"]
                           for k in p["kernels"])
            rows.append({"id": p["count_id"], "kind": kind, "ratio": model / measured})
    return rows


def main(argv: list[str]) -> int:
    record = json.loads(Path(argv[0] if argv else RECORD).read_text())
    picks = split_picks(record)
    print("split count: iosim --splits auto and FA2's heuristic, measured time ÷ the fastest")
    print(f"{'shape':<18} {'fastest':>7} {'iosim':>6} {'÷':>6} {'FA2':>5} {'÷':>6}")
    for r in picks:
        print(f"{r['id']:<18} {r['fastest']:>7} {r['pick']:>6} {r['pick_over_fastest']:>6.3f} "
              f"{r['fa2']:>5} {r['fa2_over_fastest']:>6.3f}")
    good = sum(r["pick_over_fastest"] <= WITHIN for r in picks)
    fa2 = sum(r["fa2_over_fastest"] <= WITHIN for r in picks)
    print(f"within 5 % of the fastest: iosim {good} of {len(picks)}, FA2's heuristic {fa2}")
    rows = verdicts(record)
    print("\nshared prefix: iosim's winner (its predicted ratio) and the measured one")
    print(f"{'batch':<18} {'iosim':>8} {'×':>6} {'measured':>9} {'×':>6}")
    for r in rows:
        print(f"{r['id']:<18} {r['iosim']:>8} {r['iosim_ratio']:>6.2f} {r['measured']:>9} "
              f"{r['measured_ratio']:>6.2f}")
    right = sum(r["iosim"] == r["measured"] for r in rows)
    print(f"verdict right: {right} of {len(rows)} (measured: cascade wins "
          f"{sum(r['measured'] == 'cascade' for r in rows)}, split-KV "
          f"{sum(r['measured'] == 'splitkv' for r in rows)})")
    points = dram_points(record)
    print("\nsplit-KV bytes: iosim's DRAM estimate ÷ ncu DRAM read + write, per point")
    for kind in ("decode", "paged", "shared prefix"):
        ratios = sorted(r["ratio"] for r in points if r["kind"] == kind)
        if not ratios:
            continue
        inside = sum(abs(x - 1) <= 0.10 for x in ratios)
        print(f"{kind:<14} {len(ratios):>3} points, {inside:>3} within ±10 %; ratio "
              f"{ratios[0]:.2f} .. {ratios[-1]:.2f}, median {ratios[len(ratios) // 2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
