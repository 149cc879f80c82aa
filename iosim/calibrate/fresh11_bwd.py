"""bwd12's SDPA host floor, frozen at `bwd12-frozen`, judged on an eleventh fresh H200 set: pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The floor (eager_host_floor.py, FLOORS["sdpa"]): SDPA's flash backward takes max(its kernels'
time, SDPA_HOST_CALL_S + launches × SDPA_HOST_PER_LAUNCH_S), the rule eager's backward has
had since bwd9 with SDPA's own launches (5; 7 with GQA's two group sums) and per-launch cost.
Its two constants are fitted by `seen_points` + `fit_host_floor` on every earlier record's
SDPA backward time (the calibration records and fresh…fresh9); the record (`python3
benchmarks/backward_h200.py OUT --fresh11 --no-ncu`, its grid `fresh11_grid` committed before
the run; measured as `--fresh10`/`fresh10_grid` at bwd12-frozen and renamed fresh11 on
merge, bwd11's tenth set having that name) times SDPA's backward (eager's beside it) at 13
new points, no ncu. Nothing is fitted on it: floor against no floor on the same points, the
bound ±15 % at every point (the floor is the model of the calls under 0.2 ms; the old cut is
shown too). SEEN is what bwd12 fitted on before its freeze: bwd11's tenth set (fresh10_bwd.py)
was measured in parallel and is not among them.

Shipped if, decided before the run: the floor puts more of the 13 points within ±15 % than
no floor does, and its median |error| is lower. Eager's times on this record judge bwd9's
frozen eager floor a second time (fresh for it too): shown.
"""

from __future__ import annotations

from collections import Counter
from statistics import median
from typing import Any

from iosim.calibrate import eager_host_floor as HF
from iosim.calibrate import fresh9_bwd as F9
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate import torch_bwd_fit as F
from iosim.inputs.hardware import Hardware

SEEN = (*F9.SEEN, D.FRESH9)
"""Every record seen before bwd12's floor was frozen."""
FLOOR = HF.FLOORS["sdpa"]


def launches(p: dict[str, Any], hardware: Hardware) -> int:
    """SDPA's backward launches at point `p` by the model's kernel list."""
    return F9.launches(p, hardware, "sdpa")


_SEEN: dict[str, list[tuple[float, int, float]]] = {}


def seen_points(hardware: Hardware) -> list[tuple[float, int, float]]:
    """(kernels' seconds by the frozen model without the floor, launches, measured seconds) of
    every SDPA backward time in the SEEN records (cached per GPU YAML)."""
    key = str(hardware.path)
    if key not in _SEEN:
        _SEEN[key] = F9.seen_points(hardware, "sdpa", SEEN)
    return _SEEN[key]


def launch_counts(hardware: Hardware) -> Counter[tuple[bool, bool, int, int]]:
    """(causal, GQA, the model's launches, ncu's kernels) over every seen SDPA ncu run: the
    floor's launch count against the records' kernel lists."""
    seen = D.load([path for path in SEEN if path.exists()])
    return Counter((bool(p["causal"]), p["heads"] != p["kv_heads"], launches(p, hardware),
                    len(segment["kernels"]))
                   for p, what, segment in D.items(seen) if what == "sdpa")


def rows(record: dict[str, Any], hardware: Hardware) -> list[tuple[str, float, float, float,
                                                                   int]]:
    """(point, measured, with the floor, without, launches) of every SDPA time in `record`."""
    return F9.rows(record, hardware, "sdpa")


def _error(estimate: float, measured: float) -> float:
    return abs(estimate - measured) / measured


def summary(table: list[tuple[str, float, float, float, int]], above_s: float = 0.0
            ) -> tuple[int, int, int, float, float]:
    """(within ±15 % with the floor, without, points, median |error| with, without) over the
    points measured at least `above_s`."""
    judged = [t for t in table if t[1] >= above_s]
    if not judged:
        return 0, 0, 0, 0.0, 0.0
    return (sum(_error(f, m) <= FLOOR.bound for _, m, f, _, _ in judged),
            sum(_error(no, m) <= FLOOR.bound for _, m, _, no, _ in judged), len(judged),
            median(_error(f, m) for _, m, f, _, _ in judged),
            median(_error(no, m) for _, m, _, no, _ in judged))


def sensitivity_lines(record: dict[str, Any] | None, hardware: Hardware) -> list[str]:
    """Points within ±15 %, seen and (where a record is given) fresh, as each constant moves."""
    seen = seen_points(hardware)
    fresh = ([(no, n, m) for _, m, _, no, n in rows(record, hardware)]
             if record is not None else [])
    lines = ["| SDPA_HOST_CALL_S | SDPA_HOST_PER_LAUNCH_S | seen within ±15 % | "
             "fresh11 within ±15 % |", "|---:|---:|---:|---:|"]
    c, s = FLOOR.call_s, FLOOR.per_launch_s
    for call, per in ((0.0, 0.0), (c, s), (0.0, s), (c + 20e-6, s), (c, s - 4e-6),
                      (c, s + 4e-6), (0.8 * c, 0.8 * s), (1.2 * c, 1.2 * s), (0.0, 24e-6),
                      (HF.HOST_CALL_S, HF.HOST_PER_LAUNCH_S)):
        a, n = HF.within(seen, call, per, bound=FLOOR.bound, judged_above_s=0.0)
        cell = "-"
        if fresh:
            b, k = HF.within(fresh, call, per, bound=FLOOR.bound, judged_above_s=0.0)
            cell = f"{b} of {k}"
        lines.append(f"| {call * 1e6:.0f} µs | {per * 1e6:.1f} µs | {a} of {n} | {cell} |")
    return lines


