"""bwd4's rules judged on the third fresh H200 set (tests/data/backward-h200-fresh3.json): pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The record (`python3 benchmarks/backward_h200.py OUT --fresh3`, its grid `fresh3_grid` written
and committed before the run, the rules frozen at the tag `bwd4-frozen`) holds SDPA's and
eager's backward, Algorithm 4 in Triton and iosim's Triton backward, each timed and counted by
ncu per kernel. Gaps:

  s  small backwards (kernels of a few MB, N % 8 != 0 among them): the dirty-line ledger
     (dirty_ledger.py) against the handover to the next kernel alone
  a  FA2's causal backward at d = 64, N >= 50,000: the restarts' capacity share (bwd4's
     RESTART_CAPACITY_SHARE, now the soft cutoff of estimates/l2_cutoff.py)
  d  Algorithm 4: its time model (estimates/alg4_time.py) and the ledger's DIRTY_CAP
  t  the Triton backward at small N and below one wave: its refitted schedule (the
     launch-visible point left out, the overhead per inner loop)

Bounds, set before the run: DRAM ±10 % for every kernel of at least 1 MB and every whole
backward (a kernel under 1 MB: within 0.1 MB); time ±15 % (SDPA, the Triton backward,
Algorithm 4) and ±20 % (eager) at points above backward_fit.LAUNCH_BOUND_S. Nothing is fitted
here; every point's error is reported, inside the bounds or not, with the rule each replaces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from unittest.mock import patch

from iosim.calibrate import backward_fit as B
from iosim.calibrate import fresh_bwd as FB
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate import torch_bwd_fit as F
from iosim.calibrate.rules_patched import rules_patched
from iosim.inputs.hardware import Hardware

GAPS = {"s": "small backwards (SDPA and eager, N % 8 ≠ 0 among them)",
        "a": "FA2's causal backward at d = 64, N ≥ 50,000 (SDPA)",
        "d": "Algorithm 4 in Triton (flash1)",
        "t": "the Triton backward at small N, below one wave"}
SMALL = 1e6
"""Kernels under this many DRAM bytes are judged by their absolute error (SMALL_SLACK)."""
SMALL_SLACK = 0.1e6
OLD_TRITON = B.TimeModel(0.98, 14e-6)
"""The Triton backward's constants before bwd4 (overhead once per program)."""


@contextmanager
def _rules_before() -> Iterator[None]:
    """The DRAM rules before bwd4: the handover to the next kernel, the ideal-LRU restarts (and
    serial sweeps: the L2's cutoff a step at its size)."""
    from iosim.estimates import l2_cutoff

    with rules_patched(patch.object(B, "HANDOVER", "next"),
                       patch.object(l2_cutoff, "FILL_SHARE", 1.0),
                       patch.object(l2_cutoff, "FILL_WIDTH", 0.0)):
        yield


def triton_dram(record: dict[str, Any], hardware: Hardware) -> list[tuple[str, str, float, float]]:
    """(point, kernel, estimate, ncu) of every Triton backward kernel, launch order."""
    assert hardware.l2_bytes is not None
    out = []
    for p, segments in B._segments(record, isolate=False):
        est = B.estimate_per_kernel(B.workload_of(p), hardware)
        measured = D._launches(segments[0], "triton")
        for (name, moved), m in zip(B.handover(est, hardware.l2_bytes), measured, strict=True):
            out.append((p["id"], name, moved, m))
    return out


def _triton_time(p: dict[str, Any], hardware: Hardware, old: bool | str) -> float:
    """The Triton backward's time: as shipped (old False: the kernels' time or the launcher's
    floor), bwd6's (old "bwd6": the kernels' time alone) or before bwd4 (old True)."""
    if not old or old == "bwd6":
        tm = B.TimeModel(
            hardware.measured.backward_schedule.efficiency,  # type: ignore[union-attr]
            hardware.measured.backward_schedule.program_overhead_s)  # type: ignore[union-attr]
        return (B.predict_time if old else B.predict_launched_time)(p, hardware, tm)
    with patch.object(B, "CAUSAL_LOOPS", 1):
        return B.predict_time(p, hardware, OLD_TRITON)


