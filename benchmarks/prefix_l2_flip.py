"""Why mla5's candidate prefix rule flipped one fresh point (probe-b16-p8000-s60-h64-kv8,
−48 % → +117 %): per multi-wave split-KV point of both probes and the committed shared-prefix
points (all seen now: an analysis, nothing shipped), the share of the candidate's extra prefix
reads that ncu saw,

    re-read share = (ncu − iosim now) / (prefix K+V · (min(batch, waves) − 1)),

against the prefix's K+V as a share of the L2, and what estimates/l2_cutoff.py's soft cutoff
(Φ((D / L2 − FILL_SHARE) / FILL_WIDTH)) gives at reuse distance D = k · prefix for k = 1, 1.5, 2.

    python benchmarks/prefix_l2_flip.py [FRESH_PROBE.json]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import prefix_l2_judge as J

from iosim.estimates.l2_cutoff import miss_probability

L2 = 2 * J.HALF_L2


def main(argv: list[str]) -> int:
    import json

    here = Path(__file__).parent / "mla-prefill-h200"
    items = J.probe_items(here / "prefix-probe.json") + J.probe_items(
        Path(argv[0]) if argv else here / "fresh" / "prefix-fresh.json")
    record = json.loads(Path("tests/data/h200-variants.json").read_text())
    batches = {p["id"]: p for s in ("cascade", "cascade_judge", "cascade_fresh", "cascade_fresh2",
                                    "cascade_fresh3") for p in record.get(s, [])}
    items += [{**c, "point": batches[c["id"]]} for run in record["counters"]
              for c in run["points"] if c.get("method") == "splitkv" and c["id"] in batches]
    batch = {c["count_id"]: c["point"]["batch"] for c in items}
    print("| point | prefix / L2 | waves | re-reads if none hit | re-read share seen | "
          "cutoff k=1 | k=1.5 | k=2 |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for cid, prefix, _programs, waves, ncu, now, _new in sorted(J.judged(items),
                                                                 key=lambda r: r[1]):
        extra = min(batch[cid], waves) - 1
        if extra < 1:
            continue
        share = (ncu - now) / (prefix * extra)
        cut = [miss_probability(k * prefix, L2) for k in (1.0, 1.5, 2.0)]
        print(f"| {cid} | {prefix / L2:.2f} | {waves} | {extra} | {share:+.2f} | "
              + " | ".join(f"{c:.2f}" for c in cut) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
