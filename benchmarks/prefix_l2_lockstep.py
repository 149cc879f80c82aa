"""The extra prefix reads of split-KV over a shared prefix (issue 14's kcas-b14 miss), against
a lockstep-wave count over the launch order (seen data only: an analysis, nothing shipped).

The split kernel's grid is split fastest, then KV head, then request (calibrate/
kernels_variants.py): chunk (h, k) of the prefix is read by request r's program at launch
position r·H·S + h·S + k. If equal-length programs ran in lockstep waves of W = SMs × programs
per SM, a chunk would come from DRAM once per wave its readers fall in (when the wave's other
chunks — the whole prefix of every KV head — push it out of an L2 that holds shared lines
twice, one copy per partition, as estimates/l2.py models K and V). The extra reads per chunk are
then the number of waves its readers span, less one. Seen: ncu's DRAM bytes less iosim's
(prefix once), over the prefix's K+V.

    python benchmarks/prefix_l2_lockstep.py
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import prefix_l2_judge as J

BLOCK_N = 64


def lockstep_extra(p: dict, splits: int, slots: int) -> float:
    """Extra reads per prefix chunk: the waves its readers span, less one (mean over chunks)."""
    keys = p["prefix_len"] + max(p["suffix_lens"])
    per = math.ceil(math.ceil(keys / BLOCK_N) / splits)
    prefix_splits = math.ceil(math.ceil(p["prefix_len"] / BLOCK_N) / per)
    heads, batch = p["kv_heads"], p["batch"]
    extra = [len({(r * heads * splits + h * splits + k) // slots for r in range(batch)}) - 1
             for h in range(heads) for k in range(prefix_splits)]
    return sum(extra) / len(extra)


def main() -> int:
    here = Path(__file__).parent / "mla-prefill-h200"
    items = J.probe_items(here / "prefix-probe.json") + J.probe_items(
        here / "fresh" / "prefix-fresh.json")
    record = json.loads(Path("tests/data/h200-variants.json").read_text())
    batches = {p["id"]: p for s in ("cascade", "cascade_judge", "cascade_fresh", "cascade_fresh2",
                                    "cascade_fresh3") for p in record.get(s, [])}
    items += [{**c, "point": batches[c["id"]]} for run in record["counters"]
              for c in run["points"] if c.get("method") == "splitkv" and c["id"] in batches]
    by_id = {c["count_id"]: c for c in items}
    print("| point | prefix / L2 | programs | waves | extra prefix reads seen | lockstep count |\n"
          "|---|---:|---:|---:|---:|---:|")
    for cid, prefix, programs, waves, ncu, now, _ in sorted(J.judged(items), key=lambda r: r[1]):
        c = by_id[cid]
        p = c["point"]
        if waves < 2 or max(p["suffix_lens"]) > 120 or prefix < 0.3 * 2 * J.HALF_L2:
            continue  # the small-suffix, large-prefix points: the others' shares are noise
        slots = math.ceil(programs / waves) if waves else programs
        slots = -(-programs // waves)
        print(f"| {cid} | {prefix / (2 * J.HALF_L2):.2f} | {programs} | {waves} | "
              f"{(ncu - now) / prefix:.2f} | {lockstep_extra(p, c['splits'], slots):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
