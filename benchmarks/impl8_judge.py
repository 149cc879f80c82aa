"""Judge the frozen descending-walk model against main's on a fresh sdpa-flash DRAM set.

    python benchmarks/impl8_judge.py tests/data/h200-impl-dram8.csv [REPORT.md]
    python benchmarks/impl8_judge.py --set impl9fresh tests/data/h200-impl-dram9.csv [REPORT.md]

Round 8: IMPL8FRESH (benchmarks/impl_validation_h200.py), counted by ncu after tag impl8-frozen
(benchmarks/impl8_h200.sh), the walk then estimates/l2_descending.py at DESCENDING_COPIES = 1.15
(reports/impl-validation/impl8.md was written from that tree). Round 9: IMPL9FRESH after tag
impl9-frozen, the walk estimates/l2_launch_walk.py at WALK_COPIES. Nothing refitted. "main" is
the model without the walk (Implementation.forward_walk unset: the ascending closed form that
main ships), "walk" the frozen one. Prints every call and the median and worst |error| of
both; with REPORT.md, writes them there as a table.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks.descending_fit import predicted
from benchmarks.impl_dram_h200 import _set, calls, counted

ROUNDS = {"impl8fresh": ("IMPL8FRESH", "the descending walk (round 8)", "round 8"),
          "impl9fresh": ("IMPL9FRESH", "the launch-order walk (round 9)", "round 9")}
"""Per fresh set: its name, what the report calls the walk, its section of dram.md."""


def rows(csv: Path, set_name: str = "impl8fresh") -> list[dict[str, object]]:
    points = _set(set_name)
    out = []
    for r in counted(csv.read_text(), calls(points, ("sdpa-flash",))):
        w = points[r["index"]]
        main_b, walk_b = predicted(w, walk=False), predicted(w)
        out.append({"index": r["index"], "w": w, "dram": r["dram"],
                    "main": (main_b - r["dram"]) / r["dram"],
                    "walk": (walk_b - r["dram"]) / r["dram"], "walked": walk_b != main_b})
    return out


def main() -> None:
    args = sys.argv[1:]
    set_name = "impl8fresh"
    if args[:1] == ["--set"]:
        set_name, args = args[1], args[2:]
    fresh, walk, section = ROUNDS[set_name]
    got = rows(Path(args[0]), set_name)
    lines = ["| # | shape | ncu MB | main | walk |", "|---|---|---|---|---|"]
    for r in got:
        w = r["w"]
        shape = (f"b{w.batch} h{w.heads}/{w.kv_heads} N {w.n}" + (f"/{w.n_kv}" if w.n != w.n_kv
                                                                   else "")
                 + f" d{w.d} {w.dtype}{' causal' if w.causal else ''}")
        lines.append(f"| {r['index']} | {shape} | {r['dram'] / 1e6:.1f} | {r['main']:+.1%} | "
                     f"{r['walk']:+.1%}{'' if r['walked'] else ' (=)'} |")
    summary = []
    for key in ("main", "walk"):
        mags = sorted(abs(r[key]) for r in got)
        summary.append(f"{key}: {len(mags)} calls, median {statistics.median(mags):.1%}, "
                       f"worst {mags[-1]:.1%}, within 20 %: {sum(m <= 0.2 for m in mags)}")
    text = "\n".join([*lines, "", *summary])
    print(text)
    if len(args) > 1:
        command = " ".join(["python benchmarks/impl8_judge.py", *sys.argv[1:]])
        Path(args[1]).write_text(
            f"# {fresh}: sdpa-flash DRAM, main's model and {walk}\n\n"
            f"`{command}`; the record and its command: reports/impl-validation/dram.md, "
            f"{section}.\n\n" + text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
