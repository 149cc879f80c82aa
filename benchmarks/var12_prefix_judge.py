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

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import var9_residue_judge as v9
import var10_prefix_judge as v10
import var11_prefix_judge as v11

import iosim.estimates.prefix_waves as waves

FRESH = ("cascade_fresh8",)
LATER = ("cascade_fresh9",)
"""Sections measured after var12 (var13's fresh set): not part of var12's seen points."""


def seen_rows() -> list[dict[str, Any]]:
    rows = v9.residue_rows(v9.load([]))
    return [r for r in rows if r["section"] not in FRESH + LATER] + v10.probe_rows()


def fit() -> None:
    """Per share on var11's grid: the seen shared-prefix split-KV points within ±10 % of ncu."""
    kept = waves.FAR_COPY_SHARE
    try:
        for share in v11.GRID:
            waves.FAR_COPY_SHARE = share
            errors = [r["error"] for r in seen_rows() if r["family"] == v10.FAMILY]
            ok = sum(abs(e) <= v9.WITHIN for e in errors)
            print(f"FAR_COPY_SHARE {share:.2f}: {ok} of {len(errors)} within ±10 %, worst "
                  f"{max(errors, key=abs):+.1%}")
    finally:
        waves.FAR_COPY_SHARE = kept


def main(argv: list[str]) -> int:
    if argv[:1] == ["--join"]:
        off, on = (json.loads(Path(p).read_text()) for p in argv[1:3])
        v9.print_join(off, on, "--rows" in argv)
        return 0
    if "--fit" in argv:
        fit()
        return 0
    if "--seen" in argv:
        rows = seen_rows()
    else:
        rows = v9.residue_rows(v9.load([a for a in argv if not a.startswith("--")]))
        if "--fresh" in argv:
            rows = [r for r in rows if r["section"] in FRESH]
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
