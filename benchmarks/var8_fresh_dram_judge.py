"""var7's fresh decoding sets judged on the record that came back (issue 14, var8): the DRAM of
every counted point of tests/data/h200-variants.json sections mla_fresh3 and cascade_fresh4
(ncu read + write, the dirty lines left in L2 included) against the model checked out, per
family, and the time side from the same record.

    python benchmarks/var8_fresh_dram_judge.py                  # the model checked out
    python benchmarks/var8_fresh_dram_judge.py --json > X.json  # its rows, to join
    python benchmarks/var8_fresh_dram_judge.py --join OFF.json ON.json   # both, one table

The rules off are branch main; on, main with `git revert a9b608b` (or tag var7-frozen: the
same bytes on these points). Run --json in each checkout (PYTHONPATH=that checkout), then --join.
The record was measured at tag var7-frozen (its "runs" entry); nothing in it was seen before
the rules were frozen.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import decode_choices_h200 as dc
import launch_order_dram_check as lod

RECORD = Path(__file__).resolve().parents[1] / "tests" / "data" / "h200-variants.json"
FRESH = ("mla_fresh3", "cascade_fresh4")
FAMILIES = {"mla": "MLA decode", "shared prefix splitkv": "shared-prefix split-KV",
            "shared prefix cascade": "cascade"}
WITHIN = 0.10


def fresh_dram_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per ncu-counted fresh point: its family, ncu's bytes and the model's."""
    counted = {p["count_id"]: p for c in record["counters"] for p in c.get("points", [])}
    rows = [r for r in dc.dram_points(record, ("cascade_fresh4",)) + lod.mla_points(record)
            if r["section"] in FRESH]
    return [{"id": r["id"], "family": FAMILIES[r["kind"]],
             "read": counted[r["id"]]["dram_read_bytes"],
             "write": counted[r["id"]]["dram_write_bytes"],
             "measured": r["measured_bytes"], "model": r["model_bytes"],
             "error": r["model_bytes"] / r["measured_bytes"] - 1} for r in rows]


def family_counts(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """(points within ±10 %, points) per family, in FAMILIES' order."""
    out = {}
    for family in FAMILIES.values():
        errors = [r["error"] for r in rows if r["family"] == family]
        out[family] = (sum(abs(e) <= WITHIN for e in errors), len(errors))
    return out


def print_join(off: list[dict[str, Any]], on: list[dict[str, Any]]) -> None:
    rules = {r["id"]: r for r in on}
    print("| counted point | family | ncu read MB | ncu write MB | ncu MB | off MB | off error "
          "| on MB | on error |\n|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in off:
        o = rules[r["id"]]
        print(f"| {r['id']} | {r['family']} | {r['read'] / 1e6:,.2f} | {r['write'] / 1e6:,.2f} | "
              f"{r['measured'] / 1e6:,.2f} | {r['model'] / 1e6:,.2f} | {r['error']:+.1%} | "
              f"{o['model'] / 1e6:,.2f} | {o['error']:+.1%} |")
    print("\n| family | off (shipped): within ±10 % | median abs error | worst | "
          "on (var7-frozen): within ±10 % | median abs error | worst |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for family in FAMILIES.values():
        cells = []
        for rows in (off, on):
            errors = [r["error"] for r in rows if r["family"] == family]
            ok = sum(abs(e) <= WITHIN for e in errors)
            cells += [f"{ok} of {len(errors)}", f"{statistics.median(map(abs, errors)):.1%}",
                      f"{max(errors, key=abs):+.1%}"]
        print(f"| {family} | {' | '.join(cells)} |")
    total = [sum(abs(r["error"]) <= WITHIN for r in rows) for rows in (off, on)]
    print(f"\nall fresh points within ±10 %: off {total[0]} of {len(off)}, on {total[1]} of "
          f"{len(on)}")


def print_times(record: dict[str, Any], cascade: str = "cascade_fresh4",
                mla_section: str = "mla_fresh3") -> None:
    """The time side of the same record, the model checked out (var7_fresh_judge's tables, now
    with every split count's time: the MLA pick is judged, not only reported); var9's judge
    calls it with its own sections."""
    rows = dc.timed_verdicts(record, cascade)
    print("| batch | measured winner (×) | model winner (×) | right | split-KV µs (splits) | "
          "model | error | cascade µs (splits) | model | error |\n"
          "|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {dc._verdict_cells(r)} |")
    right = sum(r["iosim"] == r["measured"] for r in rows)
    times = sum(abs(r[k + "_model_us"] / r[k + "_us"] - 1) <= 0.15 for r in rows
                for k in ("splitkv", "cascade"))
    print(f"\nverdict right: {right} of {len(rows)}; times within ±15 %: {times} of "
          f"{2 * len(rows)}\n")
    mla = dc.mla_times(record, mla_section)
    print("| MLA shape | fastest splits | µs | model µs | error | model pick | ÷ fastest |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for r in mla:
        print(f"| {r['id']} | {r['fastest']} | {r['measured_us']:.1f} | {r['model_us']:.1f} | "
              f"{r['error']:+.0%} | {r['pick']} | {r['pick_over_fastest']:.3f} |")
    print(f"\nMLA time within ±15 %: {sum(abs(r['error']) <= 0.15 for r in mla)} of {len(mla)}; "
          f"pick within 5 % of the fastest: {sum(r['pick_over_fastest'] <= 1.05 for r in mla)} "
          f"of {len(mla)}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--join"]:
        off, on = (json.loads(Path(p).read_text()) for p in argv[1:3])
        print_join(off, on)
        return 0
    record = json.loads(RECORD.read_text())
    rows = fresh_dram_rows(record)
    if argv[:1] == ["--json"]:
        print(json.dumps(rows, indent=1))
        return 0
    for family, (ok, n) in family_counts(rows).items():
        print(f"{family:24s} within ±10 %: {ok} of {n}")
    print()
    print_times(record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
