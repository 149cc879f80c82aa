"""Predicted against measured for every point of a validation record (no GPU needed).

    python benchmarks/impl_validation_report.py tests/data/h200-impl-validation2.json OUTDIR

Writes OUTDIR/validation.md (every point's predicted and measured time and % error, per
implementation, with median and worst) and OUTDIR/validation.png (predicted vs measured, log-log).
The prediction is `compare(workload, "h200", impl=..., profile="measured")`'s call time
(`call_time_s`: the kernels, the time per call, the host-bound floor), with the profiles'
calibrations fitted by benchmarks/impl_fit.py on the fit records; for
tests/data/h200-impl-validation6.json nothing was fitted on the record (the model was frozen,
tag impl7-frozen, before it was measured); the older sets, validation5 included, are fit data.

Host time apart from the kernel model: each row also gives the measured kernels' device time
(torch.profiler, one call from a cold L2) and the call's time beyond it ("host gap": do_bench's
time per call minus its kernels), and the summary the kernel model's own error (the predicted
kernels, `time_s`, against the measured kernels), so that a call stalled on the host or on a
cold start shows as such rather than as a kernel-model error.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from iosim.analysis.compare import compare
from iosim.inputs.workload import Workload


def predictions(record: dict[str, Any], profile: str = "measured") -> list[dict[str, Any]]:
    rows = []
    for p in record["points"]:
        if "time_s" not in p:
            continue
        w = Workload(**p["workload"])
        est = compare(w, "h200", impl=p["impl"], profile=profile).algorithms[-1]  # type: ignore[arg-type]
        kernels_s = sum(k["time_s"] for k in p["kernels"])
        rows.append({**p, "predicted_s": est.call_time_s, "algorithm": est.algorithm,
                     "error": (est.call_time_s - p["time_s"]) / p["time_s"],
                     "kernels_s": kernels_s, "host_gap_s": p["time_s"] - kernels_s,
                     "kernel_error": (est.time_s - kernels_s) / kernels_s if kernels_s > 0
                     else float("nan"),
                     "kernels_predicted": len(est.kernels),
                     "kernels_measured": len(p["kernels"])})
    return rows


FRESH = {"validation6": "impl7-frozen", "validation10": "validation10-frozen",
         "validation11": "validation11-frozen"}
"""The sets nothing was fitted on (issue 11 rounds 7 and 10: VALIDATION10 and VALIDATION11) and
the tag frozen before each was measured; every other set is fit data (validation6 has been
since: eager_fallback_fit.py, eager8)."""


def describe(w: dict[str, Any]) -> str:
    kv = f"/{w['n_kv']}" if w["n_kv"] != w["n"] else ""
    gqa = f"/{w['kv_heads']}" if w["kv_heads"] != w["heads"] else ""
    return (f"b{w['batch']} h{w['heads']}{gqa} N{w['n']}{kv} d{w['d']} {w['dtype']}"
            f"{' causal' if w['causal'] else ''}")


def summary(rows: list[dict[str, Any]], key: str = "error"
            ) -> dict[str, tuple[int, float, float]]:
    out = {}
    for impl in dict.fromkeys(r["impl"] for r in rows):
        errs = [abs(r[key]) for r in rows if r["impl"] == impl and r[key] == r[key]]
        out[impl] = (len(errs), statistics.median(errs), max(errs))
    return out


def markdown(rows: list[dict[str, Any]], record: dict[str, Any]) -> str:
    name = record.get("set") or "validation"  # the first records carry no set name
    role = (f"fresh validation set: nothing fitted on it, measured after tag {FRESH[name]}"
            if name in FRESH else f"set `{name}`: FIT DATA (the model was fitted on it)")
    lines = [f"# Validation on {record['device']['name']} (torch {record['device']['torch']})", "",
             f"Record: {name} ({role}); command: `{record.get('command', '')}`",
             "",
             "| impl | points | median abs error | worst | kernel model median | worst |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    kernel = summary(rows, "kernel_error")
    for impl, (n, med, worst) in summary(rows).items():
        _, k_med, k_worst = kernel[impl]
        lines.append(f"| {impl} | {n} | {med:.1%} | {worst:.1%} | {k_med:.1%} | {k_worst:.1%} |")
    lines += ["", "Kernel model: the predicted kernels (no call overhead, no host floor) against the "
              "measured kernels' device time; host gap: the measured call minus its kernels.",
              "", "| impl | # | workload | loop nest | predicted | measured | error | kernels "
              "pred/meas | meas. kernels | host gap | kernel error |",
              "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['impl']} | {r['index']} | {describe(r['workload'])} | "
                     f"{r['algorithm']} | {r['predicted_s'] * 1e6:,.1f} µs | "
                     f"{r['time_s'] * 1e6:,.1f} µs | {r['error']:+.0%} | "
                     f"{r['kernels_predicted']}/{r['kernels_measured']} | "
                     f"{r['kernels_s'] * 1e6:,.1f} µs | {r['host_gap_s'] * 1e6:,.1f} µs | "
                     f"{r['kernel_error']:+.0%} |")
    refused = [p for p in record["points"] if "refused" in p]
    if refused:
        lines += ["", "Not timed (refused by the implementation or out of memory in the check):",
                  ""]
        lines += [f"- {p['impl']} #{p['index']} {describe(p['workload'])}: {p['refused'][:120]}"
                  for p in refused]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path, title: str = "Validation set") -> None:
    """Predicted against measured, log-log, one colour per implementation (output/plot.py's
    Agg figure and save, which never overwrites)."""
    from iosim.output.plot import new_figure, save

    fig, ax = new_figure(7.5, 6.5)
    for impl in dict.fromkeys(r["impl"] for r in rows):
        pts = [r for r in rows if r["impl"] == impl]
        ax.scatter([r["time_s"] * 1e6 for r in pts], [r["predicted_s"] * 1e6 for r in pts],
                   label=impl, s=18, alpha=0.8)
    lo = min(min(r["time_s"], r["predicted_s"]) for r in rows) * 1e6 / 1.5
    hi = max(max(r["time_s"], r["predicted_s"]) for r in rows) * 1e6 * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, label="predicted = measured")
    for f in (1.2, 1 / 1.2):
        ax.plot([lo, hi], [lo * f, hi * f], color="gray", lw=0.6, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time (µs, do_bench median, H200)")
    ax.set_ylabel("iosim predicted time (µs, measured profile)")
    ax.set_title(f"{title}: predicted vs measured (dotted: ±20 %)")
    ax.legend(loc="upper left", fontsize=8)
    save(fig, path.with_suffix(""), ("png",))


def main() -> None:
    record = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    rows = predictions(record)
    (out / "validation.md").write_text(markdown(rows, record))
    plot(rows, out / "validation.png",
         "Fresh validation set" if record.get("set") in FRESH
         else f"Fit set ({record.get('set') or 'validation'})")
    kernel = summary(rows, "kernel_error")
    for impl, (n, med, worst) in summary(rows).items():
        print(f"{impl:15} {n:3} points  median {med:6.1%}  worst {worst:6.1%}  (kernel model "
              f"{kernel[impl][1]:6.1%} / {kernel[impl][2]:6.1%})")


if __name__ == "__main__":
    main()
