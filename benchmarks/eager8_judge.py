"""torch-naive's forward: predicted against measured for every point of the given records.

    python benchmarks/eager8_judge.py tests/data/h200-impl-eagerfresh8.json [MORE.json] [--md OUT.md]

Per point: the call (compare's `call_time_s`, what do_bench times) and the kernels (compare's
`time_s` against the sum of the point's measured device times), each with its % error; then the
median and worst of both, and how many calls are within ±12 % (issue 11's torch-naive median
bar is ≤ 12 %) and ±20 %. With eager_kernel_fit.py present, each elementwise kernel's own error
(its matched launches) too. Runs on any checkout (the judged model is whatever iosim imports).
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


def main() -> None:
    args = sys.argv[1:]
    md = Path(args[args.index("--md") + 1]) if "--md" in args else None
    paths = [Path(a) for a in args if a.endswith(".json")]
    lines = table(rows(paths))
    print("\n".join(lines))
    if md is not None:
        md.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