def judged(record: dict[str, Any], hardware: Hardware, *,
           rules_before: Callable[[], AbstractContextManager[None]] | None = None,
           old_triton: bool | str = True, host_floor: bool = False) -> list[FB.Judged]:
    """Every kernel's DRAM, every whole backward's, every time, with the `rules_before` (bwd4's
    predecessors by default; `old_triton`: the Triton backward's time before bwd4 too;
    `host_floor`: SDPA's and eager's times with their host floors, as shipped since bwd9/bwd12,
    where the earlier sets were judged without, as frozen then)."""
    gap = {p["id"]: p.get("gap", "") for p in record["points"]}
    with (rules_before or _rules_before)():
        before = D.dram_comparison([record], hardware)
        before_f1 = [r for r in FB.flash1_rows(record, hardware) if r.quantity != "time"]
        before_tri = triton_dram(record, hardware)
    kernels = D.dram_comparison([record], hardware)
    rows: list[FB.Judged] = []
    for r, b in zip(kernels, before, strict=True):
        rows.append(FB.Judged(gap[r.point], r.point, r.what, f"DRAM {r.kernel}", r.estimate,
                              r.measured, b.estimate))
    totals, totals_before = F.per_backward(kernels), F.per_backward(before)
    for (run, point), error in totals.items():
        measured = sum(r.measured for r in kernels if r.run == run)
        what = next(r.what for r in kernels if r.run == run)
        rows.append(FB.Judged(gap[point], point, what, "DRAM whole backward",
                              measured * (1 + error), measured,
                              measured * (1 + totals_before[(run, point)])))
    f1 = FB.flash1_rows(record, hardware)
    f1_dram = [r for r in f1 if r.quantity != "time"]
    for j, k in zip(f1_dram, before_f1, strict=True):
        rows.append(FB.Judged("d", j.point, "flash1", j.quantity, j.estimate, j.measured,
                              k.estimate))
    rows += [r for r in f1 if r.quantity == "time"]  # `without`: flash1's roofline ÷ utilisation
    for (point, name, est, m), (_, _, old, _) in zip(triton_dram(record, hardware), before_tri,
                                                     strict=True):
        rows.append(FB.Judged("t", point, "triton", f"DRAM {name}", est, m, old))
    for what, tm in (("sdpa", F.SDPA_TIME), ("eager", F.EAGER_TIME)):
        for p in record["points"]:
            if f"{what}_s" in p and p.get("gap") in ("s", "a"):
                t = F.predict_time(p, what, hardware, tm, host_floor=host_floor)
                rows.append(FB.Judged(p["gap"], p["id"], what, "time", t, p[f"{what}_s"]))
    for p in record["points"]:
        if "triton_s" in p:
            rows.append(FB.Judged("t", p["id"], "triton", "time", _triton_time(p, hardware, False),
                                  p["triton_s"], _triton_time(p, hardware, old_triton)))
    return rows


def inside(r: FB.Judged) -> bool | None:
    """Whether a row is within its bound (None: not judged, below the launch bound)."""
    if r.quantity.startswith("DRAM"):
        if r.measured < SMALL and "whole" not in r.quantity:
            return abs(r.estimate - r.measured) <= SMALL_SLACK
        return abs(r.error) <= 0.10
    if r.measured < B.LAUNCH_BOUND_S:
        return None
    return abs(r.error) <= (0.20 if r.what == "eager" else 0.15)


def inside_before(r: FB.Judged) -> bool:
    """Whether the estimate the earlier rules gave (the row's `without`) is within the row's
    bound; False where there is none."""
    return r.without is not None and bool(inside(FB.Judged(r.gap, r.point, r.what, r.quantity,
                                                           r.without, r.measured)))


def count_inside(rows: list[FB.Judged], gap: str, dram: bool,
                 before: bool = False) -> tuple[int, int]:
    """(within its bound, judged) over a gap's DRAM rows or time rows; `before`: judged with the
    estimate the earlier rules gave (each row's `without`), where there is one."""
    judged = [r for r in rows if r.gap == gap and r.quantity.startswith("DRAM") == dram
              and inside(r) is not None]
    if before:
        judged = [r for r in judged if r.without is not None]
        return sum(map(inside_before, judged)), len(judged)
    return sum(bool(inside(r)) for r in judged), len(judged)


def _count(rows: list[FB.Judged], gap: str, dram: bool) -> str:
    sel = [r for r in rows if r.gap == gap and r.quantity.startswith("DRAM") == dram
           and inside(r) is not None]
    return f"{sum(bool(inside(r)) for r in sel)} / {len(sel)}"


def sensitivity(record: dict[str, Any], hardware: Hardware) -> list[str]:
    """Rows within their bound on this set as each fitted constant moves (bwd4's, and bwd5's
    cutoff, which replaced bwd4's RESTART_CAPACITY_SHARE)."""
    from iosim.calibrate import dirty_ledger as L
    from iosim.estimates import alg4_time as A
    from iosim.estimates import l2_cutoff as R

    lines = ["| constant | value | s: DRAM | a: DRAM | d: DRAM | d: time |",
             "|---|---:|---:|---:|---:|---:|"]
    cases: list[tuple[str, str, Any, Any, Any]] = []
    for cap in (0.40, L.DIRTY_CAP, 0.55):
        cases.append(("DIRTY_CAP", f"{cap:g}", L, "DIRTY_CAP", cap))
    for share in (R.FILL_SHARE - 0.05, R.FILL_SHARE, R.FILL_SHARE + 0.05):
        cases.append(("FILL_SHARE", f"{share:g}", R, "FILL_SHARE", share))
    for width in (R.FILL_WIDTH * 0.5, R.FILL_WIDTH * 1.5):
        cases.append(("FILL_WIDTH", f"{width:g}", R, "FILL_WIDTH", width))
    t = FB.measured_alg4(hardware)
    for name, field, factor in (("solo rate", "solo_flops_per_s", 0.8),
                                ("solo rate", "solo_flops_per_s", 1.2),
                                ("program bandwidth", "program_bytes_per_s", 0.8),
                                ("program bandwidth", "program_bytes_per_s", 1.2),
                                ("shared-SM slowdown", "shared_sm_slowdown", 0.5),
                                ("shared-SM slowdown", "shared_sm_slowdown", 1.5)):
        moved = A.Alg4Time(**{**{k: getattr(t, k) for k in ("solo_flops_per_s",
                                                            "program_bytes_per_s",
                                                            "shared_sm_slowdown")},
                              field: getattr(t, field) * factor})
        cases.append((f"alg4_time {name}", f"×{factor:g}", FB, "alg4_time_s",
                      _alg4_with(moved)))
    for label, value, module, attr, new in cases:
        D.forget_models()
        B._ESTIMATES.clear()
        FB._FLASH1.clear()
        with patch.object(module, attr, new):
            rows = judged(record, hardware)
        lines.append(f"| {label} | {value} | {_count(rows, 's', True)} | {_count(rows, 'a', True)} "
                     f"| {_count(rows, 'd', True)} | {_count(rows, 'd', False)} |")
    D.forget_models()
    B._ESTIMATES.clear()
    FB._FLASH1.clear()
    return lines


