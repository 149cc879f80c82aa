"""Issue 14, var11: the far partition's copy of a prefix chunk at FAR_COPY_SHARE of a line in
a wave's reuse distance (estimates/prefix_waves.py held_copies), judged on ncu's DRAM bytes with
the protocol residue (calibrate/dirty_ledger.as_counted), as var10 judged its rule
(benchmarks/var10_prefix_judge.py, whose rows and tables this reuses).

    python benchmarks/var11_prefix_judge.py --json --seen > X.json    # every earlier point
    python benchmarks/var11_prefix_judge.py --json --fresh > X.json   # cascade_fresh7 only
    python benchmarks/var11_prefix_judge.py --join OFF.json ON.json [--rows]
    python benchmarks/var11_prefix_judge.py --fit                     # FAR_COPY_SHARE's grid

--seen: every counted decoding point of tests/data/h200-variants.json before cascade_fresh7
(cascade_fresh6 included: var10's fresh set, seen now) and mla5's two prefix probes, as var10.
OFF: main before var11 (PYTHONPATH at that checkout), ON: this branch. --fit: the share on a
grid 0.5-1.0 by 0.05, the seen shared-prefix split-KV points within ±10 % at each (the value
FAR_COPY_SHARE carries and its sensitivity).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import var9_residue_judge as v9
import var10_prefix_judge as v10

import iosim.estimates.prefix_waves as waves

FRESH = ("cascade_fresh7",)
GRID = [round(0.5 + 0.05 * i, 2) for i in range(11)]


def seen_rows(fresh: tuple[str, ...] = FRESH) -> list[dict[str, Any]]:
    """Every counted point but the sections of `fresh` (a later round passes its own), and the
    prefix probes."""
    rows = v9.residue_rows(v9.load([]))
    return [r for r in rows if r["section"] not in fresh] + v10.probe_rows()


def fit(fresh: tuple[str, ...] = FRESH, later: tuple[str, ...] = ()) -> None:
    """Per share on GRID: the seen shared-prefix split-KV points within ±10 % of ncu."""
    kept = waves.FAR_COPY_SHARE
    try:
        for share in GRID:
            waves.FAR_COPY_SHARE = share
            errors = [r["error"] for r in seen_rows(fresh + later) if r["family"] == v10.FAMILY]
            ok = sum(abs(e) <= v9.WITHIN for e in errors)
            print(f"FAR_COPY_SHARE {share:.2f}: {ok} of {len(errors)} within ±10 %, worst "
                  f"{max(errors, key=abs):+.1%}")
    finally:
        waves.FAR_COPY_SHARE = kept


def main(argv: list[str], fresh: tuple[str, ...] = FRESH, later: tuple[str, ...] = ()) -> int:
    """The command line of the module docstring; `fresh`: the round's fresh sections, `later`:
    sections measured after the round, seen by neither (var12's and var13's judges run this
    with their own)."""
    if argv[:1] == ["--join"]:
        off, on = (json.loads(Path(p).read_text()) for p in argv[1:3])
        v9.print_join(off, on, "--rows" in argv)
        return 0
    if "--fit" in argv:
        fit(fresh, later)
        return 0
    if "--seen" in argv:
        rows = seen_rows(fresh + later)
    else:
        rows = v9.residue_rows(v9.load([a for a in argv if not a.startswith("--")]))
        if "--fresh" in argv:
            rows = [r for r in rows if r["section"] in fresh]
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
