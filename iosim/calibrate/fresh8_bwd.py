"""bwd8's rule, frozen at `bwd8-frozen`, judged on the eighth fresh H200 set: pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The record (`python3 benchmarks/backward_h200.py OUT --fresh8`, its grid `fresh8_grid`
committed before the run) holds SDPA's and eager's backward at 14 points, each timed and
counted by ncu per kernel, and two segments with no kernel (the ncu protocol's residue). bwd8's
rule over bwd7's: eager's mask and scale backward passes run out of place (autograd's
grad.masked_fill(mask, 0) and grad * scale write new N×N tensors; configs/impls/torch-naive.yaml
`out_of_place`). 'Before' is the same model with those passes in place. Nothing is fitted; the
bounds are fresh3_bwd.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from iosim.analysis import impl_kernels as IK
from iosim.calibrate import backward_fit as B
from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import fresh7_bwd as F7
from iosim.calibrate import torch_bwd_fit as F
from iosim.calibrate.rules_patched import forget_estimates, rules_patched
from iosim.inputs.hardware import Hardware

BEFORE_TEXT = ("bwd7's rules as frozen at `bwd7-frozen`: eager's mask and scale backward passes "
               "in place (read dS, write dS)")


@contextmanager
def rules_in_place() -> Iterator[None]:
    """The model as frozen at bwd7-frozen: the out-of-place rule off, caches cleared around."""
    with rules_patched(patch.object(IK, "_out_of_place", lambda kernels, cite: kernels)):
        yield


def eager_times(record: dict[str, Any], hardware: Hardware) -> list[tuple[str, float, float,
                                                                          float]]:
    """(point, measured, estimate out of place, estimate in place) of eager's backward."""
    points = [p for p in record["points"] if "eager_s" in p]
    with rules_in_place():
        before = [F.predict_time(p, "eager", hardware, F.EAGER_TIME, host_floor=False)
                  for p in points]
    forget_estimates()
    return [(p["id"], p["eager_s"],
             F.predict_time(p, "eager", hardware, F.EAGER_TIME, host_floor=False), b)
            for p, b in zip(points, before, strict=True)]


def summary_lines(record: dict[str, Any], hardware: Hardware) -> list[str]:
    """In place against out of place: every eager kernel's DRAM, by kernel, and eager's time."""
    rows = [r for r in F3.judged(record, hardware, rules_before=rules_in_place)
            if r.quantity.startswith("DRAM") and F3.inside(r) is not None]
    lines = ["", "### In place against out of place, by kernel", "",
             "| impl | kernel | rows | within (out of place) | within (in place) | median |error| "
             "out / in |", "|---|---|---:|---:|---:|---|"]
    keys = sorted({(r.what, r.quantity) for r in rows}, key=lambda k: (k[0] != "eager", k))
    for what, quantity in keys:
        mine = [r for r in rows if (r.what, r.quantity) == (what, quantity)]
        out = sorted(abs(r.error) for r in mine)
        old = sorted(abs((r.without or 0.0) - r.measured) / r.measured for r in mine)
        lines.append(f"| {what} | {quantity.removeprefix('DRAM ')} | {len(mine)} | "
                     f"{sum(bool(F3.inside(r)) for r in mine)} | "
                     f"{sum(F3.inside_before(r) for r in mine)} | "
                     f"{out[len(out) // 2]:.1%} / {old[len(old) // 2]:.1%} |")
    ok = sum(bool(F3.inside(r)) for r in rows)
    before = sum(F3.inside_before(r) for r in rows)
    lines += ["", f"All DRAM rows (kernels and whole backwards, SDPA's and eager's): {ok} of "
              f"{len(rows)} within the bound out of place, {before} of {len(rows)} in place.", "",
              "### Eager's backward time, out of place and in place", "",
              "| point | measured | out of place | error | in place | error |",
              "|---|---:|---:|---:|---:|---:|"]
    times = eager_times(record, hardware)
    for point, m, est, was in times:
        lines.append(f"| {point} | {m * 1e3:.3f} ms | {est * 1e3:.3f} ms | {(est - m) / m:+.1%} "
                     f"| {was * 1e3:.3f} ms | {(was - m) / m:+.1%} |")
    judged = [t for t in times if t[1] >= B.LAUNCH_BOUND_S]
    lines += ["", f"Within ±20 % above {B.LAUNCH_BOUND_S * 1e3:.1f} ms: "
              f"{sum(abs(e - m) / m <= 0.2 for _, m, e, _ in judged)} of {len(judged)} out of "
              f"place, {sum(abs(o - m) / m <= 0.2 for _, m, _, o in judged)} of {len(judged)} "
              "in place."]
    return lines


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the eighth fresh record."""
    text = F3.report(record, hardware, with_sensitivity=False,
                     title="bwd8's out-of-place rule frozen, on an eighth fresh set "
                           "(backward-h200-fresh8.json)", grid="fresh8_grid", tag="bwd8-frozen",
                     rules_before=rules_in_place, before_text=BEFORE_TEXT)
    extra = summary_lines(record, hardware) + F7.protocol_lines(record)
    return text + "\n".join(extra) + "\n"