def _alg4_with(constants: Any) -> Any:
    original = FB.alg4_time_s

    def timed(p: dict[str, Any], hardware: Hardware, _: Any = None) -> float:
        return original(p, hardware, constants)
    return timed


BWD4_BEFORE = ("the rule bwd4 replaced: the handover of one kernel's dirty lines to the next and "
               "the ideal-LRU restarts (DRAM), flash1's roofline ÷ utilisation (Algorithm 4's "
               "time), efficiency 0.98 and 14 µs per program (the Triton backward's time)")


def report(record: dict[str, Any], hardware: Hardware, *, with_sensitivity: bool = True,
           title: str = "bwd4's rules on a third fresh set (backward-h200-fresh3.json)",
           grid: str = "fresh3_grid", tag: str = "bwd4-frozen",
           rules_before: Callable[[], AbstractContextManager[None]] | None = None,
           old_triton: bool | str = True, before_text: str = BWD4_BEFORE,
           host_floor: bool = False) -> str:
    """The Markdown section of reports/backward-h200.md on the third fresh record (the
    constants' sensitivity re-judges the set 17 times: a few seconds), or on the fourth (the
    Triton backward alone: `title`, `grid`, no sensitivity), or on the fifth (bwd5's rules,
    frozen at `tag`, against `rules_before`, described by `before_text`: fresh5_bwd.py)."""
    rows = judged(record, hardware, rules_before=rules_before, old_triton=old_triton,
                  host_floor=host_floor)
    lines = [f"## {title}", "",
             f"Record: `{record.get('command', '')}` ({record.get('device')}, torch "
             f"{record.get('torch')}, Triton {record.get('triton')}). The points "
             f"(`{grid}`) were committed before the run and the rules frozen (tag "
             f"`{tag}`); nothing is fitted on them. Bounds: DRAM ±10 % for kernels of ≥ 1 MB "
             "and whole backwards (under 1 MB: within 0.1 MB), time ±15 % (SDPA, Triton, "
             f"Algorithm 4) and ±20 % (eager) above {B.LAUNCH_BOUND_S * 1e3:.1f} ms. 'Before' is "
             f"{before_text}.", ""]
    for failure in record.get("flash1_check_failed", []):
        lines.append(f"- Not timed or counted (failed its check): {failure}")
    for gap, title in GAPS.items():
        mine = [r for r in rows if r.gap == gap]
        if not mine:
            continue
        summary = []
        for label, pick in (("DRAM", lambda r: r.quantity.startswith("DRAM")),
                            ("time", lambda r: r.quantity == "time")):
            judged_rows = [r for r in mine if pick(r) and inside(r) is not None]
            if judged_rows:
                ok = sum(bool(inside(r)) for r in judged_rows)
                old = sum(map(inside_before, judged_rows))
                with_old = sum(r.without is not None for r in judged_rows)
                summary.append(f"{label} {ok} of {len(judged_rows)} within the bound"
                               + (f" (before: {old} of {with_old})" if with_old else ""))
        lines += ["", f"### {gap}: {title}", "", "- " + "; ".join(summary) + ".", "",
                  "| point | impl | quantity | estimate | measured | error | before | bound |",
                  "|---|---|---|---:|---:|---:|---:|---|"]
        for r in mine:
            unit, scale = ("ms", 1e3) if r.quantity == "time" else ("MB", 1e-6)
            before = "" if r.without is None else f"{(r.without - r.measured) / r.measured:+.1%}"
            verdict = {True: "in", False: "OUT", None: "launch-bound"}[inside(r)]
            lines.append(f"| {r.point} | {r.what} | {r.quantity} | {r.estimate * scale:.3f} "
                         f"{unit} | {r.measured * scale:.3f} {unit} | {r.error:+.1%} | {before} "
                         f"| {verdict} |")
    if with_sensitivity:
        lines += ["", "### Sensitivity of the fitted constants on this set", "",
                  *sensitivity(record, hardware)]
    return "\n".join(lines) + "\n"
