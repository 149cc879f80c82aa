"""Fit FlexAttention's decoding-template model (analysis/impl_decoding.py, round 10) on every
SEEN decode step that ran the decoding template, and print it (no GPU needed).

    python benchmarks/flex10_fit.py [--loo]

A seen decode step counts where torch ran the decoding template (impl_forward.py:
runs_decoding_kernel, not causal) AND its kernel list shows the template's combine after it
(a `flex_attention` kernel that is not the `_tem_` template): the records of an older harness
whose process recompiled with dynamic shapes (h200-impl-flex5.json #6, validation.json #28,
validation2.json #29) ran the main template instead (no combine; 3x slower per key), so they
are not this template's times. Step 1 fits the template's four figures on the template
kernel's device time (torch.profiler), by coordinate descent over GRIDS for the least summed
|log error|; step 2 the combine's two on the combine kernels' summed time (least squares in
log). Prints every point's error and each figure's sensitivity (the median |error| with it
moved ±10 %); with `--loo`, each point's template error with the four template figures
refitted on the other six (leave one out).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from iosim.analysis.impl_decoding import (
    decoding_combine_s,
    decoding_template_s,
    split_kv,
    walking_programs,
)
from iosim.analysis.impl_forward import runs_decoding_kernel
from iosim.calibrate.flex_fit import template_time
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

ROOT = Path(__file__).parents[1]
SEEN = ("tests/data/h200-host-floor.json", "tests/data/h200-impl-fit.json",
        "tests/data/h200-impl-fit2.json", "tests/data/h200-impl-validation.json",
        "tests/data/h200-impl-validation2.json", "tests/data/h200-impl-validation3.json",
        "tests/data/h200-impl-validation4.json", "tests/data/h200-impl-validation5.json",
        "tests/data/h200-impl-validation6.json", "tests/data/h200-impl-flex5.json",
        "tests/data/h200-impl-flexrefit7.json", "tests/data/h200-impl-flexfresh7.json",
        "tests/data/h200-impl-flexfresh8.json", "tests/data/h200-impl-flexfresh9.json")
"""Every record with flex decode steps (all seen: fitted or judged on in rounds 5-9)."""
SM_COUNT = 132
GRIDS = {
    "decode_step_s": np.round(np.arange(0.0, 3.001e-6, 0.01e-6), 10),
    "decode_program_bandwidth": np.round(np.arange(5e9, 200.01e9, 0.5e9), 1),
    "decode_program_overhead_s": np.round(np.arange(0.0, 20.01e-6, 0.1e-6), 10),
    "decode_shared": np.round(np.arange(0.01, 1.001, 0.01), 3),
}


def combine_time(point: dict[str, Any]) -> float | None:
    """The device time of the combine kernels after the template (None: none listed)."""
    times = [k["time_s"] for k in point.get("kernels", ())
             if "flex_attention" in k["name"] and "_tem_" not in k["name"]]
    return sum(times) if times else None


def seen_decode_points() -> list[tuple[str, dict[str, Any]]]:
    """(record, point) of every seen decode step on the decoding template (module docstring)."""
    impl = get_implementation("flex")
    out = []
    for path in SEEN:
        for p in json.loads((ROOT / path).read_text())["points"]:
            if p.get("impl") != "flex" or not p.get("kernels"):
                continue
            w = Workload(**p["workload"])
            if (runs_decoding_kernel(impl, w) and not w.causal and template_time(p)
                    and combine_time(p) is not None):
                out.append((path, p))
    return out


def fit_template(points: list[Workload], measured: list[float],
                 sweeps: int = 40) -> dict[str, float]:
    params = {"decode_step_s": 1.0e-6, "decode_program_bandwidth": 30e9,
              "decode_program_overhead_s": 2e-6, "decode_shared": 0.1}

    def loss(trial: dict[str, float]) -> float:
        return sum(abs(math.log(decoding_template_s(w, trial, SM_COUNT) / t))
                   for w, t in zip(points, measured, strict=True))

    for _ in range(sweeps):
        before = dict(params)
        for name in params:
            params[name] = float(min(GRIDS[name], key=lambda v: loss({**params, name: float(v)})))
        if params == before:
            break
    return params


def fit_combine(points: list[Workload], measured: list[float]) -> dict[str, float]:
    """c0 on the one-split points' pointwise rescale and the split points' intercept, c1 their
    slope per output: least squares on the split points, c0 the median where one split."""
    split = [(w.batch * w.heads * w.n * w.d_v, t) for w, t in zip(points, measured, strict=True)
             if split_kv(w, SM_COUNT) > 1]
    x = np.array([s for s, _ in split], dtype=float)
    y = np.array([t for _, t in split])
    slope, intercept = np.polyfit(x, y, 1)
    return {"decode_combine_s": float(f"{max(intercept, 1e-7):.3g}"),
            "decode_combine_per_output_s": float(f"{max(slope, 1e-13):.3g}")}


def main() -> None:
    seen = seen_decode_points()
    ws = [Workload(**p["workload"]) for _, p in seen]
    templates = [float(template_time(p) or 0) for _, p in seen]
    combines = [float(combine_time(p) or 0) for _, p in seen]
    fitted = fit_template(ws, templates)
    fitted.update(fit_combine(ws, combines))
    print("decode figures:", json.dumps({k: float(f"{v:.4g}") for k, v in fitted.items()}))
    print(f"{'record':<34} {'#':>3} {'workload':<30} {'walk':>5} {'split':>5} {'tem':>8} "
          f"{'pred':>8} {'err':>7} {'comb':>6} {'pred':>6}")
    errors = []
    for (path, p), w, t, c in zip(seen, ws, templates, combines, strict=True):
        pt = decoding_template_s(w, fitted, SM_COUNT)
        pc = decoding_combine_s(w, fitted, SM_COUNT)
        errors.append(abs((pt + pc) / (t + c) - 1))
        shape = f"{w.batch}x{w.heads}/{w.kv_heads} 1/{w.n_kv} d{w.d} {w.dtype}"
        print(f"{Path(path).name:<34} {p.get('index', '-')!s:>3} {shape:<30} "
              f"{walking_programs(w):>5} {split_kv(w, SM_COUNT):>5} {t * 1e6:>7.1f}µ "
              f"{pt * 1e6:>7.1f}µ {pt / t - 1:>+7.1%} {c * 1e6:>5.1f}µ {pc * 1e6:>5.1f}µ")
    print(f"kernels (template + combine) median |error| in-sample {median(errors):.1%}, worst "
          f"{max(errors):.1%}, over {len(errors)} points")
    for name in fitted:
        for f in (0.9, 1.1):
            moved = {**fitted, name: fitted[name] * f}
            med = median(abs((decoding_template_s(w, moved, SM_COUNT)
                              + decoding_combine_s(w, moved, SM_COUNT)) / (t + c) - 1)
                         for w, t, c in zip(ws, templates, combines, strict=True))
            print(f"sensitivity: {name} x{f:g}: median {med:.1%}")
    if "--loo" in sys.argv:
        left_out = []
        for i, (w, t) in enumerate(zip(ws, templates, strict=True)):
            others = fit_template(ws[:i] + ws[i + 1:], templates[:i] + templates[i + 1:])
            left_out.append(decoding_template_s(w, others, SM_COUNT) / t - 1)
            print(f"leave out #{i} ({w.batch}x{w.heads}/{w.kv_heads} 1/{w.n_kv} d{w.d}): "
                  f"template {left_out[-1]:+.1%}")
        print(f"leave one out: median |error| {median(abs(e) for e in left_out):.1%}, worst "
              f"{max(abs(e) for e in left_out):.1%}")


if __name__ == "__main__":
    main()
