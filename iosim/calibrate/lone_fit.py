"""Fit iosim-triton's lone-grid terms (estimates/lone_prologue.py) on the kernel device times
of the seen H200 records (issue 11, round triton13). Pure: no torch, no GPU.

    python -m iosim.calibrate.lone_fit [RECORD.json ...]

The points: every seen iosim-triton forward whose attention grid is lone (at most one program
per SM, compute-bound: impl_fit.Pieces.alone), timed by its kernels' torch.profiler device
times, not the call's do_bench time: the short lone calls' host gap is bimodal (3 µs in some
sessions, 12-30 µs in others for the same kernel lengths, tests/data/h200-impl-validation6.json
points 45 and 48), which a kernel term must not absorb. Fitted with impl_fit.fit (its grids and
its summed absolute log error) with every other figure held at configs/gpus/h200.yaml's and the
time per call and host floor at 0 (device time has neither): `solo_rate`, `solo_rate_one`,
`lone_prologue_bandwidth`. Prints the figures, each point's error before (main's one solo rate)
and after, leave one record out, and each figure's sensitivity (±10 %).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from statistics import median

import numpy as np

from iosim.calibrate.impl_fit import START, Pieces, _pieces, fit, held_parameters, predict
from iosim.calibrate.impl_run import timed_calls
from iosim.estimates.lone_prologue import LONE_TERMS
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from iosim.record import replace

IMPL = "iosim-triton"
DATA = Path(__file__).parents[2] / "tests" / "data"
SEEN = ("fit", "fit2", "calibrate", "validation", "validation2", "validation3", "validation4",
        "validation5", "validation6")
"""Every H200 record with iosim-triton forwards before round triton13."""
FITTED = ("solo_rate", *LONE_TERMS)
ZERO_HOST = {"call_overhead_s": 0.0, "host_floor_s": 0.0}
MAIN_SOLO_RATE = 0.84
"""main's one solo rate for every c before this round (configs/gpus/h200.yaml at 9e956f0)."""
"""A kernel's device time has no host time per call and no host floor."""


def lone_points(paths: Iterable[Path], hardware: Hardware) -> list[tuple[str, Workload, Pieces]]:
    """(record#index, workload, its pieces with the kernels' device seconds as measured_s) of
    every iosim-triton forward of the records with a lone grid."""
    impl = get_implementation(IMPL)
    out = []
    for label, p in timed_calls(paths, IMPL):
        w = Workload(**p["workload"])
        if w.heads * w.batch * -(-w.n // 64) > 4 * (hardware.sm_count or 0):
            continue  # far above one wave (≥ 4 programs per SM at any block): skip compare
        pieces = _pieces(w, impl, hardware, float(p["time_s"]), None)
        if not pieces.alone.any():
            continue
        kernels_s = sum(float(k["time_s"]) for k in p["kernels"])
        out.append((label, w, replace(pieces, measured_s=kernels_s)))
    return out


def fit_lone(points: Sequence[Pieces], held: dict[str, float]) -> dict[str, float]:
    """The three terms, every other figure in `held` kept (the time per call and floor at 0)."""
    fitted = fit(list(points), held={**{k: v for k, v in held.items() if k not in FITTED},
                                     **ZERO_HOST}, lone=True)
    return {k: fitted[k] for k in FITTED if k in fitted}


def errors(points: Sequence[Pieces], params: dict[str, float]) -> np.ndarray:
    """Each point's relative kernel-time error under `params`."""
    full = {**START, **params, **ZERO_HOST}
    return np.array([predict(p, full) / p.measured_s - 1 for p in points])


def main(argv: Sequence[str]) -> None:
    """Fit on `argv`'s records (default: SEEN) and print what the module docstring says."""
    hardware = resolve_hardware("h200").hardware
    paths = [Path(a) for a in argv] or [DATA / f"h200-impl-{s}.json" for s in SEEN]
    assert hardware.measured is not None
    held = held_parameters(hardware.measured.impls[IMPL])
    rows = lone_points(paths, hardware)
    points = [p for _, _, p in rows]
    before = errors(points, {**held, "solo_rate": MAIN_SOLO_RATE,
                             "solo_rate_one": MAIN_SOLO_RATE,
                             "lone_prologue_bandwidth": float("inf")})
    terms = fit_lone(points, held)
    after = errors(points, {**held, **terms})
    print(f"{len(points)} lone iosim-triton kernels; fitted: {terms}")
    for (name, w, p), b, a in zip(rows, before, after, strict=True):
        print(f"  {name:16s} b{w.batch} h{w.heads} N{w.n} d{w.d} {w.dtype}"
              f"{' causal' if w.causal else ''}: {p.measured_s * 1e6:7.1f} µs, "
              f"before {b:+.1%}, after {a:+.1%}")
    for label, e in (("before", before), ("after", after)):
        print(f"{label}: median |error| {median(abs(e)):.1%}, worst {max(abs(e)):.1%}")
    for session in sorted({name.split("#")[0] for name, _, _ in rows}):
        # leave one record (session) out: fitted on the others, judged on it
        rest = [p for name, _, p in rows if not name.startswith(session + "#")]
        out = [p for name, _, p in rows if name.startswith(session + "#")]
        e = errors(out, {**held, **fit_lone(rest, held)})
        print(f"leave {session} out: {fit_lone(rest, held)}, on it median {median(abs(e)):.1%}, "
              f"worst {max(abs(e)):.1%}")
    for key in FITTED:
        for f in (0.9, 1.1):
            e = errors(points, {**held, **terms, key: terms[key] * f})
            print(f"sensitivity {key} ×{f}: median {median(abs(e)):.1%}, worst {max(abs(e)):.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
