"""Is there a rule for flex's host-bound call floor better than one constant, on SEEN records?
(round 10, brief item 2; no GPU needed)

    python benchmarks/flex10_host_floor.py

The host-bound calls (kernels' device times under 0.8 of the do_bench time) of the records of
flex compiled alone and statically (SEEN), each with its launches per call (3 without a mask:
two fill kernels and the template; 1 causal, the block mask built outside the compiled call)
and its position in its run. Leave one record out: the floor as the median of the other
records' host-bound calls (one constant, as shipped) against the median of those with the same
launches per call (launches × a dispatch cost, as bwd9's eager floor). Prints both medians of
|error| and the correlation of the floor with the position in the run (which compare cannot
know).
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).parents[1]
SEEN = ("h200-impl-flexrefit7", "h200-impl-flexfresh7", "h200-impl-validation5",
        "h200-impl-flexfresh8", "h200-impl-flexfresh9")
HOST_BOUND = 0.8


def host_bound_calls() -> list[tuple[str, int, int, float]]:
    """(record, position in its run, launches per call, do_bench seconds) of each."""
    rows = []
    for name in SEEN:
        record = json.loads((ROOT / "tests" / "data" / f"{name}.json").read_text())
        points = [p for p in record["points"] if p.get("impl") == "flex" and "time_s" in p]
        for position, p in enumerate(points):
            kernels = sum(k["time_s"] for k in p.get("kernels", ()))
            if kernels < HOST_BOUND * p["time_s"]:
                rows.append((name, position, len(p["kernels"]), p["time_s"]))
    return rows


def main() -> None:
    rows = host_bound_calls()
    for name, position, launches, t in rows:
        print(f"{name:<24} position {position:>2}  {launches} launches  {t * 1e6:6.1f} µs")
    constant, by_launches = [], []
    for name in SEEN:
        train = [r for r in rows if r[0] != name]
        for r in (r for r in rows if r[0] == name):
            constant.append(abs(median(t for *_, t in train) / r[3] - 1))
            same = [t for _, _, n, t in train if n == r[2]] or [t for *_, t in train]
            by_launches.append(abs(median(same) / r[3] - 1))
    print(f"leave one record out, {len(constant)} calls: one constant {median(constant):.1%}, "
          f"per launches {median(by_launches):.1%} (median |error|)")
    position = np.array([r[1] for r in rows], dtype=float)
    print(f"correlation of the floor with the position in the run: "
          f"{np.corrcoef(position, [r[3] for r in rows])[0, 1]:.2f}")


if __name__ == "__main__":
    main()
