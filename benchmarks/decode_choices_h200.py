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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
