"""TRITONFRESH13: iosim-triton's calls, main's one solo rate against the frozen lone-grid terms
(estimates/lone_prologue.py, tag triton13-frozen). No GPU needed.

    python benchmarks/triton13_judge.py tests/data/h200-impl-tritonfresh13.json OUT.md

"main": configs/gpus/h200.yaml's iosim-triton entry as main had it (9e956f0: solo rate 0.84 for
every c, no solo_rate_one, no prologue; every other figure the same, which is all that differs
for this implementation between the two trees); "frozen": the entry as shipped. Each row: the
call (do_bench, the acceptance's time) and the kernels' device time (torch.profiler), each
against its prediction (call_time_s, time_s), and whether the grid is lone.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from iosim.analysis.compare import compare
from iosim.calibrate.lone_fit import MAIN_SOLO_RATE
from iosim.estimates.lone_prologue import LONE_TERMS
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.impl_calibration import with_impl_calibration
from iosim.inputs.workload import Workload
from iosim.record import replace

IMPL = "iosim-triton"
BANDS = (0.08, 0.20)
"""Issue 11's acceptance for iosim-triton: median ≤ 8 %, worst ≤ 20 %."""


def main_hardware(frozen: Hardware) -> Hardware:
    """The frozen GPU with iosim-triton's entry as main had it."""
    assert frozen.measured is not None
    entry = frozen.measured.impls[IMPL]
    terms = {k: v for k, v in entry.terms.items() if k not in LONE_TERMS}
    return with_impl_calibration(frozen, IMPL, replace(
        entry, terms={**terms, "solo_rate": MAIN_SOLO_RATE}))


def rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    frozen = resolve_hardware("h200").hardware
    models = {"main": main_hardware(frozen), "frozen": frozen}
    out = []
    for p in record["points"]:
        if p.get("impl") != IMPL or "time_s" not in p:
            continue
        w = Workload(**p["workload"])
        kernels_s = sum(float(k["time_s"]) for k in p["kernels"])
        row: dict[str, Any] = {"index": p["index"], "w": w, "call_s": p["time_s"],
                               "kernels_s": kernels_s}
        for name, hw in models.items():
            est = compare(w, hw, impl=IMPL, profile="measured").algorithms[-1]
            row[name] = est.call_time_s / p["time_s"] - 1
            row[f"{name}_kernel"] = est.time_s / kernels_s - 1
            occ = est.occupancy[0]
            row["lone"] = occ.programs <= occ.sm_count
            row["programs"] = occ.programs
        out.append(row)
    return out


def describe(w: Workload) -> str:
    return (f"b{w.batch} h{w.heads} N {w.n} d{w.d} {w.dtype}"
            f"{' causal' if w.causal else ''}")


def summary(label: str, errors: list[float]) -> str:
    a = [abs(e) for e in errors]
    return (f"{label}: {len(a)} calls, median {statistics.median(a):.1%}, worst {max(a):.1%}, "
            f"within 8 %: {sum(e <= BANDS[0] for e in a)}, within 20 %: "
            f"{sum(e <= BANDS[1] for e in a)}")


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| # | shape | programs | call µs | kernels µs | main call | frozen call | "
             "main kernel | frozen kernel |", "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['index']} | {describe(r['w'])} | {r['programs']}"
                     f"{' (lone)' if r['lone'] else ''} | {r['call_s'] * 1e6:.1f} | "
                     f"{r['kernels_s'] * 1e6:.1f} | {r['main']:+.1%} | {r['frozen']:+.1%} | "
                     f"{r['main_kernel']:+.1%} | {r['frozen_kernel']:+.1%} |")
    lines.append("")
    for subset, keep in (("all", lambda r: True), ("lone grids", lambda r: r["lone"]),
                         ("above one wave", lambda r: not r["lone"])):
        sel = [r for r in table if keep(r)]
        if not sel:
            continue
        for key, what in (("", "call"), ("_kernel", "kernel")):
            for model in ("main", "frozen"):
                lines.append("- " + summary(f"{subset}, {what}, {model}",
                                            [r[model + key] for r in sel]))
    return "\n".join(lines) + "\n"


def main() -> None:
    record = json.loads(Path(sys.argv[1]).read_text())
    text = markdown(rows(record))
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
