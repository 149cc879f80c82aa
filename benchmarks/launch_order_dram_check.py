"""Every counted decoding point of tests/data/h200-variants.json (split-KV decode, paged, MLA,
both methods of the shared-prefix batches): ncu DRAM (read + write, the dirty lines left in L2
included) against iosim's estimate, per section, with the count within ±10 %.

    python benchmarks/launch_order_dram_check.py [RECORD.json ...] [--rows]

issue 14's var7 ran it before and after estimates/launch_order_dram.py (reports/variants-h200.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import decode_choices_h200 as dc
import variants_compare as vc

MLA_SECTIONS = ("mla", "mla_fresh", "mla_fresh2", "mla_fresh3", "mla_fresh4")


def mla_points(record: dict[str, Any]) -> list[dict[str, Any]]:
    counts = vc.counted(record)
    rows = []
    for section in MLA_SECTIONS:
        for p in record.get(section, []):
            for cid, c in counts.items():
                if c["id"] != p["id"]:
                    continue
                model = vc.predict(p, "splitkv", splits=c["splits"], **vc.MLA_TILES)["dram_bytes"]
                measured = c["dram_read_bytes"] + c["dram_write_bytes"]
                rows.append({"id": cid, "section": section, "kind": "mla",
                             "model_bytes": model, "measured_bytes": measured,
                             "ratio": model / measured})
    return rows


def all_points(record: dict[str, Any]) -> list[dict[str, Any]]:
    sections = tuple(s for s in record if s.startswith(("decode", "paged", "cascade"))
                     and isinstance(record[s], list))
    return dc.dram_points(record, sections) + mla_points(record)


def main(argv: list[str]) -> int:
    show = "--rows" in argv
    paths = [a for a in argv if not a.startswith("--")] or ["tests/data/h200-variants.json"]
    record: dict[str, Any] = json.loads(Path(paths[0]).read_text())
    for extra in paths[1:]:
        more = json.loads(Path(extra).read_text())
        record["counters"] = record["counters"] + more.get("counters", [])
        record.update({k: v for k, v in more.items() if k != "counters"})
    rows = all_points(record)
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        kind = r["kind"].split()[-1] if r["kind"].startswith("shared") else r["kind"]
        groups.setdefault((r["section"], kind), []).append(r["ratio"] - 1)
        if show:
            print(f"| {r['id']} | {r['section']} | {r['measured_bytes'] / 1e6:,.1f} | "
                  f"{r['model_bytes'] / 1e6:,.1f} | {r['ratio'] - 1:+.1%} |")
    for (section, kind), errs in groups.items():
        ok = sum(abs(e) <= 0.10 for e in errs)
        worst = max(errs, key=abs)
        print(f"{section:15s} {kind:9s} within ±10 %: {ok:3d} of {len(errs):3d}  worst {worst:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
