"""Judge FlexAttention's forward schedule (round 8) on a fresh record, without refitting, beside
the profile shipped before it, point by point (no GPU needed).

    python benchmarks/flex8_judge.py tests/data/h200-impl-flexfresh8.json [OUT.md]

`schedule`: configs/gpus/h200.yaml as frozen at tag flex8-frozen (measured.impls.flex with its
`forward` schedule, time per call 2.08 µs, host floor 147 µs). `shipped`: the same entry as
main had it before round 8 (round 5's fit: no schedule, 5.0 µs per call, host floor 181 µs;
its efficiencies, solo rate and decode floor are unchanged by round 8). Errors are predicted /
measured − 1 of the call's do_bench time; the kernel column is the main template's device time
(torch.profiler) against the prediction's kernel time.
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

SHIPPED = {"call_overhead_s": 5.0e-06, "host_floor_s": 0.000181}
"""measured.impls.flex of configs/gpus/h200.yaml at main 32ef341 (round 5), where round 8
changed it (its `forward` entry is new)."""


def with_profile(hardware: Hardware, profile: dict[str, Any]) -> Hardware:
    """The flex entry with this forward schedule (none: {}, and then no schedule's source) and
    call terms, everything else kept."""
    assert hardware.measured is not None
    entry = hardware.measured.impls["flex"]
    unscheduled = {} if profile["forward"] else {"forward_source": ""}
    new = replace(entry, forward=dict(profile["forward"]), **unscheduled,
                  call_overhead_s=profile["call_overhead_s"],
                  terms={**entry.terms, "host_floor_s": profile["host_floor_s"]})
    return with_impl_calibration(hardware, "flex", new)


def shipped(hardware: Hardware) -> Hardware:
    """The profile before round 8 (SHIPPED; no forward schedule)."""
    return with_profile(hardware, {"forward": {}, **SHIPPED})


def rows_of(points: list[dict[str, Any]], new_hw: Hardware,
            old_hw: Hardware) -> list[dict[str, Any]]:
    """Every timed flex point: its shape, measured call and kernel, and the call and kernel
    time each profile predicts (`new_hw`'s and `old_hw`'s)."""
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


def judge(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every timed flex point with round 8's schedule (new) and the profile before it (old)."""
    from benchmarks.flex9_judge import round8

    schedule = round8(resolve_hardware("h200").hardware)  # round 9 changed the YAML
    return rows_of(points, schedule, shipped(schedule))


def write_report(record: dict[str, Any], lines: list[str], title: str, script: str) -> None:
    """Print the judgement and, given OUT.md (argv[2]), write it under a head naming the record,
    its run and the command that judged it."""
    print("\n".join(lines))
    if len(sys.argv) > 2:
        head = [f"# flex on the H200, {title}: {record.get('set', '?')}", "",
                f"Record: {sys.argv[1]} ({record['device'].get('name')}, torch "
                f"{record['device'].get('torch')}; `{record.get('command')}`). Judged by "
                f"`python benchmarks/{script} {sys.argv[1]} {sys.argv[2]}`, nothing "
                "fitted on it.", ""]
        Path(sys.argv[2]).write_text("\n".join(head + lines) + "\n", encoding="utf-8")


def shape(w: Workload) -> str:
    return (f"{w.batch}×{w.heads}/{w.kv_heads} {w.n}/{w.n_kv} d{w.d} {w.dtype}"
            f"{' causal' if w.causal else ''}")


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| # | shape (batch×heads/kv, n/n_kv) | measured call | kernel | schedule | "
             "error | its kernel | error | shipped | error |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        k = r["kernel_s"]
        kerr = f"{r['new_kernel_s'] / k - 1:+.1%}" if k else "—"
        lines.append(
            f"| {r['index']} | {shape(r['workload'])} | {r['call_s'] * 1e6:.1f} µs | "
            f"{(k or 0) * 1e6:.1f} µs | {r['new_s'] * 1e6:.1f} µs | "
            f"{r['new_s'] / r['call_s'] - 1:+.1%} | {r['new_kernel_s'] * 1e6:.1f} µs "
            f"({r['timed_by']}) | {kerr} | {r['old_s'] * 1e6:.1f} µs | "
            f"{r['old_s'] / r['call_s'] - 1:+.1%} |")
    new = [abs(r["new_s"] / r["call_s"] - 1) for r in rows]
    old = [abs(r["old_s"] / r["call_s"] - 1) for r in rows]
    lines += ["", f"{len(rows)} points: the schedule's median |error| {median(new):.1%} "
              f"(worst {max(new):.1%}, {sum(e <= 0.12 for e in new)} within 12 %); the shipped "
              f"profile's {median(old):.1%} (worst {max(old):.1%}, "
              f"{sum(e <= 0.12 for e in old)} within 12 %)."]
    return lines


def main() -> None:
    record = json.loads(Path(sys.argv[1]).read_text())
    write_report(record, table(judge(record["points"])), "round 8", "flex8_judge.py")


if __name__ == "__main__":
    main()
