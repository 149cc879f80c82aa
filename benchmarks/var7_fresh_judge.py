"""var7's fresh judgement from what came back of its device run (benchmarks/variants-h200/
run-var7.log: each fresh MLA shape's fastest split count and time, each fresh shared-prefix
batch's fastest split-KV count, fastest cascade pair, their times and the winner; the record with
ncu's DRAM counts did not come back). Judged with the model checked out (branch var7: the
DRAM rules off; tag var7-frozen: on):

  * the cascade-vs-split-KV verdict of the decoding time model (analysis/decode_time.py),
  * each method's modelled time at its measured fastest counts (±15 %),
  * the MLA time at the fastest measured count (±15 %), and whether the model's pick among
    the timed counts (1, 2, 4, ..., 64) is the fastest (the other counts' times were lost, so
    a different pick is reported, not judged).

    python benchmarks/var7_fresh_judge.py [benchmarks/variants-h200/run-var7.log]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import decode_choices_h200 as dc
from decode_fit_h200 import MLA_TILES, mla_workload

from iosim.analysis.decode_time import DecodeCounts
from iosim.calibrate.variants_points import CASCADE_FRESH4, MLA_FRESH3

MLA_LINE = re.compile(r"^(mla-h-\S+): best (\d+) splits ([\d.]+) us$")
CAS_LINE = re.compile(r"^(lcas-\S+): split-KV ([\d.]+) us \((\d+)\), cascade ([\d.]+) us "
                      r"\((\d+)\+(\d+)\): (\w+)$")


def parse(text: str) -> dict[str, Any]:
    mla = {p["id"]: p for p in MLA_FRESH3}
    cas = {p["id"]: p for p in CASCADE_FRESH4}
    record: dict[str, Any] = {"decode_config": {"block_r": 16, "block_n": 64,
                                                "prefix_block_r": 64},
                              "mla_fresh3": [], "cascade_fresh4": []}
    for line in text.splitlines():
        if m := MLA_LINE.match(line):
            s, t = int(m[2]), float(m[3]) * 1e-6
            record["mla_fresh3"].append({**mla[m[1]], "status": "ok", "best_splits": s,
                                         "sweep": [{"splits": s, "time_s": t}]})
        elif m := CAS_LINE.match(line):
            record["cascade_fresh4"].append({
                **cas[m[1]], "status": "ok", "winner": m[7],
                "best_splitkv": {"splits": int(m[3]), "time_s": float(m[2]) * 1e-6},
                "best_cascade": {"prefix_splits": int(m[5]), "suffix_splits": int(m[6]),
                                 "time_s": float(m[4]) * 1e-6}})
    return record


def main(argv: list[str]) -> int:
    log = Path(argv[0] if argv else Path(__file__).parent / "variants-h200" / "run-var7.log")
    record = parse(log.read_text())
    rows = dc.timed_verdicts(record, "cascade_fresh4")
    print("| batch | measured winner (×) | model winner (×) | right | split-KV µs (splits) | "
          "model | error | cascade µs (splits) | model | error |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        se, ce = r["splitkv_model_us"] / r["splitkv_us"] - 1, r["cascade_model_us"] / r["cascade_us"] - 1
        print(f"| {r['id']} | {r['measured']} ({r['measured_ratio']:.2f}) | {r['iosim']} "
              f"({r['iosim_ratio']:.2f}) | {'yes' if r['iosim'] == r['measured'] else '**no**'} | "
              f"{r['splitkv_us']:.1f} ({r['splitkv_splits']}) | {r['splitkv_model_us']:.1f} | "
              f"{se:+.0%} | {r['cascade_us']:.1f} ({r['cascade_splits']}) | "
              f"{r['cascade_model_us']:.1f} | {ce:+.0%} |")
    right = sum(r["iosim"] == r["measured"] for r in rows)
    times = sum(abs(r[k + "_model_us"] / r[k + "_us"] - 1) <= 0.15 for r in rows
                for k in ("splitkv", "cascade"))
    print(f"\nverdict right: {right} of {len(rows)}; times within ±15 %: {times} of "
          f"{2 * len(rows)}\n")
    print("| MLA shape | fastest splits | µs | model µs | error | model pick (1..64) |")
    print("|---|---:|---:|---:|---:|---:|")
    ok = 0
    for p in record["mla_fresh3"]:
        counts = DecodeCounts(mla_workload(p), "h200", MLA_TILES)
        best = p["best_splits"]
        measured = p["sweep"][0]["time_s"]
        top = -(-p["n_kv"] // MLA_TILES.block_kv)
        model = {s: counts.splitkv(s).time_s for s in (1, 2, 4, 8, 16, 32, 64) if s <= top}
        pick = min(model, key=lambda s: (model[s], s))
        err = model[best] / measured - 1
        ok += abs(err) <= 0.15
        print(f"| {p['id']} | {best} | {measured * 1e6:.1f} | {model[best] * 1e6:.1f} | "
              f"{err:+.0%} | {pick}{'' if pick == best else ' (not the fastest: its time lost)'} |")
    print(f"\nMLA time within ±15 %: {ok} of {len(record['mla_fresh3'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
