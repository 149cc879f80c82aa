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

from benchmarks.flex8_judge import rows_of, shape, with_profile, write_report
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware

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


def round8(hardware: Hardware) -> Hardware:
    """The profile of round 8 (ROUND8), everything else of the flex entry kept."""
    return with_profile(hardware, ROUND8)


def round9(hardware: Hardware) -> Hardware:
    """The profile of round 9: the YAML's flex entry without round 10's decoding-template
    figures (analysis/impl_decoding.py), which round 9 did not have."""
    from iosim.analysis.impl_decoding import DECODE_TERMS
    from iosim.inputs.impl_calibration import with_impl_calibration
    from iosim.record import replace

    assert hardware.measured is not None
    entry = hardware.measured.impls["flex"]
    forward = {k: v for k, v in entry.forward.items() if k not in DECODE_TERMS}
    return with_impl_calibration(hardware, "flex", replace(entry, forward=forward))


def judge(points: list[dict[str, Any]], judged: Hardware | None = None) -> list[dict[str, Any]]:
    """Every timed flex point: its shape, measured call and kernel, and both rounds' (round 9:
    `judged`, by default the YAML's as frozen at tag flex9-frozen: round9)."""
    new_hw = judged or round9(resolve_hardware("h200").hardware)
    return rows_of(points, new_hw, round8(new_hw))


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
    write_report(record, table(judge(record["points"], judged)), "round 9", "flex9_judge.py")


if __name__ == "__main__":
    main()