def fit_lines(hardware: Hardware) -> list[str]:
    """The fit on the seen points: the shipped constants, least squares, and the launch
    counts against the records' kernel lists."""
    seen = seen_points(hardware)
    call, per = HF.fit_host_floor(seen, bound=FLOOR.bound, judged_above_s=0.0)
    grid = [(c * 1e-6, s * 1e-6) for c in range(0, 501, 10) for s in range(0, 81, 2)]
    ls = min(grid, key=lambda g: HF.squares(seen, *g))
    inside, n = HF.within(seen, call, per, bound=FLOOR.bound, judged_above_s=0.0)
    bare, _ = HF.within(seen, 0.0, 0.0, bound=FLOOR.bound, judged_above_s=0.0)
    ls_in, _ = HF.within(seen, *ls, bound=FLOOR.bound, judged_above_s=0.0)
    decided = [(k, n, m) for k, n, m in seen if call + per * n > k]
    dec_in, dec_n = HF.within(decided, call, per, bound=FLOOR.bound, judged_above_s=0.0)
    dec_bare, _ = HF.within(decided, 0.0, 0.0, bound=FLOOR.bound, judged_above_s=0.0)
    counts = ", ".join(f"{'causal' if c else 'full'}{' GQA' if g else ''}: model {m}, ncu {k} "
                       f"({count} runs)" for (c, g, m, k), count in sorted(launch_counts(
                           hardware).items()))
    return [f"Fit (`fit_host_floor` on the {n} seen SDPA times, the most within ±15 %, least "
            f"squares breaking ties): {call * 1e6:.0f} µs + launches × {per * 1e6:.0f} µs, "
            f"{inside} of {n} within (no floor: {bare} of {n}); of the {dec_n} the floor "
            f"decides (it is above their kernels), {dec_in} against {dec_bare}. Plain least "
            f"squares of the "
            f"relative error: {ls[0] * 1e6:.0f} µs + launches × {ls[1] * 1e6:.0f} µs, {ls_in} "
            f"of {n} (pulled down by the calibration record's host-bound calls, 0.08-0.11 ms "
            f"at 5 launches, against 0.15-0.24 ms in fresh5-fresh9).", "",
            f"Launches against the records' ncu kernel lists: {counts}."]


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the eleventh fresh record."""
    table = rows(record, hardware)
    spread = {p["id"]: (p.get("sdpa_p20_s", 0.0), p.get("sdpa_p80_s", 0.0))
              for p in record["points"]}
    lines = ["## bwd12's SDPA host floor frozen, on an eleventh fresh set "
             "(backward-h200-fresh11.json)", "",
             f"Record: `{record.get('command', '')}` ({record.get('device')}, torch "
             f"{record.get('torch')}, Triton {record.get('triton')}). The points "
             "(`fresh11_grid`, run under the name fresh10) were committed before the run and "
             "the floor frozen (tag "
             "`bwd12-frozen`); nothing is fitted on them. Time only (no ncu). The floor: "
             f"max(kernels, {FLOOR.call_s * 1e6:.0f} µs + launches × "
             f"{FLOOR.per_launch_s * 1e6:.0f} µs), eager_host_floor.py's rule with SDPA's "
             "launches and constants. Bound: ±15 % at every point.", "",
             "| point | launches | measured | p20-p80 | floor | error | no floor | error |",
             "|---|---:|---:|---|---:|---:|---:|---:|"]
    for point, m, f, no, n in table:
        lo, hi = spread[point]
        lines.append(f"| {point} | {n} | {m * 1e3:.3f} ms | {lo * 1e3:.3f}-{hi * 1e3:.3f} | "
                     f"{f * 1e3:.3f} ms | {(f - m) / m:+.1%} | {no * 1e3:.3f} ms | "
                     f"{(no - m) / m:+.1%} |")
    a, b, n, med_f, med_no = summary(table)
    a2, b2, n2, _, _ = summary(table, F.LAUNCH_BOUND_S)
    mean_f = sum(_error(f, m) for _, m, f, _, _ in table) / max(1, n)
    mean_no = sum(_error(no, m) for _, m, _, no, _ in table) / max(1, n)
    verdict = "shipped" if a > b and med_f < med_no else "not shipped"
    lines += ["", f"Within ±15 %: {a} of {n} with the floor, {b} of {n} without; median "
              f"|error| {med_f:.1%} against {med_no:.1%}, mean {mean_f:.1%} against "
              f"{mean_no:.1%}. Measured above 0.2 ms only (the old cut): {a2} of {n2} against "
              f"{b2} of {n2}. By the criterion fixed before the run (more points within and a "
              f"lower median): {verdict}.", "",
              "### The fit and the sensitivity of the floor's constants", "",
              *fit_lines(hardware), "",
              "Seen: the SDPA times the constants were fitted on; fresh11: this record (shown, "
              "never fitted on). The last row is eager's floor.", "",
              *sensitivity_lines(record, hardware), ""]
    eager = F9.rows(record, hardware)
    if eager:
        judged = [t for t in eager if t[1] >= HF.JUDGED_ABOVE_S]
        lines += ["### bwd9's eager floor on this record (fresh for it too)", "",
                  "| point | launches | measured | floor | error | no floor | error |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {point} | {n} | {m * 1e3:.3f} ms | {f * 1e3:.3f} ms | {(f - m) / m:+.1%} "
                  f"| {no * 1e3:.3f} ms | {(no - m) / m:+.1%} |" for point, m, f, no, n in eager]
        lines += ["", f"Within ±20 % above 0.2 ms: "
                  f"{sum(_error(f, m) <= HF.BOUND for _, m, f, _, _ in judged)} of {len(judged)} "
                  f"with the floor, {sum(_error(no, m) <= HF.BOUND for _, m, _, no, _ in judged)}"
                  f" of {len(judged)} without.", ""]
    return "\n".join(lines)
