"""torch-naive's forward: predicted against measured for every point of the given records.

    python benchmarks/eager8_judge.py tests/data/h200-impl-eagerfresh8.json [MORE.json] [--md OUT.md]
    python benchmarks/eager8_judge.py --dram tests/data/h200-impl-eagerdram9.csv eagerfresh9

(eager9 judges tests/data/h200-impl-eagerfresh9.json with it too, reports/impl-validation/eager9.md.)

Per point: the call (compare's `call_time_s`, what do_bench times) and the kernels (compare's
`time_s` against the sum of the point's measured device times), each with its % error; then the
median and worst of both, and how many calls are within ±12 % (issue 11's torch-naive median
bar is ≤ 12 %) and ±20 %. With eager_kernel_fit.py present, each elementwise kernel's own error
(its matched launches) too, and with eager_fallback_fit.py each GEMM's at N_kv % 8 != 0. Runs on
any checkout (the judged model is whatever iosim imports).

--dram CSV SET: ncu's DRAM bytes of the set's torch-naive calls (benchmarks/impl_dram_h200.py
SET torch-naive under ncu, evicts around each call) against the DRAM estimate per call and per
elementwise kernel. ncu counts kernels, not the cudaMemcpy of masked_fill's clone, so the call's
estimate is set beside the counted kernels without mask_copy's terms (and printed with them).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.impl_validation_report import describe
from iosim.analysis.compare import compare
from iosim.inputs.workload import Workload


def rows(paths: list[Path]) -> list[dict[str, Any]]:
    try:
        from iosim.calibrate.eager_kernel_fit import matched_times
    except ImportError:  # a checkout from before the per-kernel fit
        matched_times = None
    try:
        from iosim.calibrate.eager_fallback_fit import gemm_times
    except ImportError:  # a checkout from before the per-GEMM fallback rule
        gemm_times = None
    out = []
    for path in paths:
        for p in json.loads(path.read_text())["points"]:
            if p.get("impl") != "torch-naive" or "time_s" not in p:
                continue
            est = compare(Workload(**p["workload"]), "h200", impl="torch-naive",
                          profile="measured").algorithms[-1]
            kernels_s = sum(k["time_s"] for k in p["kernels"])
            per_kernel = {}
            if matched_times is not None:
                measured = matched_times([k.name for k in est.kernels], p["kernels"])
                per_kernel = {k.name: k.time_s / measured[k.name] - 1 for k in est.kernels
                              if k.name in measured}
            if gemm_times is not None and any(k.timed_by == "fallback-gemm"
                                              for k in est.kernels):
                gemms = gemm_times(p["kernels"])
                per_kernel.update({f"fallback_{k.name}": k.time_s / gemms[k.name] - 1
                                   for k in est.kernels if k.name in gemms})
            out.append({"point": describe(p["workload"]), "call_s": p["time_s"],
                        "predicted_call_s": est.call_time_s,
                        "call_error": est.call_time_s / p["time_s"] - 1,
                        "kernels_s": kernels_s, "predicted_kernels_s": est.time_s,
                        "kernel_error": est.time_s / kernels_s - 1, "per_kernel": per_kernel})
    return out


def table(found: list[dict[str, Any]]) -> list[str]:
    lines = ["| point | call | predicted | error | kernels | predicted | error |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in found:
        lines.append(f"| {r['point']} | {r['call_s'] * 1e6:.1f} µs | "
                     f"{r['predicted_call_s'] * 1e6:.1f} µs | {r['call_error']:+.1%} | "
                     f"{r['kernels_s'] * 1e6:.1f} µs | {r['predicted_kernels_s'] * 1e6:.1f} µs | "
                     f"{r['kernel_error']:+.1%} |")
    calls = [abs(r["call_error"]) for r in found]
    kernels = [abs(r["kernel_error"]) for r in found]
    lines += ["", f"{len(found)} points: call median {statistics.median(calls):.1%}, worst "
              f"{max(calls):.1%}, within ±12 % {sum(c <= 0.12 for c in calls)}, within ±20 % "
              f"{sum(c <= 0.20 for c in calls)}; kernels median {statistics.median(kernels):.1%}, "
              f"worst {max(kernels):.1%}"]
    by_kernel: dict[str, list[float]] = {}
    for r in found:
        for name, e in r["per_kernel"].items():
            by_kernel.setdefault(name, []).append(abs(e))
    if by_kernel:
        lines.append("per kernel (median |error|, worst): " + ", ".join(
            f"{k} {statistics.median(v):.1%} / {max(v):.1%} ({len(v)})"
            for k, v in sorted(by_kernel.items())))
    return lines


ROLES = {"bitwise_not": "mask_not", "masked_fill": "mask"}
"""ncu's launches of the mask by name: ~keep and the fill (the clone is a memcpy, not counted)."""


