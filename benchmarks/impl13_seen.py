"""Round 13's seen check: every seen ncu DRAM record, main's model (round 9's one WALK_COPIES)
against walk_copies, per record (median / worst |error| of its sdpa-flash calls, and how many
calls moved by more than 1 % of their bytes, better or worse).

    python benchmarks/impl13_seen.py
"""

from __future__ import annotations

import statistics

from benchmarks.descending_fit import ALONE, DATA
from benchmarks.impl13_judge import rows
from benchmarks.impl_dram_h200 import IMPLS
from benchmarks.walk_copies_fit import SEEN


def main() -> None:
    for csv, set_name in SEEN:
        got = [r for r in rows(DATA / csv, set_name, ("sdpa-flash",) if set_name in ALONE
                               else IMPLS) if r["impl"] == "sdpa-flash"]
        b = sorted(abs(r["before"]) for r in got)
        a = sorted(abs(r["after"]) for r in got)
        moved = [r for r in got if abs(r["after"] - r["before"]) > 0.01]
        worse = [r for r in moved if abs(r["after"]) > abs(r["before"])]
        print(f"{set_name:12} {len(got):3} calls: median {statistics.median(b):5.1%} -> "
              f"{statistics.median(a):5.1%}, worst {b[-1]:5.1%} -> {a[-1]:5.1%}; moved "
              f"{len(moved)}, worse {len(worse)}" + "".join(
                  f"\n    worse: #{r['index']} b{r['w'].batch} h{r['w'].heads}/{r['w'].kv_heads}"
                  f" N{r['w'].n} d{r['w'].d} {r['before']:+.1%} -> {r['after']:+.1%}"
                  for r in worse))


if __name__ == "__main__":
    main()
