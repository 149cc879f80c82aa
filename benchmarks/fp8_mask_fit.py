"""FP8's per-mask key-block cost (issue 14, var9): the fused FP8 forward's matmul rate fitted
per mask on the FP8 points seen before var9's FP8 judgement, and judged on a fresh section.

    python benchmarks/fp8_mask_fit.py [RECORD.json]            # the fit on the seen sections
    python benchmarks/fp8_mask_fit.py [RECORD.json] --judge    # and the fresh section against it
    python benchmarks/fp8_mask_fit.py --sensitivity            # each fitted rate ±5 %

The physics (var7's ncu probe, benchmarks/fp8_ncu_probe_h200.py, reports/variants-h200.md
"Issue 14, var7"): at FP8 a causal key block costs 1.16× a non-causal one in active SM cycles
(4-8 % more instructions, 1.8× barrier stalls, 3× tensor waits at the diagonal's masking), and
non-causal FP8 is issue-bound; one FP8 matmul rate for both masks (measured.peak_flops.fp8,
benchmarks/fp8_fit_h200.py) therefore times non-causal slow and causal fast. The candidate:
the same profile terms (fused efficiency, utilisation, the softmax's vector rate: fitted on fp16
kernels), with the FP8 dots at R_FULL for a non-causal kernel and R_CAUSAL for a causal one,
each the value on a 5 TFLOP/s grid that minimises Σ log(model / measured)² over the seen FP8
points of its mask (sections SEEN). FRESH is never read by the fit. Better on the fresh set, it
is shipped (fp8wire): configs/gpus/h200.yaml measured.peak_flops.fp8 (non-causal) and fp8_causal,
which compare charges (tests/test_fp8_mask_rate.py).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import fp8_fit_h200 as single

SEEN = ("fp8", "fp8_e5m2", "fp8_fresh", "fp8_block", "fp8_fresh2")
FRESH = ("fp8_fresh3",)
SHIPPED_RATE = 950e12
"""The one rate for both masks that configs/gpus/h200.yaml measured.peak_flops.fp8 held before
fp8wire shipped the per-mask rates (benchmarks/fp8_fit_h200.py)."""
WITHIN = 0.15
GRID = range(500, 2500, 5)


def rows_of(record: dict[str, Any], sections: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per FP8 point of `sections`: its id, mask, scales, measured time and the profile's terms
    (fp8_fit_h200.terms: matmul FLOPs, elementwise seconds, efficiency · utilisation)."""
    points = {p["id"]: p for s in sections for p in record.get(s, [])}
    saved = single.SEEN
    single.SEEN = sections
    try:
        terms = single.terms(record)
    finally:
        single.SEEN = saved
    return [{"id": pid, "causal": points[pid]["causal"], "scales": points[pid]["fp8_scales"],
             "dtype": points[pid]["dtype"], "time_s": t, "matmul": mm, "elementwise_s": ew,
             "eu": eu} for pid, t, mm, ew, eu in terms]


def predict(row: dict[str, Any], rate: float) -> float:
    return (row["matmul"] / rate + row["elementwise_s"]) / row["eu"]


def fit(rows: list[dict[str, Any]]) -> dict[bool, float]:
    """The rate per mask (True: causal) on `rows`."""
    out = {}
    for causal in (False, True):
        mine = [r for r in rows if r["causal"] == causal]
        best = min(GRID, key=lambda g: sum(math.log(predict(r, g * 1e12) / r["time_s"]) ** 2
                                           for r in mine))
        out[causal] = best * 1e12
    return out


def table(rows: list[dict[str, Any]], rates: dict[bool, float]) -> tuple[int, int]:
    print("| point | mask | scales | ms | one rate (950) | error | per mask | error |\n"
          "|---|---|---|---:|---:|---:|---:|---:|")
    ok_one = ok_mask = 0
    for r in rows:
        one, mask = predict(r, SHIPPED_RATE), predict(r, rates[r["causal"]])
        e1, e2 = one / r["time_s"] - 1, mask / r["time_s"] - 1
        ok_one += abs(e1) <= WITHIN
        ok_mask += abs(e2) <= WITHIN
        print(f"| {r['id']} | {'causal' if r['causal'] else 'full'} | {r['scales']} | "
              f"{r['time_s'] * 1e3:.3f} | {one * 1e3:.3f} | {e1:+.1%} | {mask * 1e3:.3f} | "
              f"{e2:+.1%} |")
    print(f"\nwithin ±15 %: one rate {ok_one} of {len(rows)}, per mask {ok_mask} of {len(rows)}")
    return ok_one, ok_mask


def main(argv: list[str]) -> int:
    paths = [a for a in argv if not a.startswith("--")]
    record = json.loads(Path(paths[0] if paths else "tests/data/h200-variants.json").read_text())
    seen = rows_of(record, SEEN)
    rates = fit(seen)
    print(f"fitted on {len(seen)} seen FP8 points: non-causal {rates[False] / 1e12:.0f} TFLOP/s, "
          f"causal {rates[True] / 1e12:.0f} TFLOP/s (a causal key block costs "
          f"{rates[False] / rates[True]:.2f}× a non-causal one)\n")
    table(seen, rates)
    if "--sensitivity" in argv:  # each rate ±5 % on the seen points
        for causal in (False, True):
            for factor in (0.95, 1.05):
                moved = {**rates, causal: rates[causal] * factor}
                ok = sum(abs(predict(r, moved[r["causal"]]) / r["time_s"] - 1) <= WITHIN
                         for r in seen)
                print(f"{'causal' if causal else 'non-causal'} rate × {factor}: {ok} of "
                      f"{len(seen)} seen within ±15 %")
    if "--judge" in argv:
        print("\nfresh (never read by the fit):\n")
        table(rows_of(record, FRESH), rates)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