def dram_rows(csv_path: Path, set_name: str) -> list[dict[str, Any]]:
    """Per torch-naive call of the set: counted DRAM (ncu's kernels and the evict's residue),
    the estimate without and with mask_copy's terms, and the mask passes' own bytes."""
    from benchmarks import impl_dram_h200 as dram

    points = dram._set(set_name)
    todo = dram.calls(points, ("torch-naive",))
    out = []
    for r in dram.counted(csv_path.read_text(), todo):
        w = points[r["index"]]
        est = compare(w, "h200", impl="torch-naive", profile="measured").algorithms[-1]
        assert est.dram is not None
        total = est.dram.read_bytes + est.dram.write_bytes
        copy = est.dram.of_kernel("mask_copy").bytes
        launches = r["kernels"]
        own = {}
        for i, k in enumerate(launches):
            if "bitwise_not" in k["name"]:
                own["mask_not"] = k["read"] + k["write"]
                if i + 1 < len(launches):  # the fill (names are cut at 80 characters)
                    own["mask"] = launches[i + 1]["read"] + launches[i + 1]["write"]
        shape = {k: getattr(w, k) for k in ("n", "n_kv", "d", "heads", "kv_heads", "batch",
                                            "dtype", "causal")}
        out.append({"point": describe(shape),
                    "counted": r["dram"], "predicted": total - copy, "with_copy": total,
                    "own": {k: (v, est.dram.of_kernel(k).bytes) for k, v in own.items()}})
    return out


def dram_table(found: list[dict[str, Any]]) -> list[str]:
    lines = ["| point | counted | predicted (no clone) | error | with the clone | ~keep counted / "
             "predicted | fill counted / predicted |", "|---|---:|---:|---:|---:|---:|---:|"]
    def pair(own: dict[str, tuple[float, float]], k: str) -> str:
        return f"{own[k][0] / 1e6:.1f} / {own[k][1] / 1e6:.1f} MB" if k in own else "—"

    for r in found:
        lines.append(f"| {r['point']} | {r['counted'] / 1e6:.1f} MB | {r['predicted'] / 1e6:.1f} MB"
                     f" | {r['predicted'] / r['counted'] - 1:+.1%} | {r['with_copy'] / 1e6:.1f} MB"
                     f" | {pair(r['own'], 'mask_not')} | {pair(r['own'], 'mask')} |")
    errors = [abs(r["predicted"] / r["counted"] - 1) for r in found]
    if errors:
        lines += ["", f"{len(found)} calls: DRAM median {statistics.median(errors):.1%}, worst "
                  f"{max(errors):.1%}"]
    return lines


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--dram":
        print("\n".join(dram_table(dram_rows(Path(args[1]), args[2]))))
        return
    md = Path(args[args.index("--md") + 1]) if "--md" in args else None
    paths = [Path(a) for a in args if a.endswith(".json")]
    lines = table(rows(paths))
    print("\n".join(lines))
    if md is not None:
        md.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
