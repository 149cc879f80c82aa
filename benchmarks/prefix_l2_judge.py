"""A candidate rule for split-KV's DRAM over a shared prefix, judged against ncu (issue 14's
miss kcas-b14-p9008-s90-gqa8, −54 %): NOT shipped (docs/variants-decoding.md says why).

    python benchmarks/prefix_l2_judge.py [FRESH_PROBE.json]

iosim charges the shared prefix from DRAM once (estimates/shared_prefix_dram.py prefix_once).
The candidate: once per wave of the split kernel's grid, capped at the batch, where the prefix's K
and V (all KV heads) exceed half the L2 — between two requests' reads of one key chunk the GPU
reads about the whole prefix (the grid is request-major, splits fastest), so a request whose
programs start a wave later finds it gone unless it fits the L2's share one SM sees (the H200's
L2 is two 30 MiB partitions). Written on the first probe (benchmarks/prefix_l2_probe_h200.py)
and the committed shared-prefix points, then judged on the second probe (--fresh), measured
before the rule was written and not looked at until then.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import variants_compare as vc

import iosim

HALF_L2 = 62914560 / 2
Row = dict[str, Any]


def judged(items: list[Row]) -> list[tuple[Any, ...]]:
    out = []
    for c in items:
        p, s = c["point"], c["splits"]
        try:
            est = iosim.compare(vc.workload(p), vc.GPU, algorithms=["splitkv"],
                                profile="measured", splits=s,
                                **vc.DECODE_TILES).algorithm("splitkv")
        except iosim.IosimError as exc:
            print(f"  {c['count_id']}: not modelled ({str(exc)[:80]})")
            continue
        occ = next(o for o in est.occupancy if o.kernel == "splitkv_attn")
        waves = math.ceil(occ.programs / (occ.per_sm * occ.sm_count))
        prefix = p["prefix_len"] * p["kv_heads"] * p["d"] * 2 * 2
        reads = 1 if prefix <= HALF_L2 else min(p["batch"], waves)
        assert est.dram is not None
        now, ncu = est.dram.bytes, c["dram_read_bytes"] + c["dram_write_bytes"]
        out.append((c["count_id"], prefix, occ.programs, waves, ncu, now,
                    now + (reads - 1) * prefix))
    return out


def show(rows: list[tuple[Any, ...]], label: str) -> None:
    print(f"{label}\n| point | prefix K+V MB | programs | waves | ncu MB | iosim now | "
          "error | candidate | error |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cid, prefix, programs, waves, ncu, now, new in rows:
        print(f"| {cid} | {prefix / 1e6:.1f} | {programs} | {waves} | {ncu / 1e6:.1f} | "
              f"{now / 1e6:.1f} | {now / ncu - 1:+.1%} | {new / 1e6:.1f} | {new / ncu - 1:+.1%} |")
    now_ok = sum(abs(r[5] / r[4] - 1) <= 0.1 for r in rows)
    new_ok = sum(abs(r[6] / r[4] - 1) <= 0.1 for r in rows)
    print(f"\nwithin ±10 %: now {now_ok}, candidate {new_ok} of {len(rows)}\n")


def probe_items(path: Path) -> list[Row]:
    record = json.loads(path.read_text())
    spec = {x["count_id"]: x for x in record["spec"]}
    return [{**c, "point": spec[c["count_id"]]["point"], "splits": spec[c["count_id"]]["splits"]}
            for c in record["counters"]["points"]]


def main(argv: list[str]) -> int:
    here = Path(__file__).parent / "mla-prefill-h200"
    show(judged(probe_items(here / "prefix-probe.json")), "first probe (seen)")
    record = json.loads(Path("tests/data/h200-variants.json").read_text())
    batches = {p["id"]: p for s in ("cascade", "cascade_judge", "cascade_fresh", "cascade_fresh2",
                                    "cascade_fresh3") for p in record.get(s, [])}
    seen = [{**c, "point": batches[c["id"]]} for run in record["counters"] for c in run["points"]
            if c.get("method") == "splitkv" and c["id"] in batches]
    show(judged(seen), "committed shared-prefix split-KV points (seen)")
    fresh = Path(argv[0]) if argv else here / "fresh" / "prefix-fresh.json"
    show(judged(probe_items(fresh)), "second probe (fresh)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
