"""walk_copies' two constants (estimates/l2_launch_walk.py) fitted on seen ncu DRAM counts.

    python benchmarks/walk_copies_fit.py [--per-call]

Every sdpa-flash call of the committed ncu DRAM records that iosim runs on the descending walk
(benchmarks/descending_fit.py RECORDS plus IMPL9FRESH and IMPL12FRESH, seen since their
rounds), each walked exactly at the copies of COPIES (walk_copies held at one figure) and its
live sequences (l2_launch_walk.live_sequences) noted; between those figures a call's bytes are
taken linear in the copies (the walk is monotone in them), so the grid of the two constants
(WALK_COPIES_ONE 1.0-1.6 by 0.05 × WALK_COPIES_PER_E 0-1.5 by 0.05) costs no more walks. The
pick: the least median + worst |error| over all of them (the ship rule's two figures); printed
with its neighbours (the sensitivity) and round 9's one figure, WALK_COPIES. `--per-call`: each
call's live sequences and the copies that would match ncu alone (the fit's evidence that the
figure grows with them). Then the shipped constants are walked exactly (no interpolation).
"""

from __future__ import annotations

import math
import statistics
import sys
from typing import Any

import numpy as np

from benchmarks.descending_fit import RECORDS, predicted, walked_calls
from iosim.estimates import l2_launch_walk

SEEN = (*RECORDS, ("h200-impl-dram9.csv", "impl9fresh"), ("h200-impl-dram12.csv", "impl12fresh"))
COPIES = (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.4, 2.8)


def walked_at(rows: list[dict[str, Any]], copies: float) -> list[tuple[float, float]]:
    """(predicted DRAM bytes, live sequences) of each call with every tile at `copies`."""
    kept, out = l2_launch_walk.walk_copies, []
    seen = [1.0]  # the live sequences the walk last asked walk_copies about

    def held(s: float) -> float:
        seen[0] = s
        return copies

    l2_launch_walk.walk_copies = held
    try:
        for r in rows:
            seen[0] = 1.0
            out.append((predicted(r["w"]), seen[0]))
    finally:
        l2_launch_walk.walk_copies = kept
    return out


def summary(errors: list[float]) -> tuple[float, float, int]:
    mags = sorted(abs(e) for e in errors)
    return statistics.median(mags), mags[-1], sum(m <= 0.2 for m in mags)


def main() -> None:
    rows = [r for r in walked_calls(SEEN) if r["walked"]]
    grid = {c: walked_at(rows, c) for c in COPIES}
    live = [grid[COPIES[0]][i][1] for i in range(len(rows))]
    curves = [[grid[c][i][0] for c in COPIES] for i in range(len(rows))]

    def errors(one: float, per_e: float) -> list[float]:
        return [(float(np.interp(one + per_e * math.log(max(1.0, s)), COPIES, curve))
                 - r["dram"]) / r["dram"] for r, s, curve in zip(rows, live, curves, strict=True)]

    print(f"{len(rows)} seen sdpa-flash calls on the descending walk")
    med, worst, within = summary(errors(l2_launch_walk.WALK_COPIES, 0.0))
    print(f"WALK_COPIES {l2_launch_walk.WALK_COPIES} (round 9): median {med:.1%} worst "
          f"{worst:.1%} within 20 % {within}")
    scores = {}
    for a in np.round(np.arange(1.0, 1.601, 0.05), 2):
        for b in np.round(np.arange(0.0, 1.501, 0.05), 2):
            scores[float(a), float(b)] = summary(errors(float(a), float(b)))
    best = min(scores, key=lambda k: scores[k][0] + scores[k][1])
    for a, b in (best, (best[0] - 0.05, best[1]), (best[0] + 0.05, best[1]),
                 (best[0], best[1] - 0.05), (best[0], best[1] + 0.05)):
        a, b = round(a, 2), round(b, 2)
        med, worst, within = scores.get((a, b), summary(errors(a, b)))
        print(f"ONE {a:4.2f} PER_E {b:4.2f}: median {med:.1%} worst {worst:.1%} within 20 % "
              f"{within}{'  <- least median + worst' if (a, b) == best else ''}")
    shipped = [(predicted(r["w"]) - r["dram"]) / r["dram"] for r in rows]
    med, worst, within = summary(shipped)
    print(f"shipped (ONE {l2_launch_walk.WALK_COPIES_ONE}, PER_E "
          f"{l2_launch_walk.WALK_COPIES_PER_E}), walked exactly: median {med:.1%} worst "
          f"{worst:.1%} within 20 % {within}")
    if "--per-call" in sys.argv:
        fine = np.linspace(COPIES[0], COPIES[-1], 181)
        for r, s, curve in zip(rows, live, curves, strict=True):
            errs = np.abs((np.interp(fine, COPIES, curve) - r["dram"]) / r["dram"])
            if errs.max() - errs.min() < 0.1:
                continue  # the copies hardly move it
            w = r["w"]
            print(f"  {r['record']:12} #{r['index']:2} b{w.batch} h{w.heads}/{w.kv_heads} "
                  f"N{w.n}/{w.n_kv} d{w.d}: live {s:5.2f}  copies matching ncu "
                  f"{fine[int(errs.argmin())]:.2f}")


if __name__ == "__main__":
    main()
