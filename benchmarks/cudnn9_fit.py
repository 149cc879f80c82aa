"""sdpa-cudnn's decode figures fitted on the seen H200 records (issue 11, round cudnn9; no GPU):
the lean kernel's LEAN_TERMS (analysis/lean_time.py) and the decode host floor, by
calibrate/cudnn_lean_fit.py.

    python benchmarks/cudnn9_fit.py [RECORD.json ...]

Without arguments: every seen record with sdpa-cudnn decode steps (SEEN; the floor on
FLOOR_SEEN, round cudnn9's ten sessions). Prints the figures,
the in-sample and leave-one-session-out errors, each figure's sensitivity (±10 %), and each
session's floor.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from iosim.calibrate import cudnn_lean_fit as L
from iosim.inputs.gpus import resolve_hardware

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
FLOOR_SEEN = ("fit", "fit2", "calibrate", "validation", "validation2", "validation3",
              "validation4", "validation5", "validation6", "cudnnfresh8")
"""Every H200 record with sdpa-cudnn decode steps before round cudnn9 (cudnnfresh8 was judged
in round 10 and is seen now): the decode host floor's sessions (round cudnn9's fit, kept)."""
SEEN = (*FLOOR_SEEN, "cudnnfresh9", "cudnnfresh10")
"""The lean kernel's records: FLOOR_SEEN, cudnnfresh9 (judged in round cudnn9, seen since
round cudnn10, whose row-block rule its MQA steps at g 48 and 64 asked for) and cudnnfresh10
(judged in round cudnn10, seen since round cudnn11, whose SM share its d 256 two-row-block
steps asked for)."""


def seen_paths(names: tuple[str, ...] = SEEN) -> list[Path]:
    return [DATA / f"h200-impl-{s}.json" for s in names]


def _summary(errs: list[float]) -> str:
    a = [abs(e) for e in errs]
    return (f"median {statistics.median(a):.1%}, worst {max(a):.1%}, "
            f"{sum(e <= 0.15 for e in a)}/{len(a)} within ±15 %")


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:]] or seen_paths()
    h200 = resolve_hardware("h200").hardware
    points = L.lean_points(paths)
    terms = L.fit_lean(points, h200)
    print(f"lean kernel: {len(points)} seen lean decode steps of {len(paths)} records")
    print(f"  lean_program_s_per_dim: {terms['lean_program_s_per_dim']:.4g} s")
    for k in L.LEAN_TERMS[1:]:
        print(f"  {k}: {terms[k]:.4g} B/s")
    print(f"  in-sample: {_summary(L.lean_errors(points, h200, terms))}")
    print(f"  leave one session out: {_summary(L.leave_one_session_out(points, h200))}")
    for k, (lo, hi) in L.sensitivity(points, h200, terms).items():
        print(f"  sensitivity {k} ×0.9 / ×1.1: median {lo:.1%} / {hi:.1%}")
    assert h200.measured is not None
    overhead = h200.measured.impls[L.IMPL].call_overhead_s or 0.0
    calls = L.decode_calls([Path(a) for a in sys.argv[1:]] or seen_paths(FLOOR_SEEN))
    floor, sessions = L.fit_decode_floor(calls, overhead)
    print(f"decode host floor: {len(calls)} decode calls in {len(sessions)} sessions, "
          f"{overhead * 1e6:.1f} µs per call")
    for s, (best, lo, hi) in sessions.items():
        print(f"  {s}: {best * 1e6:.0f} µs (within one point: {lo * 1e6:.0f}-{hi * 1e6:.0f})")
    print(f"  median over sessions: {floor * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
