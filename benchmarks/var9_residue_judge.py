"""Issue 14, var9: the variants' decode DRAM judged with the ncu protocol's own residue
(calibrate/dirty_ledger.as_counted: PROTOCOL_RESIDUE_BYTES, 0.6 MB, measured by bwd7 on empty
evict-evict segments) added to the predicted side, on every counted decoding point of a record
(split-KV decode, paged, MLA decode, both methods of the shared-prefix batches), per family and
section, with and without it.

    python benchmarks/var9_residue_judge.py [RECORD.json ...] --json > X.json   # model checked out
    python benchmarks/var9_residue_judge.py --json --fresh > X.json  # var9's fresh record only
    python benchmarks/var9_residue_judge.py --join OFF.json ON.json [--rows]    # both, one table

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

import launch_order_dram_check as lod

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
    rows = []
    for r in lod.all_points(record):
        # a paged section's pages of one token are decoding points without a page size
        family = FAMILY[r["kind"]]
        measured, model = r["measured_bytes"], r["model_bytes"]
        rows.append({"id": r["id"], "section": r["section"], "family": family,
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
        print("| counted point | section | ncu MB | off MB | off error | on MB | on error |\n"
              "|---|---|---:|---:|---:|---:|---:|")
        for r in off:
            o = rules[(r["section"], r["id"])]
            print(f"| {r['id']} | {r['section']} | {r['measured'] / 1e6:,.2f} | "
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


def main(argv: list[str]) -> int:
    if argv[:1] == ["--join"]:
        off, on = (json.loads(Path(p).read_text()) for p in argv[1:3])
        print_join(off, on, "--rows" in argv)
        return 0
    rows = residue_rows(load([a for a in argv if not a.startswith("--")]))
    if "--fresh" in argv:  # var9's fresh record only (measured at tag var9-frozen)
        rows = [r for r in rows if r["section"] in FRESH]
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
