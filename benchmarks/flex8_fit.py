"""Fit FlexAttention's forward schedule on seen records and print it (no GPU needed).

    python benchmarks/flex8_fit.py [RECORD ...]

Defaults to the records of flex compiled alone and statically (the harness since round 6):
tests/data/h200-impl-flexrefit7.json, h200-impl-flexfresh7.json and h200-impl-validation5.json
(its flex points). The fit is iosim/calibrate/flex_fit.py; what it stands for is
iosim/analysis/impl_forward.py. Prints the `measured.impls.flex` figures it found, every
point's kernel and call error in-sample, and each constant's sensitivity (the median call
error with it moved ±10 %).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import median
from typing import Any

from iosim.calibrate.flex_fit import (
    fit_call,
    fit_schedule,
    kernel_points,
    predicted_call_s,
    probe_points,
    template_time,
    with_forward,
)
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

ROOT = Path(__file__).parents[1]
SEEN = ("tests/data/h200-impl-flexrefit7.json", "tests/data/h200-impl-flexfresh7.json",
        "tests/data/h200-impl-validation5.json", "tests/data/h200-flex8-probe.json")


def _flex_points(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's timed flex points (round 8's probe record read as such: probe_points)."""
    points = probe_points(record) if "mask" in record["points"][0] else record["points"]
    return [p for p in points if p.get("impl") == "flex" and "time_s" in p]


def main() -> None:
    fit_and_print(SEEN, "flex8_fit.py")


def fit_and_print(seen: tuple[str, ...], script: str, **fit_options: Any) -> None:
    """Fit the schedule (fit_schedule with `fit_options`) and the call terms on the records
    named on the command line (else `seen`), and print the figures, every point's in-sample
    errors and each constant's sensitivity; `script` names the command in the source line."""
    paths = [a for a in sys.argv[1:] if not a.startswith("--")] or list(seen)
    points = [p for path in paths for p in _flex_points(json.loads((ROOT / path).read_text()))]
    hardware = resolve_hardware("h200").hardware
    impl = get_implementation("flex")
    kernels = kernel_points(points, impl)
    forward = fit_schedule(kernels, hardware, impl, **fit_options)
    names = ", ".join(paths)
    source = (f"fitted by python benchmarks/{script} (calibrate/flex_fit.py) on the main "
              f"template's device times of {len(kernels)} flex points of {names} (torch "
              f"2.11.0+cu130, each shape compiled alone); causal_loops is the template's")
    scheduled = with_forward(hardware, impl, forward, source)
    call = fit_call(points, scheduled, impl)
    fitted = with_forward(hardware, impl, forward, source, **call)
    print("forward:", json.dumps(forward), "causal_loops: 2")
    print("call:", json.dumps({k: float(f"{v:.4g}") for k, v in call.items()}))
    print(f"{'#':>3} {'workload':<44} {'kernel':>9} {'pred':>9} {'err':>7} {'call':>9} "
          f"{'pred':>9} {'err':>7}")
    errors = []
    from iosim.analysis.compare import compare

    for i, p in enumerate(points):
        w = Workload(**p["workload"])
        est = compare(w, fitted, impl=impl, profile="measured").algorithms[-1]
        kernel = template_time(p)
        pk = sum(k.time_s for k in est.kernels)
        err = est.call_time_s / p["time_s"] - 1
        errors.append(abs(err))
        shape = (f"{w.batch}x{w.heads}/{w.kv_heads} {w.n}/{w.n_kv} d{w.d} {w.dtype}"
                 f"{' causal' if w.causal else ''}")
        kerr = f"{pk / kernel - 1:+.1%}" if kernel else "—"
        print(f"{i:>3} {shape:<44} {(kernel or 0) * 1e6:>8.1f}µ {pk * 1e6:>8.1f}µ {kerr:>7} "
              f"{p['time_s'] * 1e6:>8.1f}µ {est.call_time_s * 1e6:>8.1f}µ {err:>+7.1%}")
    print(f"call median |error| in-sample {median(errors):.1%} over {len(errors)} points")
    for name in [*forward, *call]:
        for f in (0.9, 1.1):
            moved_f = {**forward, **({name: forward[name] * f} if name in forward else {})}
            moved_c = {**call, **({name: call[name] * f} if name in call else {})}
            hw = with_forward(hardware, impl, moved_f, source, **moved_c)
            med = median(abs(predicted_call_s(Workload(**p["workload"]), hw, impl)
                             / p["time_s"] - 1) for p in points)
            print(f"sensitivity: {name} x{f:g}: median {med:.1%}")


if __name__ == "__main__":
    main()
