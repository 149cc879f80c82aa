"""Issue 14, var12: split-KV's waves over a shared prefix at the paged split kernel's compiled
occupancy (analysis/decode_time.py MEASURED_TILES: 8 programs per SM at d = 64, its 64
registers, where its shared memory alone gives 10), judged on ncu's DRAM bytes with the
protocol residue (calibrate/dirty_ledger.as_counted), as var10 and var11 judged theirs
(benchmarks/var10_prefix_judge.py, var11_prefix_judge.py, whose rows and tables this reuses).

    python benchmarks/var12_prefix_judge.py --json --seen > X.json    # every earlier point
    python benchmarks/var12_prefix_judge.py --json --fresh > X.json   # cascade_fresh8 only
    python benchmarks/var12_prefix_judge.py --join OFF.json ON.json [--rows]
    python benchmarks/var12_prefix_judge.py --fit                     # FAR_COPY_SHARE's grid

--seen: every counted decoding point of tests/data/h200-variants.json before cascade_fresh8
(cascade_fresh7 included: var11's fresh set, seen now) and mla5's two prefix probes. OFF: main
before var12 (PYTHONPATH at that checkout), ON: this branch. --fit: var11's grid of the far
copy's share over these seen points (its sensitivity at this branch's occupancy).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import var11_prefix_judge as v11

FRESH = ("cascade_fresh8",)
LATER = ("cascade_fresh9",)
"""Sections measured after var12 (var13's fresh set): not part of var12's seen points."""


def seen_rows() -> list[dict[str, Any]]:
    return v11.seen_rows(FRESH + LATER)


if __name__ == "__main__":
    sys.exit(v11.main(sys.argv[1:], FRESH, LATER))
