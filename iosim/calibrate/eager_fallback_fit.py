"""The forward fallback GEMMs' rates (estimates/eager_fallback.py FORWARD_FALLBACK), fitted on
the seen H200 records:

    python -m iosim.calibrate.eager_fallback_fit        # prints the rates and every seen point

Every timed torch-naive forward of SEEN at N_kv % 8 != 0 (fp16/bf16) gives each GEMM's measured
device time (its launches: the first GEMM's are S = QKᵀ, the last one's O = PV; a split-K
reduction counts with its GEMM), divided by S's bytes. Per (GEMM, N_kv parity, head dim) the
median of those seconds per byte; with t/S = 1/stream + d/compute (FLOPs = S bytes × d at 2
bytes an element), the medians at d 64 and d 128 give both rates. The medians, not a least-
squares fit: the two smallest seen grids (N 900, one head; N 3,001, two heads, on a 64×64 tile
cuBLAS picked to fill the SMs) are 1.1-3.5× slower per byte than the rest, and a mean would
carry them into every other point.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

from iosim.estimates.eager_backward import unaligned_class
from iosim.estimates.eager_fallback import FALLBACK_GEMMS
from iosim.inputs.workload import Workload

DATA = Path(__file__).parents[2] / "tests" / "data"
SEEN = ("fit", "fit2", "calibrate", "validation", "validation2", "validation3", "validation4",
        "validation5", "validation6", "eagerfresh8")
"""The records (tests/data/h200-impl-NAME.json) the rates are fitted on: the nine the shipped
torch-naive fit was made on and eager8's fresh record, judged at eager8 and seen since."""
FIT_DIMS = (64, 128)
"""The head dims of the seen fallback points (none at 256)."""


def _is_gemm(name: str) -> bool:
    lowered = name.lower()
    return any(t in lowered for t in ("nvjet", "gemm", "cutlass", "splitkreduce"))


def gemm_times(launches: Sequence[dict[str, Any]]) -> dict[str, float]:
    """{'qk': s, 'pv': s}: the device time of the point's first run of GEMM launches and of its
    last (each with its split-K reduction, if any)."""
    names = [str(k["name"]) for k in launches]
    at = [i for i, n in enumerate(names) if _is_gemm(n)]
    if not at:
        return {}
    first, last = at[0], at[-1]
    while first + 1 < len(names) and _is_gemm(names[first + 1]):
        first += 1
    while last - 1 >= 0 and _is_gemm(names[last - 1]):
        last -= 1
    return {"qk": sum(float(k["time_s"]) for k in launches[at[0]:first + 1]),
            "pv": sum(float(k["time_s"]) for k in launches[last:at[-1] + 1])}


def seen_points(names: Sequence[str] = SEEN) -> list[dict[str, Any]]:
    """Every timed torch-naive forward of the records at N_kv % 8 != 0 (fp16/bf16), each shape
    once: its workload, parity and seconds per byte of S of each GEMM."""
    out, shapes = [], set()
    for name in names:
        for p in json.loads((DATA / f"h200-impl-{name}.json").read_text())["points"]:
            if p.get("impl") != "torch-naive" or "time_s" not in p:
                continue
            w = Workload(**p["workload"])
            parity = unaligned_class(w.n_kv)
            key = json.dumps(p["workload"], sort_keys=True)
            if parity is None or w.element_bytes != 2 or w.pass_ != "fwd" or key in shapes:
                continue
            shapes.add(key)
            s_bytes = w.batch * w.heads * w.n * w.n_kv * w.element_bytes
            times = gemm_times(p["kernels"])
            out.append({"workload": w, "parity": parity, "record": name, "times": times,
                        "per_byte": {g: t / s_bytes for g, t in times.items()}})
    return out


def fit(points: Sequence[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float]]:
    """(stream rate, compute rate) per (GEMM, parity), 3 significant digits: the module's rule."""
    out = {}
    for gemm in FALLBACK_GEMMS:
        for parity in ("odd", "even"):
            at = {d: median(p["per_byte"][gemm] for p in points
                            if p["parity"] == parity and p["workload"].d == d)
                  for d in FIT_DIMS}
            low, high = FIT_DIMS
            per_flop = (at[high] - at[low]) / (high - low)  # seconds per (byte · d)
            per_byte = at[low] - low * per_flop
            out[(gemm, parity)] = (float(f"{1 / per_byte:.3g}"), float(f"{1 / per_flop:.3g}"))
    return out


def main() -> None:
    """Print the fitted rates and each seen point's GEMM errors under them."""
    from iosim.estimates.eager_fallback import fallback_gemm_s

    points = seen_points()
    rates = fit(points)
    for (gemm, parity), (stream, compute) in rates.items():
        print(f"{gemm} {parity:4}: {stream / 1e12:.3g} TB/s of S + {compute / 1e12:.3g} TFLOP/s")
    for p in points:
        w = p["workload"]
        errors = "  ".join(f"{g} {fallback_gemm_s(g, p['parity'], w, rates) / t - 1:+6.1%}"
                           for g, t in p["times"].items())
        print(f"{p['record']:12} N {w.n:6} N_kv {w.n_kv:6} d {w.d:3} b·h {w.batch * w.heads:3} "
              f"{p['parity']:4}  {errors}")


if __name__ == "__main__":
    main()
