"""Issue 14, var13: split-KV's waves over a shared prefix extended to MHA's grid (one query
head per KV head, nothing packed: estimates/prefix_waves.py prefix_grid), judged on ncu's DRAM
bytes with the protocol residue (calibrate/dirty_ledger.as_counted) as var12 judged its rule
(benchmarks/var12_prefix_judge.py, whose rows and tables this reuses).

    python benchmarks/var13_prefix_judge.py --json --seen > X.json    # every earlier point
    python benchmarks/var13_prefix_judge.py --json --fresh > X.json   # cascade_fresh9 only
    python benchmarks/var13_prefix_judge.py --join OFF.json ON.json [--rows]

--seen: every counted decoding point of tests/data/h200-variants.json but cascade_fresh9
(cascade_fresh8, var12's fresh set, included: seen now) and mla5's two prefix probes. OFF: main
before var13 (PYTHONPATH at that checkout), ON: this branch.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import var11_prefix_judge as v11

FRESH = ("cascade_fresh9",)


def seen_rows() -> list[dict[str, Any]]:
    return v11.seen_rows(FRESH)


if __name__ == "__main__":
    sys.exit(v11.main(sys.argv[1:], FRESH))
