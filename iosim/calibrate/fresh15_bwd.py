"""bwd15's session host speed and one-head mask rule, frozen at `bwd15-frozen`, judged on the
fifteenth fresh H200 set: pure.

    python -m iosim.calibrate.fresh15_bwd            # the fresh section (the record in)

The rule (calibrate/host_session.py): the backward's host floor (estimates/backward_host_floor.py)
times the session's host speed, read off the host probe the record timed before and after its
grid (`host_session.probe_speed`: the probe's median time over its floor, per implementation);
and eager's causal mask pass at one head at the memory efficiency (its kernel is vectorised
there: eager_backward.MASK_VECTORISED_AT_ONE_HEAD). 'Before' is main's model (speed 1, the
mask at MASK_EFFICIENCY everywhere); 'after' both rules; each alone is shown too. Nothing is fitted
on the fresh points: the probe is a measurement of the session, like the bandwidth, not a
judged point. Bounds are fresh3_bwd.py's: eager ±20 % judged from 0.2 ms, SDPA ±15 % at every
point (bwd12). Decided before the run: the speed ships for an implementation if it puts more
of that implementation's fresh points within the bound than speed 1 does and its median
|error| is no higher; otherwise it stays opt-in (HOST_SPEED empty as shipped). The mask rule
ships if the fresh one-head causal mask passes (ncu) are nearer with it and the whole eager
calls within the bound are no fewer; otherwise it is turned off.
"""

from __future__ import annotations

import sys
from statistics import median
from typing import Any

from iosim.calibrate import host_session as HS
from iosim.calibrate import torch_bwd_dram as D
from iosim.inputs.hardware import Hardware

FRESH15 = D.DATA / "backward-h200-fresh15.json"


def speeds(record: dict[str, Any], hardware: Hardware) -> dict[str, float]:
    """Profile name → the record's probe speed."""
    return {HS.IMPL[what]: HS.probe_speed(record, what, hardware) for what in HS.IMPL}


def judged(record: dict[str, Any], hardware: Hardware, what: str, *, speed: bool = True,
           mask: bool = True) -> list[tuple[HS.Call, float, float]]:
    """(call, before, after) seconds of every `what` time in the record: before main's model,
    after with the rules asked for (the session speed, the one-head mask)."""
    factor = speeds(record, hardware)[HS.IMPL[what]] if speed else 1.0
    with HS.mask_rule(False):
        before = HS.record_calls(record, FRESH15.name, hardware, what)
    with HS.mask_rule(mask):
        after = HS.record_calls(record, FRESH15.name, hardware, what)
    return [(a, HS.predicted(b, 1.0), HS.predicted(a, factor))
            for b, a in zip(before, after, strict=True)]


def summary(rows: list[tuple[HS.Call, float, float]], what: str, after: bool) -> str:
    """'k of n within, median |error| m, worst w' of before or after."""
    bound, above = HS.BOUNDS[what]
    errs = [(a if after else b) / c.measured_s - 1 for c, b, a in rows if c.measured_s >= above]
    if not errs:
        return "none judged"
    inside = sum(abs(e) <= bound for e in errs)
    worst = max(errs, key=abs)
    return (f"{inside} of {len(errs)} within ±{bound:.0%}, median |error| "
            f"{median(abs(e) for e in errs):.1%}, worst {worst:+.1%}")


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the fifteenth fresh record."""
    s = speeds(record, hardware)
    probe = record["host_probe"]
    lines = ["## bwd15's session host speed frozen, on a fifteenth fresh set "
             "(backward-h200-fresh15.json)", "",
             "Frozen at `bwd15-frozen`. Host probe (N 256, d 64, two heads, fp16), timed "
             "before and after the grid: eager " + ", ".join(f"{p['eager_s'] * 1e3:.3f}"
                                                             for p in probe)
             + " ms, SDPA " + ", ".join(f"{p['sdpa_s'] * 1e3:.3f}" for p in probe)
             + f" ms: speed eager {s['torch-naive']:.2f}, SDPA {s['sdpa-flash']:.2f} of the "
             "shipped floors. 'before': main's model (speed 1); 'after': the floors at the "
             "probe's speed. Host-bound: ncu's kernels under "
             f"{HS.HOST_BOUND:g} of the measured time.", ""]
    for what in ("eager", "sdpa"):
        rows = judged(record, hardware, what)
        one = [r for r in rows if "/b1h1kv1/" in r[0].point]
        lines += [f"### {what}", "",
                  "| point | measured | ncu kernels | before | error | after | error | "
                  "host-bound |", "|---|---:|---:|---:|---:|---:|---:|---|"]
        for c, b, a in rows:
            lines.append(f"| {c.point} | {c.measured_s * 1e3:.3f} ms | {c.device_s * 1e3:.3f} "
                         f"ms | {b * 1e3:.3f} ms | {b / c.measured_s - 1:+.1%} | "
                         f"{a * 1e3:.3f} ms | {a / c.measured_s - 1:+.1%} | "
                         f"{'yes' if HS.host_bound(c) else 'no'} |")
        lines += ["", f"- before: {summary(rows, what, False)}", f"- after: {summary(rows, what, True)}",
                  f"- one head, batch 1: before {summary(one, what, False)}; after "
                  f"{summary(one, what, True)}"]
        if what == "eager":
            lines += [f"- the session speed alone: "
                      f"{summary(judged(record, hardware, what, mask=False), what, True)}",
                      f"- the one-head mask alone: "
                      f"{summary(judged(record, hardware, what, speed=False), what, True)}"]
        lines.append("")
    lines += ["### The one-head mask passes (ncu)", "",
              "| point | ncu | model, vectorised at one head | model, MASK_EFFICIENCY |",
              "|---|---:|---:|---:|"]
    for _, point, ncu, on, off in HS.mask_rows_of(record, FRESH15.name, hardware):
        lines.append(f"| {point} | {ncu * 1e6:.1f} µs | {on * 1e6:.1f} µs ({on / ncu - 1:+.0%}) "
                     f"| {off * 1e6:.1f} µs ({off / ncu - 1:+.0%}) |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """`python -m iosim.calibrate.fresh15_bwd`: the fresh section."""
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    hw = load_hardware(config_dir() / "h200.yaml")
    print(report(D.load([FRESH15])[0], hw))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
