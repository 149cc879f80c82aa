"""iosim's decoding choices against the H200 record of issue 14 (no GPU needed).

    python benchmarks/decode_choices_h200.py [RECORD] [--profile spec|measured]

RECORD defaults to tests/data/h200-variants.json. Two sets are reported apart: the fit set
("decode", "cascade": the points the split rule and the cascade model were chosen on) and the
held-out judge set ("decode_judge", "cascade_judge": 12 shapes and 14 batches written down in
calibrate/variants_points.py before any model output was looked at, timed in one later run).

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


def split_picks(record: dict[str, Any], section: str = "decode",
                profile: str = "spec") -> list[dict[str, Any]]:
    """One row per ok decode shape of `section`: the picks and their measured time over the
    fastest."""
    config = record["decode_config"]
    rows = []
    for d in record.get(section, []):
        if d.get("status") != "ok":
            continue
        w = Workload(1, n_kv=d["n_kv"], d=d["d"], heads=d["heads"], kv_heads=d["kv_heads"],
                     batch=d["batch"])
        measured = {r["splits"]: r["time_s"] for r in d["sweep"]}
        choice = choose_splits(w, "h200", block_q=config["block_r"], block_kv=config["block_n"],
                               profile=profile)
        fastest = min(measured.values())
        rows.append({"id": d["id"], "fastest": d["best_splits"], "pick": choice.best.splits,
                     "pick_over_fastest": measured[choice.best.splits] / fastest,
                     "fa2": choice.heuristic,
                     "fa2_over_fastest": measured[choice.heuristic] / fastest})
    return rows


def verdicts(record: dict[str, Any], section: str = "cascade",
             profile: str = "spec") -> list[dict[str, Any]]:
    """One row per ok shared-prefix batch of `section`: iosim's winner and ratio (slower ÷
    faster), the measured ones."""
    rows = []
    for c in record.get(section, []):
        if c.get("status") != "ok":
            continue
        suffixes = tuple(c["suffix_lens"])
        w = Workload(1, n_kv=c["prefix_len"] + max(suffixes), d=c["d"], heads=c["heads"],
                     kv_heads=c["kv_heads"], batch=c["batch"], prefix_len=c["prefix_len"],
                     suffix_lens=suffixes)
        verdict = cascade_verdict(compare(w, "h200", algorithms=["splitkv", "cascade"],
                                          profile=profile))  # type: ignore[arg-type]
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


def print_picks(picks: list[dict[str, Any]], title: str) -> None:
    print(f"split count ({title}): iosim --splits auto and FA2's heuristic, measured time ÷ "
          "the fastest")
    print(f"{'shape':<24} {'fastest':>7} {'iosim':>6} {'÷':>6} {'FA2':>5} {'÷':>6}")
    for r in picks:
        print(f"{r['id']:<24} {r['fastest']:>7} {r['pick']:>6} {r['pick_over_fastest']:>6.3f} "
              f"{r['fa2']:>5} {r['fa2_over_fastest']:>6.3f}")
    good = sum(r["pick_over_fastest"] <= WITHIN for r in picks)
    fa2 = sum(r["fa2_over_fastest"] <= WITHIN for r in picks)
    print(f"within 5 % of the fastest: iosim {good} of {len(picks)}, FA2's heuristic {fa2}")


def print_verdicts(rows: list[dict[str, Any]], title: str) -> None:
    print(f"\nshared prefix ({title}): iosim's winner (its predicted ratio) and the measured one")
    print(f"{'batch':<26} {'iosim':>8} {'×':>6} {'measured':>9} {'×':>6}")
    for r in rows:
        mark = "" if r["iosim"] == r["measured"] else "  wrong"
        print(f"{r['id']:<26} {r['iosim']:>8} {r['iosim_ratio']:>6.2f} {r['measured']:>9} "
              f"{r['measured_ratio']:>6.2f}{mark}")
    right = [r for r in rows if r["iosim"] == r["measured"]]
    print(f"verdict right: {len(right)} of {len(rows)} (measured: cascade wins "
          f"{sum(r['measured'] == 'cascade' for r in rows)}, split-KV "
          f"{sum(r['measured'] == 'splitkv' for r in rows)}; right where cascade won "
          f"{sum(r['measured'] == 'cascade' for r in right)}, where split-KV won "
          f"{sum(r['measured'] == 'splitkv' for r in right)})")


def main(argv: list[str]) -> int:
    profile = "spec"
    if "--profile" in argv:
        at = argv.index("--profile")
        profile = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
        if profile not in ("spec", "measured"):
            print(f"--profile takes spec or measured, not {profile!r}", file=sys.stderr)
            return 2
    record = json.loads(Path(argv[0] if argv else RECORD).read_text())
    print(f"profile: {profile}\n")
    for decode, cascade, title in (("decode", "cascade", "fit set"),
                                   ("decode_judge", "cascade_judge", "held-out judge set")):
        if not record.get(decode) and not record.get(cascade):
            continue
        print(f"=== {title} ===")
        print_picks(split_picks(record, decode, profile), title)
        print_verdicts(verdicts(record, cascade, profile), title)
        print()
    points = dram_points(record)
    print("split-KV bytes (fit set): iosim's DRAM estimate ÷ ncu DRAM read + write, per point")
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
