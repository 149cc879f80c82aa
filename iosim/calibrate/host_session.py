"""bwd15: the backward's host floor is the session's, not the shape's: pure, no GPU.

    python -m iosim.calibrate.host_session          # the seen section of reports/backward-h200.md

The one-head eager misses of fresh14 (+36 to +92 %: 0.24-0.27 ms measured, 0.40-0.46 ms by the
floor) are host-bound calls. Read per record (one record = one device session) on every seen
backward time, a host-bound call's time over its floor (`ratios`) is a property of the session:
0.5-0.65 in the calibration records and fresh14, 1.0-1.3 in fresh8-12, one-head calls and
multi-head ones of one session alike (fresh10, fresh12: bh 1 at 60-63 µs a node beside bh 2-16
at 46-70). Nothing at batch·heads 1 changes the host's work but cuBLAS's three split-K reduces,
launched inside the GEMM's own call (no autograd node): fresh14's one-head calls are no slower
per node than the fast sessions' multi-head ones (30-38 µs against 27-35).

So no constant of the shape can hold every session: the floor's constants (fitted on the
sessions' mix, estimates/backward_host_floor.py) stay, and a session's host speed is a
measured input beside them (backward_host_floor.HOST_SPEED), read off a probe: a call that is
host-bound by construction (`PROBE`: N 256, its kernels a few µs each), timed in the same
session (benchmarks/backward_h200.py --fresh15 times it before and after the grid).

This module judges that on the seen records, where no probe was timed: each host-bound
call's speed is estimated from the *other* host-bound calls of its record (leave one out,
the probe's stand-in) against the shipped constant speed (1), and the constants' fit is
re-run leaving each session out (`loso`), the cross-session error of the floor as shipped.

The one-head calls' kernels are over-predicted too, most at the causal mask pass: at
batch·heads 1 masked_fill's backward is vectorised (no broadcast), 3× faster than the strided
kernel MASK_EFFICIENCY was fitted on (`mask_rows`; the rule is eager_backward.py's
MASK_VECTORISED_AT_ONE_HEAD).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median
from typing import Any, NamedTuple
from unittest.mock import patch

from iosim.calibrate import eager_host_floor as HF
from iosim.calibrate import fresh9_bwd as F9
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate import torch_bwd_fit as F
from iosim.estimates import backward_host_floor as BF
from iosim.estimates import eager_backward as EB
from iosim.inputs.hardware import Hardware

FRESH14 = D.DATA / "backward-h200-fresh14.json"
SEEN = (*D.RECORDS, D.FRESH, D.FRESH2, D.FRESH3, D.FRESH5, D.FRESH6, D.FRESH7, D.FRESH8,
        D.FRESH9, D.FRESH10, D.FRESH11, D.FRESH12, FRESH14)
"""Every backward record with eager or SDPA times seen before bwd15's freeze (fresh4: Triton
only)."""
HOST_BOUND = 0.75
"""A call is host-bound when its kernels (ncu's per-kernel times summed, else the model's)
take less than this share of its measured time: the floor, not the GPU, set it."""
PROBE = {"n": 256, "d": 64, "batch": 1, "heads": 2, "kv_heads": 2, "causal": False,
         "dtype": "fp16", "n_kv": None}
"""The host probe: its 7 eager kernels (5 SDPA) take a few µs each (N × N 65,536 elements),
so its time is the host's; two heads keep cuBLAS off split-K (bwd14), so the launch counts
are the floors' own (7 and 5)."""
IMPL = {"eager": "torch-naive", "sdpa": "sdpa-flash"}
"""The record's name of an implementation → its profile's (HOST_FLOORS' key)."""


class Call(NamedTuple):
    """One timed backward call of a record."""

    record: str
    point: str
    kernels_s: float
    """The model's kernels' time (no floor)."""
    device_s: float
    """ncu's kernels summed where counted, else kernels_s."""
    floor_s: float
    """The shipped floor at speed 1."""
    measured_s: float
    launches: int
    """The floor's launches (eager_backward.launches of the model's kernels)."""


def calls(paths: tuple[Path, ...], hardware: Hardware, what: str) -> list[Call]:
    """Every `what` ("eager" or "sdpa") backward time of the records."""
    return [c for path in paths if path.exists()
            for c in record_calls(D.load([path])[0], path.name, hardware, what)]


