"""Judge FlexAttention's forward schedule, round 9 (a lone program's share of its SM,
estimates/sm_sharing.py), on a fresh record without refitting, beside round 8's, point by
point (no GPU needed).

    python benchmarks/flex9_judge.py tests/data/h200-impl-flexfresh9.json [OUT.md] [--moment]

`round 9`: configs/gpus/h200.yaml as frozen at tag flex9-frozen. `round 8`: the same entry as
main had it at round 8 (ROUND8: its forward schedule, no lone-program rule, 2.018 µs per call,
host floor 147 µs). Errors are predicted / measured − 1 of the call's do_bench time; the kernel
columns are the main template's device time (torch.profiler) against each prediction's
kernel time. Points on flex's decoding template are timed by the roofline in both.
`--moment`: "round 9" is instead the alternative rule not shipped (a program's share of its SM
counted at each moment, estimates/sm_sharing.py moment_makespan) with its own fit (MOMENT),
to report what it would have given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import median
from typing import Any

from iosim.analysis.compare import compare
from iosim.calibrate.flex_fit import template_time
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.impl_calibration import with_impl_calibration
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from iosim.record import replace

ROUND8 = {"forward": {"efficiency_d64": 0.96, "efficiency_d128": 0.85, "unaligned_d64": 1.65,
                      "unaligned_d128": 1.08, "program_overhead_s": 4.5e-06,
                      "causal_loops": 2.0},
          "call_overhead_s": 2.018e-06, "host_floor_s": 0.000147}
"""measured.impls.flex of configs/gpus/h200.yaml at main 4cff435 (round 8, shipped), where
round 9 changed it."""


MOMENT = {"forward": {"efficiency_d64": 0.805, "efficiency_d128": 0.85, "unaligned_d64": 1.57,
                      "unaligned_d128": 1.08, "program_overhead_s": 4.5e-06,
                      "causal_loops": 2.0, "lone_share": 0.92},
          "call_overhead_s": 2.014e-06, "host_floor_s": 0.000156}
"""`python benchmarks/flex9_fit.py --moment` on the same seen records as the shipped fit."""


def with_profile(hardware: Hardware, profile: dict[str, Any]) -> Hardware:
    """The flex entry with this forward schedule and call terms, everything else kept."""
    assert hardware.measured is not None
    entry = hardware.measured.impls["flex"]
    new = replace(entry, forward=dict(profile["forward"]),
                  call_overhead_s=profile["call_overhead_s"],
                  terms={**entry.terms, "host_floor_s": profile["host_floor_s"]})
    return with_impl_calibration(hardware, "flex", new)


def round8(hardware: Hardware) -> Hardware:
    """The profile of round 8 (ROUND8), everything else of the flex entry kept."""
    return with_profile(hardware, ROUND8)


def judge(points: list[dict[str, Any]], judged: Hardware | None = None) -> list[dict[str, Any]]:
    """Every timed flex point: its shape, measured call and kernel, and both rounds' (round 9:
    `judged`, by default the YAML's, frozen at tag flex9-frozen)."""
    new_hw = judged or resolve_hardware("h200").hardware
    old_hw = round8(new_hw)
    impl = get_implementation("flex")
    rows = []
    for p in points:
        if p.get("impl") != "flex" or "time_s" not in p:
            continue
        w = Workload(**p["workload"])
        new = compare(w, new_hw, impl=impl, profile="measured").algorithms[-1]
        old = compare(w, old_hw, impl=impl, profile="measured").algorithms[-1]
        rows.append({"index": p["index"], "workload": w, "call_s": p["time_s"],
                     "kernel_s": template_time(p), "timed_by": new.kernels[0].timed_by,
                     "new_s": new.call_time_s, "new_kernel_s": sum(k.time_s for k in new.kernels),
                     "old_s": old.call_time_s, "old_kernel_s": sum(k.time_s for k in old.kernels)})
    return rows


def shape(w: Workload) -> str:
    return (f"{w.batch}×{w.heads}/{w.kv_heads} {w.n}/{w.n_kv} d{w.d} {w.dtype}"
            f"{' causal' if w.causal else ''}")


def _err(pred: float, meas: float | None) -> str:
    return f"{pred / meas - 1:+.1%}" if meas else "—"


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| # | shape (batch×heads/kv, n/n_kv) | measured call | kernel | round 9 | error "
             "| its kernel | error | round 8 | error | its kernel | error |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        k = r["kernel_s"]
        lines.append(
            f"| {r['index']} | {shape(r['workload'])} | {r['call_s'] * 1e6:.1f} µs | "
            f"{(k or 0) * 1e6:.1f} µs | {r['new_s'] * 1e6:.1f} µs | {_err(r['new_s'], r['call_s'])} "
            f"| {r['new_kernel_s'] * 1e6:.1f} µs ({r['timed_by']}) | {_err(r['new_kernel_s'], k)} "
            f"| {r['old_s'] * 1e6:.1f} µs | {_err(r['old_s'], r['call_s'])} "
            f"| {r['old_kernel_s'] * 1e6:.1f} µs | {_err(r['old_kernel_s'], k)} |")
    lines.append("")
    for key, name in (("new", "round 9"), ("old", "round 8")):
        calls = [abs(r[f"{key}_s"] / r["call_s"] - 1) for r in rows]
        kernels = [abs(r[f"{key}_kernel_s"] / r["kernel_s"] - 1) for r in rows if r["kernel_s"]]
        lines.append(f"{name}: calls' median |error| {median(calls):.1%} (worst {max(calls):.1%}, "
                     f"{sum(e <= 0.12 for e in calls)} of {len(calls)} within 12 %); kernels' "
                     f"median {median(kernels):.1%} (worst {max(kernels):.1%}).")
        lines.append("")
    return lines[:-1]


def main() -> None:
    judged = None
    if "--moment" in sys.argv:
        from iosim.estimates import sm_sharing

        sm_sharing.shared_makespan = sm_sharing.moment_makespan  # type: ignore[assignment]
        judged = with_profile(resolve_hardware("h200").hardware, MOMENT)
    sys.argv = [a for a in sys.argv if a != "--moment"]
    record = json.loads(Path(sys.argv[1]).read_text())
    lines = table(judge(record["points"], judged))
    print("\n".join(lines))
    if len(sys.argv) > 2:
        head = [f"# flex on the H200, round 9: {record.get('set', '?')}", "",
                f"Record: {sys.argv[1]} ({record['device'].get('name')}, torch "
                f"{record['device'].get('torch')}; `{record.get('command')}`). Judged by "
                f"`python benchmarks/flex9_judge.py {sys.argv[1]} {sys.argv[2]}`, nothing "
                "fitted on it.", ""]
        Path(sys.argv[2]).write_text("\n".join(head + lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
