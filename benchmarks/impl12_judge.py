"""Judge the frozen spill write-back per template instance against main's model, fresh set.

    python benchmarks/impl12_judge.py tests/data/h200-impl-dram12.csv [REPORT.md]
    python benchmarks/impl12_judge.py --set impl9fresh tests/data/h200-impl-dram9.csv  # seen

Round 12 (issue 11): IMPL12FRESH (benchmarks/impl_validation_h200.py), counted by ncu after tag
impl12-frozen (benchmarks/impl8_h200.sh with SET=impl12fresh). Nothing refitted. "main": the
model main shipped before (each spill row's one DRAM figure for every FA2 template instance:
benchmarks/spill_instance_fit.py one_figure); "instances": the frozen one (the rows'
by_instance, estimates/spills.py fa2_instance). Both walk FA2's descending launch order as
shipped. Prints every call with its instance, ncu's read and write split, and the median and
worst |error| and the calls within 20 % of both; with REPORT.md, writes them there.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks.impl_dram_h200 import _set, calls, counted
from benchmarks.spill_instance_fit import one_figure
from iosim.analysis.compare import compare
from iosim.estimates.spills import fa2_instance
from iosim.inputs.implementations import Implementation
from iosim.inputs.implementations_yaml import get_implementation

SET = "impl12fresh"


def _bytes(w: object, impl: Implementation) -> tuple[float, float]:
    est = compare(w, "h200", impl=impl, profile="measured").algorithms[-1]  # type: ignore[arg-type]
    assert est.dram is not None
    return float(est.dram.read_bytes), float(est.dram.write_bytes)


def rows(csv: Path, set_name: str = SET) -> list[dict[str, object]]:
    points = _set(set_name)
    after = get_implementation("sdpa-flash")
    before = one_figure(after)
    out = []
    for r in counted(csv.read_text(), calls(points, ("sdpa-flash",))):
        w = points[r["index"]]
        est = compare(w, "h200", impl=after, profile="measured").algorithms[-1]
        tiling = est.tiling
        instance = ("split-KV" if est.algorithm != "flash2" or tiling is None else
                    fa2_instance(w.n, w.n_kv, w.d, int(tiling.block_q), int(tiling.block_kv),
                                 w.causal))
        b, a = sum(_bytes(w, before)), _bytes(w, after)
        out.append({"index": r["index"], "w": w, "dram": r["dram"], "instance": instance,
                    "read": sum(k["read"] for k in r["kernels"]),
                    "write": sum(k["write"] for k in r["kernels"]) + r["residue"],
                    "pred_read": a[0], "pred_write": a[1],
                    "main": (b - r["dram"]) / r["dram"],
                    "instances": (sum(a) - r["dram"]) / r["dram"]})
    return out


def main() -> None:
    args = sys.argv[1:]
    set_name = SET
    if args[:1] == ["--set"]:  # a seen set's record, to try the script on (not a judgement)
        set_name, args = args[1], args[2:]
    got = rows(Path(args[0]), set_name)
    lines = ["| # | shape | instance | ncu MB (read + write) | model MB (read + write) | main | "
             "instances |", "|---|---|---|---|---|---|---|"]
    for r in got:
        w = r["w"]
        shape = (f"b{w.batch} h{w.heads}/{w.kv_heads} N {w.n}"  # type: ignore[attr-defined]
                 + (f"/{w.n_kv}" if w.n != w.n_kv else "")  # type: ignore[attr-defined]
                 + f" d{w.d} {w.dtype}{' causal' if w.causal else ''}")  # type: ignore[attr-defined]
        lines.append(f"| {r['index']} | {shape} | {r['instance']} | {r['read'] / 1e6:.1f} + "
                     f"{r['write'] / 1e6:.1f} | {r['pred_read'] / 1e6:.1f} + "
                     f"{r['pred_write'] / 1e6:.1f} | {r['main']:+.1%} | {r['instances']:+.1%} |")
    summary = []
    for key in ("main", "instances"):
        mags = sorted(abs(float(r[key])) for r in got)  # type: ignore[arg-type]
        summary.append(f"{key}: {len(mags)} calls, median {statistics.median(mags):.1%}, worst "
                       f"{mags[-1]:.1%}, within 5 %: {sum(m <= 0.05 for m in mags)}, within "
                       f"20 %: {sum(m <= 0.2 for m in mags)}")
    text = "\n".join([*lines, "", *summary])
    print(text)
    if len(args) > 1:
        command = " ".join(["python benchmarks/impl12_judge.py", *sys.argv[1:]])
        Path(args[1]).write_text(
            "# IMPL12FRESH: sdpa-flash DRAM, main's model and the spill write-back per FA2 "
            f"template instance (round 12)\n\n`{command}`; the record and its command: "
            "reports/impl-validation/dram.md, round 12.\n\n" + text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
