"""How long `verify` takes against its work estimate (analysis/verify.py:verify_work), and the
fit of the estimate's constants: t = (multiply-adds + E × scores + P × tile pairs) / rate.

    PYTHONPATH=$PWD python benchmarks/verify_work_speed.py [--check] [--times FILE]

Times iosim.verify in-process (no CLI start-up; wall seconds) at the FIT shapes, fits rate, E
(ELEMENTWISE_PER_SCORE) and P (PER_TILE_PAIR) by least squares on relative error, then prints
every shape's time beside the time the shipped constants predict, the HELD shapes included
(never fitted on), and each constant's sensitivity: the worst held-out error with the constant
halved and doubled. With --check it exits 1 when an accepted held-out shape takes longer
than 2 × VERIFY_WORK at the fitted rate (a speed target, not a unit test: timings depend on
the machine's load). --times FILE keeps each shape's time in FILE (JSON) as it is measured and
reuses the times already there (a run interrupted, or the fit re-made without re-timing).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

import iosim
from iosim.analysis import verify as V
from iosim.analysis.requests import choose_algorithms, default_algorithms

# (n, d, heads, batch, block, pass, causal): shapes whose parts differ (tile-pair bound,
# matmul bound, score bound), each estimated at 1-10 s
FIT = [
    (1448, 256, 8, 1, 64, "fwd", True),       # gemma-2-2b's local layer shape
    (1024, 1024, 1, 1, 64, "fwd", True),
    (2048, 64, 4, 1, 64, "fwd", True),
    (512, 16, 1, 1, 8, "fwd", True),
    (4096, 64, 1, 1, 256, "fwd", True),
    (512, 256, 2, 1, 64, "fwdbwd", True),
]
HELD = [
    (1024, 2048, 1, 1, 128, "fwd", False),
    (768, 128, 4, 2, 32, "fwd", False),
    (700, 64, 1, 1, 8, "fwd", True),
    (256, 512, 4, 1, 64, "fwdbwd", False),
    (2048, 32, 2, 1, 128, "bwd", True),
]


def _work(shape: tuple[int, int, int, int, int, str, bool]) -> tuple[iosim.Workload, int, V.VerifyWork]:
    n, d, heads, batch, block, pass_, causal = shape
    w = iosim.Workload(n, d=d, heads=heads, batch=batch, causal=causal, pass_=pass_,
                       dtype="fp32")
    chosen = choose_algorithms([a for a in default_algorithms(w)], splits_given=False)
    return w, block, V.verify_work(w, chosen, block, block)


def _time(shape: tuple[int, int, int, int, int, str, bool]) -> float:
    w, block, _ = _work(shape)
    limit = V.VERIFY_WORK
    V.VERIFY_WORK = 10**15  # time it whatever the bound says
    try:
        start = time.perf_counter()  # wall seconds, what a user waits (process_time counts
        V.verify(w, block_q=block, block_kv=block)  # BLAS threads spinning: no steadier)
        return time.perf_counter() - start
    finally:
        V.VERIFY_WORK = limit


def _predict(work: V.VerifyWork, rate: float, e: float, p: float) -> float:
    return (work.multiply_adds + e * work.scores + p * work.pair_runs) / rate


def _nonnegative_fit(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with every coefficient ≥ 0: the best of the fits on each subset of the
    columns whose coefficients all come out positive (three columns: seven subsets)."""
    best, best_loss = np.full(a.shape[1], 1e-30), np.inf
    for mask in range(1, 2 ** a.shape[1]):
        cols = [j for j in range(a.shape[1]) if mask >> j & 1]
        x, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
        if (x <= 0).any():
            continue
        loss = float(((a[:, cols] @ x - b) ** 2).sum())
        if loss < best_loss:
            best, best_loss = np.full(a.shape[1], 1e-30), loss
            best[cols] = x
    return best


def main() -> int:
    store = Path(sys.argv[sys.argv.index("--times") + 1]) if "--times" in sys.argv else None
    times = json.loads(store.read_text()) if store is not None and store.exists() else {}
    rows = []
    for group, shapes in (("fit", FIT), ("held", HELD)):
        for shape in shapes:
            seconds = times.get(str(shape)) or _time(shape)
            times[str(shape)] = seconds
            if store is not None:
                store.write_text(json.dumps(times, indent=1) + "\n")
            rows.append((group, shape, _work(shape)[2], seconds))
            print(f"{group:4} {shape}: {seconds:.2f} s", flush=True)
    fit = [r for r in rows if r[0] == "fit"]
    # t = x1·macs + x2·scores + x3·pairs, least squares on relative error (rows over t)
    a = np.array([[w.multiply_adds, w.scores, w.pair_runs] for _, _, w, _ in fit], float)
    t = np.array([s for *_, s in fit])
    x = _nonnegative_fit(a / t[:, None], np.ones(len(t)))
    rate, e, p = 1 / x[0], x[1] / x[0], x[2] / x[0]
    print(f"fitted: rate {rate / 1e9:.2f} G multiply-add equivalents/s, E {e:.0f}, P {p:,.0f}")
    shipped = (V.ELEMENTWISE_PER_SCORE, V.PER_TILE_PAIR)
    print(f"shipped: E {shipped[0]}, P {shipped[1]:,}, VERIFY_WORK {V.VERIFY_WORK:.3g} "
          f"= {V.VERIFY_WORK / rate:.1f} s at the fitted rate")
    for group, shape, work, seconds in rows:
        predicted = _predict(work, rate, *shipped)
        print(f"{group:4} {shape!s:40} measured {seconds:6.2f} s  predicted {predicted:6.2f} s"
              f"  ({predicted / seconds - 1:+.0%})  accepted: {work.total <= V.VERIFY_WORK}")
    held = [r for r in rows if r[0] == "held"]
    for name, index in (("E", 0), ("P", 1)):
        for factor in (0.5, 2.0):
            constants = list(shipped)
            constants[index] *= factor
            worst = max(abs(_predict(w, rate, *constants) / s - 1) for _, _, w, s in held)
            print(f"sensitivity: {name} × {factor:g}: worst held-out error {worst:.0%}")
    if "--check" in sys.argv:
        slow = [(shape, s) for _, shape, w, s in held
                if w.total <= V.VERIFY_WORK and s > 2 * V.VERIFY_WORK / rate]
        if slow:
            print(f"accepted held-out shapes slower than twice the bound: {slow}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
