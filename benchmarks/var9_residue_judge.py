"""Issue 14, var9: the variants' decode DRAM judged with the ncu protocol's own residue
(calibrate/dirty_ledger.as_counted: PROTOCOL_RESIDUE_BYTES, 0.6 MB, measured by bwd7 on empty
evict-evict segments) added to the predicted side, on every counted decoding point of a record
(split-KV decode, paged, MLA decode, both methods of the shared-prefix batches), per family and
section, with and without it.

    python benchmarks/var9_residue_judge.py [RECORD.json ...] --json > X.json   # model checked out
    python benchmarks/var9_residue_judge.py --json --fresh > X.json  # var9's fresh record only
    python benchmarks/var9_residue_judge.py --json --seen > X.json   # every earlier section
    python benchmarks/var9_residue_judge.py --join OFF.json ON.json [--rows]    # both, one table
    python benchmarks/var9_residue_judge.py --times                 # the fresh record's times

OFF: the launch-order rules switched off (main before var9, PYTHONPATH=that checkout), ON:
this branch. The residue goes to the predicted side, as the backward ledger adds it to a
segment's last kernel (one rule, `as_counted`): it is a fact of the protocol, not of the
kernel, so iosim's own estimate (compare) stays the kernel's bytes and only the judge's
"what ncu counts" includes it; the measured side stays the raw counter. The variants records
were counted with the same protocol as the backward's (same evict kernel, kernels.evict; the
same ncu flags --cache-control none --clock-control none --profile-from-start off; the closing
evict's writes counted to the point: variants_ncu.attach_launches, ncu_bwd.segments).
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
import var8_fresh_dram_judge as v8

from iosim import Workload
from iosim.analysis.decode_time import DecodeCounts
from iosim.calibrate.dirty_ledger import as_counted

RECORD = Path(__file__).resolve().parents[1] / "tests" / "data" / "h200-variants.json"
WITHIN = 0.10
FRESH = ("decode_fresh3", "cascade_fresh5", "mla_fresh4")
"""var9's fresh sections (calibrate/variants_points.py DECODE_FRESH3, CASCADE_FRESH5, MLA_FRESH4)."""
FAMILY = {"decode": "split-KV decode", "paged": "paged", "mla": "MLA decode",
          "shared prefix splitkv": "shared-prefix split-KV", "shared prefix cascade": "cascade"}


def load(paths: list[str]) -> dict[str, Any]:
    """The record, with the counters and sections of any further record joined to it."""
    record: dict[str, Any] = json.loads(Path(paths[0] if paths else RECORD).read_text())
    for extra in paths[1:]:
        more = json.loads(Path(extra).read_text())
        record["counters"] = record["counters"] + more.get("counters", [])
        record.update({k: v for k, v in more.items() if k != "counters"})
    return record


