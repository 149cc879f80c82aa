"""Why split-KV over a shared prefix re-reads it from DRAM (kcas-b14-p9008-s90-gqa8: ncu 2.2×
iosim's once-from-DRAM rule at 16 splits): the same 14-request, 8-KV-head batch counted under
ncu at other split counts and prefix lengths (no timing; calibrate/variants_target.py builds and
checks each point, calibrate/ncu.py's evict protocol).

    PYTHONPATH=$PWD python3 benchmarks/prefix_l2_probe_h200.py OUT.json [--fresh] [--ncu-timeout-s S]

The question each point asks: does the prefix come from DRAM once per batch (iosim's rule: the
requests share it through L2) or once per group of requests resident together (a wave of
programs), and at which prefix size does the change happen (the 60 MiB L2, or less)?
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from iosim.calibrate.variants_ncu import run_ncu

BASE = {"kind": "cascade", "dtype": "fp16", "d": 128, "n": 1, "heads": 64, "kv_heads": 8,
        "batch": 14, "causal": False, "page_size": 16}
PROBES = [(9008, s) for s in (1, 4, 8, 16, 64)] + [(p, 16) for p in (2000, 4000, 6000, 12000)]
"""(prefix_len, splits): the seen point's prefix at five split counts (112 to 7,168 programs),
and four other prefixes at its 16 splits (8.2, 16.4, 24.6 and 49.2 MB of prefix K and V)."""
FRESH = [
    # batch, heads, kv_heads, prefix_len, suffix, splits: prefix K + V MB in the comment
    (8, 32, 4, 16000, 50, 16),     # 32.8
    (24, 32, 8, 4096, 40, 32),     # 16.8
    (10, 16, 2, 20000, 70, 8),     # 20.5
    (6, 64, 8, 30000, 30, 4),      # 122.9
    (16, 64, 8, 8000, 60, 32),     # 32.8
    (20, 32, 8, 3008, 20, 64),     # 12.3
    (12, 32, 4, 10000, 80, 2),     # 20.5
    (32, 32, 8, 12000, 25, 16),    # 49.2
]
"""A second set, written before any rule was fitted to the first, to judge one: other batches,
KV heads, prefixes and split counts. The run prints no number of it."""


def spec(fresh: bool = False) -> list[dict]:
    out = []
    rows = FRESH if fresh else [(14, 64, 8, p, 90, s) for p, s in PROBES]
    for batch, heads, kv_heads, prefix, suffix, splits in rows:
        pid = f"probe-b{batch}-p{prefix}-s{suffix}-h{heads}-kv{kv_heads}"
        point = {**BASE, "id": pid, "batch": batch, "heads": heads, "kv_heads": kv_heads,
                 "prefix_len": prefix, "suffix_lens": [suffix] * batch}
        out.append({"count_id": f"{pid} splitkv s{splits}", "point": point, "method": "splitkv",
                    "splits": splits})
    return out


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    timeout = float(argv[argv.index("--ncu-timeout-s") + 1]) if "--ncu-timeout-s" in argv else 90.0
    fresh = "--fresh" in argv
    items = spec(fresh)
    counted = run_ncu(items, out.parent, timeout, print, "prefix-fresh" if fresh else "prefix-probe")
    out.write_text(json.dumps({"schema": "iosim/h200-prefix-l2-probe/1",
                               "command": "PYTHONPATH=$PWD python3 benchmarks/prefix_l2_probe_h200.py "
                                          + " ".join(argv),
                               "spec": items, "counters": counted}, indent=1))
    print(f"{len(counted['points'])} of {len(items)} points counted")
    for p in [] if fresh else counted["points"]:
        print(f"{p['count_id']:40s} DRAM read {p['dram_read_bytes'] / 1e6:8.1f} MB  "
              f"L2 {p['l2_bytes'] / 1e6:8.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