def record_calls(record: dict[str, Any], name: str, hardware: Hardware, what: str) -> list[Call]:
    """Every `what` backward time of one record (named `name`)."""
    ncu = {i["id"]: sum(k["time_s"] for k in i["segments"][0]["kernels"])
           for i in record.get("counters", {}).get("items", [])
           if i.get("what") == what and i.get("segments")}
    out = []
    for p in record["points"]:
        if f"{what}_s" not in p:
            continue
        kernels = F.predict_time(p, what, hardware, F9.TIME_MODELS[what], host_floor=False)
        names = [k.name for k in D.launched(*_modelled(p, what, hardware))]
        floor = BF.backward_host_floor(IMPL[what], names)[0]
        out.append(Call(name, p["id"], kernels, ncu.get(p["id"], kernels), floor,
                        p[f"{what}_s"], F9.launches(p, hardware, what)))
    return out


def _modelled(p: dict[str, Any], what: str, hardware: Hardware) -> tuple[Any, str, Any]:
    from iosim.calibrate.backward_fit import workload_of

    w = workload_of(p)
    return w, what, D.model(w, what, hardware)


def host_bound(c: Call) -> bool:
    """The call's kernels take less than HOST_BOUND of its time."""
    return c.device_s < HOST_BOUND * c.measured_s


def ratios(cs: list[Call]) -> dict[str, list[float]]:
    """Per record, measured over floor of its host-bound calls (the session's host speed)."""
    out: dict[str, list[float]] = {}
    for c in cs:
        if host_bound(c):
            out.setdefault(c.record, []).append(c.measured_s / c.floor_s)
    return out


def predicted(c: Call, speed: float) -> float:
    """The call's time at host speed `speed`: max(kernels (their per-call time in), speed ×
    floor)."""
    return max(c.kernels_s, speed * c.floor_s)


def left_out_speed(c: Call, cs: list[Call]) -> float:
    """The median speed of the other host-bound calls of c's record (1 where none): the
    probe's stand-in on the seen records."""
    others = [o.measured_s / o.floor_s for o in cs
              if o.record == c.record and o.point != c.point and host_bound(o)]
    return median(others) if others else 1.0


def within(cs: list[Call], speeds: list[float], bound: float, above_s: float
           ) -> tuple[int, int]:
    """(calls within ±bound, calls judged: measured ≥ above_s)."""
    judged = [(c, s) for c, s in zip(cs, speeds, strict=True) if c.measured_s >= above_s]
    inside = sum(abs(predicted(c, s) / c.measured_s - 1) <= bound for c, s in judged)
    return inside, len(judged)


def loso(cs: list[Call], floor: HF.HostFloor) -> tuple[int, int]:
    """The floor's constants refitted (fit_host_floor) leaving each record out, that record
    judged: (within, judged) summed over records."""
    inside = judged = 0
    for record in sorted({c.record for c in cs}):
        train = [(c.kernels_s, c.launches, c.measured_s) for c in cs if c.record != record]
        test = [(c.kernels_s, c.launches, c.measured_s) for c in cs if c.record == record]
        fit = HF.fit_host_floor(train, bound=floor.bound, judged_above_s=floor.judged_above_s)
        a, n = HF.within(test, *fit, bound=floor.bound, judged_above_s=floor.judged_above_s)
        inside, judged = inside + a, judged + n
    return inside, judged


@contextmanager
def host_speed(speeds: dict[str, float]) -> Iterator[None]:
    """The floors at these session host speeds (profile name → speed)."""
    with patch.dict(BF.HOST_SPEED, speeds):
        yield


def probe_speed(record: dict[str, Any], what: str, hardware: Hardware) -> float:
    """A record's host speed for `what`: its probe calls' median time over the probe's floor
    (the record's `host_probe`: benchmarks/backward_h200.py --fresh15)."""
    times = [p[f"{what}_s"] for p in record["host_probe"]]
    names = [k.name for k in D.launched(*_modelled(PROBE, what, hardware))]
    return float(median(times)) / BF.backward_host_floor(IMPL[what], names)[0]


PROBED = ("eager",)
"""The implementations whose floor the probe's speed is trusted for: judged on fresh15
(fresh15_bwd.py) eager's calls within ±20 % went 6 → 12 of 15 with it; SDPA's within ±15 % 13 →
11 of 15 (its host-bound calls ran at 0.81-1.11 of its floor while its probe read 0.75), so
SDPA's floor stays at speed 1."""


BOUNDS = {"eager": (HF.BOUND, HF.JUDGED_ABOVE_S), "sdpa": (HF.SDPA_BOUND, 0.0)}
"""Per implementation: its time bound and the measured time it is judged from."""