def residue_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per counted decoding point: family, section, ncu bytes, the model's bytes and
    its error without and with the protocol residue."""
    counted = {p["count_id"]: p for c in record["counters"] for p in c.get("points", [])}
    rows = []
    for r in lod.all_points(record):
        measured, model = r["measured_bytes"], r["model_bytes"]
        rows.append({"id": r["id"], "section": r["section"], "family": FAMILY[r["kind"]],
                     "read": counted[r["id"]]["dram_read_bytes"],
                     "write": counted[r["id"]]["dram_write_bytes"],
                     "measured": measured, "model": model, "bare_error": model / measured - 1,
                     "error": as_counted(model) / measured - 1})
    return rows


def _cells(errors: list[float]) -> list[str]:
    ok = sum(abs(e) <= WITHIN for e in errors)
    return [f"{ok} of {len(errors)}", f"{statistics.median(map(abs, errors)):.1%}",
            f"{max(errors, key=abs):+.1%}"]


def print_join(off: list[dict[str, Any]], on: list[dict[str, Any]], rows: bool) -> None:
    """Per family (all sections) and per section: within ±10 %, median |error|, worst, off and
    on, with the residue; the counts without it beside them."""
    rules = {(r["section"], r["id"]): r for r in on}
    if rows:
        print("| counted point | section | ncu read MB | ncu write MB | ncu MB | off + residue MB "
              "| off error | on + residue MB | on error |\n|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in off:
            o = rules[(r["section"], r["id"])]
            print(f"| {r['id']} | {r['section']} | {r['read'] / 1e6:,.2f} | "
                  f"{r['write'] / 1e6:,.2f} | {r['measured'] / 1e6:,.2f} | "
                  f"{as_counted(r['model']) / 1e6:,.2f} | {r['error']:+.1%} | "
                  f"{as_counted(o['model']) / 1e6:,.2f} | {o['error']:+.1%} |")
        print()
    print("| family | section | off + residue: within ±10 % | median | worst | on + residue: "
          "within ±10 % | median | worst | no residue: off | on |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for r in off:
        o = rules[(r["section"], r["id"])]
        groups.setdefault((r["family"], "all"), []).append((r, o))
        groups.setdefault((r["family"], r["section"]), []).append((r, o))
    for (family, section), pairs in sorted(groups.items(), key=lambda kv: (
            list(FAMILY.values()).index(kv[0][0]), kv[0][1] != "all", kv[0][1])):
        cells = _cells([a["error"] for a, _ in pairs]) + _cells([b["error"] for _, b in pairs])
        bare = [sum(abs(x["bare_error"]) <= WITHIN for x, _ in pairs),
                sum(abs(y["bare_error"]) <= WITHIN for _, y in pairs)]
        name = f"**{family}**" if section == "all" else family
        print(f"| {name} | {section} | {' | '.join(cells)} | {bare[0]} | {bare[1]} |")
    total = [sum(abs(r["error"]) <= WITHIN for r in side) for side in (off, on)]
    bare = [sum(abs(r["bare_error"]) <= WITHIN for r in side) for side in (off, on)]
    print(f"\nall points within ±10 % with the residue: off {total[0]} of {len(off)}, on "
          f"{total[1]} of {len(on)} (without it: off {bare[0]}, on {bare[1]})")


def print_decode_times(record: dict[str, Any], section: str = "decode_fresh3") -> None:
    """The plain split-KV shapes' time side: the decoding time model (decode_time.DecodeCounts,
    the measured kernels' tiles) at every timed count (powers of two), its error, and the timed
    count it predicts fastest against the fastest measured."""
    config = record["decode_config"]
    tiles = dc.record_tiles(config)
    print("| shape | fastest timed (µs) | model's fastest timed | ÷ fastest | time errors "
          "(each timed count) |\n|---|---:|---:|---:|---|")
    within = picks = total = 0
    for d in record.get(section, []):
        w = Workload(1, n_kv=d["n_kv"], d=d["d"], heads=d["heads"], kv_heads=d["kv_heads"],
                     batch=d["batch"])
        counts = DecodeCounts(w, "h200", tiles)
        measured = {r["splits"]: r["time_s"] for r in d["sweep"]}
        model = {s: counts.splitkv(s).time_s for s in measured}
        errors = [model[s] / measured[s] - 1 for s in measured]
        pick = min(model, key=lambda s: (model[s], s))
        fastest = min(measured, key=lambda s: measured[s])
        ratio = measured[pick] / measured[fastest]
        within += sum(abs(e) <= 0.15 for e in errors)
        total += len(errors)
        picks += ratio <= 1.05
        print(f"| {d['id']} | {fastest} ({measured[fastest] * 1e6:.1f}) | {pick} | {ratio:.3f} | "
              f"{' '.join(f'{e:+.0%}' for e in errors)} |")
    print(f"\ntimes within ±15 %: {within} of {total}; the model's fastest timed count within "
          f"5 % of the fastest: {picks} of {len(record.get(section, []))}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--times"]:  # var9's fresh record's time side, the model checked out
        record = load(argv[1:])
        print_decode_times(record)
        print()
        v8.print_times(record, "cascade_fresh5", "mla_fresh4")
        return 0
    if argv[:1] == ["--join"]:
        off, on = (json.loads(Path(p).read_text()) for p in argv[1:3])
        print_join(off, on, "--rows" in argv)
        return 0
    rows = residue_rows(load([a for a in argv if not a.startswith("--")]))
    if "--fresh" in argv:  # var9's fresh record only (measured at tag var9-frozen)
        rows = [r for r in rows if r["section"] in FRESH]
    if "--seen" in argv:  # every earlier section (seen before var9's rules were frozen)
        rows = [r for r in rows if r["section"] not in FRESH]
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
