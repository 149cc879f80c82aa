"""bwd9's eager host floor, frozen at `bwd9-frozen`, judged on the ninth fresh H200 set: pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The floor (eager_host_floor.py): eager's backward takes max(its kernels' time, HOST_CALL_S +
launches × HOST_PER_LAUNCH_S). Its two constants are fitted by `seen_points` +
`fit_host_floor` on every earlier record's eager backward time (the calibration records and
fresh…fresh8); the record (`python3 benchmarks/backward_h200.py OUT --fresh9 --no-ncu`, its
grid `fresh9_grid` committed before the run) times eager's and SDPA's backward at 13 new
points, no ncu. Nothing is fitted on it: floor against no floor, the same points, the bound
±20 % above 0.2 ms (fresh3_bwd.py's).
"""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

from iosim.calibrate import eager_host_floor as HF
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate import torch_bwd_fit as F
from iosim.calibrate.backward_fit import workload_of
from iosim.inputs.hardware import Hardware

SEEN = (*D.RECORDS, D.FRESH, D.FRESH2, D.FRESH3, D.FRESH4, D.FRESH5, D.FRESH6, D.FRESH7,
        D.FRESH8)
"""Every record seen before bwd9's floor was frozen (FRESH4 holds no eager time)."""


TIME_MODELS = {"eager": F.EAGER_TIME, "sdpa": F.SDPA_TIME}
"""The frozen backward time model of each timed implementation of the records."""


def launches(p: dict[str, Any], hardware: Hardware, what: str = "eager") -> int:
    """`what`'s backward launches at point `p` ("eager" or "sdpa") by the model's kernel list."""
    w = workload_of(p)
    return HF.launches(k.name for k in D.launched(w, what, D.model(w, what, hardware)))


def seen_points(hardware: Hardware, what: str = "eager", seen: tuple[Path, ...] = SEEN
                ) -> list[tuple[float, int, float]]:
    """(kernels' seconds by the frozen model without the floor, launches, measured seconds) of
    every `what` backward time in the `seen` records."""
    return [(F.predict_time(p, what, hardware, TIME_MODELS[what], host_floor=False),
             launches(p, hardware, what), p[f"{what}_s"])
            for record in D.load([path for path in seen if path.exists()])
            for p in record["points"] if f"{what}_s" in p]


def rows(record: dict[str, Any], hardware: Hardware, what: str = "eager"
         ) -> list[tuple[str, float, float, float, int]]:
    """(point, measured, with the floor, without, launches) of every `what` time in `record`."""
    model = TIME_MODELS[what]
    return [(p["id"], p[f"{what}_s"], F.predict_time(p, what, hardware, model),
             F.predict_time(p, what, hardware, model, host_floor=False),
             launches(p, hardware, what))
            for p in record["points"] if f"{what}_s" in p]


def _inside(estimate: float, measured: float) -> bool:
    return abs(estimate - measured) <= HF.BOUND * measured


def sensitivity_lines(record: dict[str, Any], hardware: Hardware) -> list[str]:
    """Points within the bound, seen and fresh, as each constant moves."""
    seen = seen_points(hardware)
    fresh = [(no, n, m) for _, m, _, no, n in rows(record, hardware)]
    lines = ["| HOST_CALL_S | HOST_PER_LAUNCH_S | seen within ±20 % | fresh9 within ±20 % |",
             "|---:|---:|---:|---:|"]
    c, s = HF.HOST_CALL_S, HF.HOST_PER_LAUNCH_S
    for call, per in ((0.0, 0.0), (c, s), (0.0, s), (c + 50e-6, s), (c, s - 10e-6),
                      (c, s + 10e-6), (0.8 * c, 0.8 * s), (1.2 * c, 1.2 * s), (0.0, 34e-6)):
        a, n = HF.within(seen, call, per)
        b, k = HF.within(fresh, call, per)
        lines.append(f"| {call * 1e6:.0f} µs | {per * 1e6:.0f} µs | {a} of {n} | {b} of {k} |")
    return lines


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the ninth fresh record."""
    table = rows(record, hardware)
    lines = ["## bwd9's eager host floor frozen, on a ninth fresh set (backward-h200-fresh9.json)",
             "", f"Record: `{record.get('command', '')}` ({record.get('device')}, torch "
             f"{record.get('torch')}, Triton {record.get('triton')}). The points "
             "(`fresh9_grid`) were committed before the run and the floor frozen (tag "
             "`bwd9-frozen`); nothing is fitted on them. Time only (no ncu). The floor: "
             f"max(kernels, {HF.HOST_CALL_S * 1e6:.0f} µs + launches × "
             f"{HF.HOST_PER_LAUNCH_S * 1e6:.0f} µs), fitted on the seen records "
             "(eager_host_floor.py). Bound: ±20 % above 0.2 ms.", "",
             "| point | launches | measured | p20-p80 | floor | error | no floor | error |",
             "|---|---:|---:|---|---:|---:|---:|---:|"]
    spread = {p["id"]: (p.get("eager_p20_s", 0.0), p.get("eager_p80_s", 0.0))
              for p in record["points"]}
    for point, m, f, no, n in table:
        lo, hi = spread[point]
        lines.append(f"| {point} | {n} | {m * 1e3:.3f} ms | {lo * 1e3:.3f}-{hi * 1e3:.3f} | "
                     f"{f * 1e3:.3f} ms | {(f - m) / m:+.1%} | {no * 1e3:.3f} ms | "
                     f"{(no - m) / m:+.1%} |")
    judged = [t for t in table if t[1] >= HF.JUDGED_ABOVE_S]
    with_floor = sum(_inside(f, m) for _, m, f, _, _ in judged)
    without = sum(_inside(no, m) for _, m, _, no, _ in judged)
    mean_f = sum(abs(f - m) / m for _, m, f, _, _ in judged) / max(1, len(judged))
    mean_no = sum(abs(no - m) / m for _, m, _, no, _ in judged) / max(1, len(judged))
    med_f = median(abs(f - m) / m for _, m, f, _, _ in judged) if judged else 0.0
    med_no = median(abs(no - m) / m for _, m, _, no, _ in judged) if judged else 0.0
    lines += ["", f"Within ±20 % above 0.2 ms: {with_floor} of {len(judged)} with the floor, "
              f"{without} of {len(judged)} without; median |error| {med_f:.1%} against "
              f"{med_no:.1%}, mean {mean_f:.1%} against {mean_no:.1%}.", "",
              "### Sensitivity of the floor's constants", "",
              "Seen: the 74 eager times above 0.2 ms the constants were fitted on; fresh9: "
              "this record (shown, never fitted on).", "",
              *sensitivity_lines(record, hardware)]
    return "\n".join(lines) + "\n"