def seen_section(hardware: Hardware) -> str:
    """The report's seen section: the sessions' speeds, leave-one-out against the constant."""
    lines = ["## bwd15: the backward's host floor is the session's (seen records)", "",
             f"Host-bound: ncu's kernels (else the model's) under {HOST_BOUND:g} of the "
             "measured time. Per record (one device session) the host-bound calls' measured "
             "time over the shipped floor:", "",
             "| record | eager: calls, median (range) | SDPA: calls, median (range) |",
             "|---|---|---|"]
    every = {what: calls(SEEN, hardware, what) for what in ("eager", "sdpa")}
    r = {what: ratios(cs) for what, cs in every.items()}
    for path in SEEN:
        cells = []
        for what in ("eager", "sdpa"):
            v = r[what].get(path.name, [])
            cells.append(f"{len(v)}, {median(v):.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-")
        lines.append(f"| {path.name} | {cells[0]} | {cells[1]} |")
    lines += ["", "| impl | bound | floor at speed 1 (shipped) | speed from the record's other "
              "host-bound calls | constants refitted leaving each record out |",
              "|---|---|---:|---:|---:|"]
    for what, cs in every.items():
        bound, above = BOUNDS[what]
        ones = within(cs, [1.0] * len(cs), bound, above)
        left = within(cs, [left_out_speed(c, cs) for c in cs], bound, above)
        out = loso(cs, HF.FLOORS[what])
        lines.append(f"| {what} | ±{bound:.0%} | {ones[0]} of {ones[1]} | {left[0]} of "
                     f"{left[1]} | {out[0]} of {out[1]} |")
    lines += ["", "### The one-head mask pass (eager_backward.MASK_VECTORISED_AT_ONE_HEAD)", "",
              "| record | point | ncu | model, vectorised at one head | model, "
              "MASK_EFFICIENCY |", "|---|---|---:|---:|---:|"]
    for name, point, ncu, on, off in mask_rows(SEEN, hardware):
        lines.append(f"| {name} | {point} | {ncu * 1e6:.1f} µs | {on * 1e6:.1f} µs "
                     f"({on / ncu - 1:+.0%}) | {off * 1e6:.1f} µs ({off / ncu - 1:+.0%}) |")
    with mask_rule(False):
        without = calls(SEEN, hardware, "eager")
    bound, above = BOUNDS["eager"]
    on_in = within(every["eager"], [1.0] * len(without), bound, above)
    off_in = within(without, [1.0] * len(without), bound, above)
    lines += ["", f"Whole eager calls (speed 1): {on_in[0]} of {on_in[1]} within ±{bound:.0%} "
              f"with the rule, {off_in[0]} of {off_in[1]} without."]
    return "\n".join(lines) + "\n"


@contextmanager
def mask_rule(on: bool) -> Iterator[None]:
    """bwd15's one-head mask rule (eager_backward.MASK_VECTORISED_AT_ONE_HEAD) on or off."""
    with patch.object(EB, "MASK_VECTORISED_AT_ONE_HEAD", on):
        yield


def mask_rows(paths: tuple[Path, ...], hardware: Hardware
              ) -> list[tuple[str, str, float, float, float]]:
    """(record, point, ncu's seconds, the model's with the one-head rule, without) of the mask
    pass of every one-head causal eager ncu run of the records."""
    return [row for path in paths if path.exists()
            for row in mask_rows_of(D.load([path])[0], path.name, hardware)]


def mask_rows_of(record: dict[str, Any], name: str, hardware: Hardware
                 ) -> list[tuple[str, str, float, float, float]]:
    """mask_rows of one record (named `name`)."""
    from iosim.calibrate.backward_fit import workload_of

    fit = F9.TIME_MODELS["eager"]
    out = []
    points = {p["id"]: p for p in record["points"]}
    for item in record.get("counters", {}).get("items", []):
        p = points.get(item["id"])
        if item.get("what") != "eager" or p is None or not p["causal"] \
                or p["batch"] * p["heads"] != 1 or not item.get("segments"):
            continue
        ncu = [k for k in item["segments"][0]["kernels"]
               if "splitKreduce" not in k["kernel"]]
        w = workload_of(p)
        a = D.model(w, "eager", hardware)
        kernels = D.launched(w, "eager", a)
        at = [k.name for k in kernels].index("bwd_mask")
        assert a.dram is not None  # the eager model always counts its DRAM
        bandwidth, peak, vector = F._roofs(hardware, p["dtype"])
        est = a.kernels[at]
        times = []
        for on in (True, False):
            with mask_rule(on):
                times.append(EB.kernel_time_s(
                    "bwd_mask", kernels[at].kind, a.dram.of_kernel("bwd_mask").bytes,
                    est.matmul_flops, est.elementwise_flops, w, bandwidth=bandwidth,
                    matmul_peak=peak, vector_rate=vector,
                    fit={"efficiency": fit.efficiency, "memory": fit.memory_efficiency,
                         "program_overhead_s": fit.overhead_s}))
        out.append((name, p["id"], ncu[at]["time_s"], times[0], times[1]))
    return out


def main(argv: list[str]) -> int:
    """`python -m iosim.calibrate.host_session`: the seen section."""
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    print(seen_section(load_hardware(config_dir() / "h200.yaml")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
