"""Fit sdpa-cudnn's decode figures on seen H200 records (issue 11, round cudnn9). Pure: no torch,
no GPU.

1. The lean kernel (analysis/lean_time.py): LEAN_TERMS on the lean kernel's torch.profiler
   device time of every seen lean decode step. The model is linear in (lean_program_s_per_dim,
   1 / lean_stream_dD) once the row blocks' L2 re-read (at the measured L2 rate, a hardware
   figure, not fitted) is taken off each time, so the fit is a least-squares solve of the
   relative error (each point weighted by 1 / its time: a 10 µs step counts as much as a
   200 µs one). The re-read's SM share (round cudnn11, lean_time.lean_sm_s_per_byte) depends
   on the rates themselves: the solve is repeated with the last solve's rates (FIXED_POINT_STEPS
   times; it settles to 1e-6 in fewer).
2. The decode host floor (`decode_host_floor_s`, analysis/impl_kernels.py:host_floor; the call
   rule max(floor, kernels + time per call) is comparison.Call's): per session (one record is
   one device call) the floor that minimises its decode calls' mean absolute error with the
   measured kernels and the fitted time per call; the shipped floor is the median over
   sessions, not over points, so that a session with many host-bound calls counts once.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from iosim.analysis.comparison import Call
from iosim.analysis.lean_time import (
    LEAN_TERMS,
    lean_moved_bytes,
    lean_reread_s,
    lean_row_blocks,
    lean_sm_s_per_byte,
    lean_stream_share,
    lean_time_s,
    measured_l2_rate,
)
from iosim.analysis.stream_k import stream_k_problem
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from iosim.record import Record

IMPL = "sdpa-cudnn"
LEAN_NAME = "sm80_flash_fprop"
"""What the lean kernel's name contains (cudnn_generated_fort_native_sdpa_sm80_flash_fprop_...)."""
REDUCTION_NAME = "lean_reduction_kernel"
FIXED_POINT_STEPS = 30
"""Solves of fit_lean, each with the re-read's SM share of the previous solve's rates."""
FLOOR_GRID_S = np.arange(0.0, 300.1e-6, 1e-6)
"""Where a session's floor is searched (impl_fit.GRIDS' range and step)."""


class LeanPoint(Record):
    """One seen lean decode step: where it was measured, its shape, its lean kernel's time."""

    session: str
    index: int
    workload: Workload
    measured_s: float


class DecodeCall(Record):
    """One seen sdpa-cudnn decode call: its session, do_bench time and kernels' device time."""

    session: str
    index: int
    workload: Workload
    call_s: float
    kernels_s: float


def session_of(path: Path) -> str:
    """A record's session name: its file's stem without h200-impl- (one record, one call)."""
    return path.stem.removeprefix("h200-impl-")


def decode_calls(paths: Iterable[Path]) -> list[DecodeCall]:
    """Every timed sdpa-cudnn decode step (n = 1) of the records, with its kernel list."""
    import json

    out = []
    for path in paths:
        record: dict[str, Any] = json.loads(path.read_text())
        for p in record["points"]:
            if p.get("impl") != IMPL or "time_s" not in p or p["workload"]["n"] != 1 \
                    or not p.get("kernels"):
                continue
            out.append(DecodeCall(session_of(path), int(p["index"]), Workload(**p["workload"]),
                                  float(p["time_s"]), float(sum(k["time_s"] for k in p["kernels"]))))
    return out


def lean_points(paths: Iterable[Path]) -> list[LeanPoint]:
    """Every seen decode step that ran the lean kernel (its reduction kernel in the list)."""
    import json

    return [point for path in paths
            for point in record_lean_points(json.loads(path.read_text()), session_of(path))]


def record_lean_points(record: Mapping[str, Any], session: str) -> list[LeanPoint]:
    """The decode steps of one record that ran the lean kernel."""
    out = []
    for p in record["points"]:
        if p.get("impl") != IMPL or "time_s" not in p or p["workload"]["n"] != 1:
            continue
        names = [k["name"] for k in p.get("kernels", [])]
        if not any(REDUCTION_NAME in n for n in names):
            continue
        lean = sum(k["time_s"] for k in p["kernels"] if LEAN_NAME in k["name"])
        out.append(LeanPoint(session, int(p["index"]), Workload(**p["workload"]), float(lean)))
    return out


def lean_buckets(points: Sequence[LeanPoint]) -> set[int]:
    """The head-dim buckets (analysis/impl_kernels.py) the points' steps fall in."""
    from iosim.analysis.impl_kernels import head_dim_bucket

    return {head_dim_bucket(p.workload.d) for p in points}


def _columns(point: LeanPoint, impl: Implementation, hardware: Hardware,
             terms: Mapping[str, float] | None = None) -> tuple[list[float], float]:
    """The model's regressors at one point — d, and the bytes streamed at its bucket's rate in
    its bucket's column — and its fixed time, the L2 re-read (analysis/lean_time.py's time =
    a · d + Σ_bucket bytes / rate + re-read), its SM share from `terms`' rates (none without)."""
    from iosim.analysis.impl_kernels import HEAD_DIM_BUCKETS, head_dim_bucket

    assert hardware.sm_count is not None
    w = point.workload
    problem = stream_k_problem(impl, w, int(hardware.sram_per_block_bytes))
    assert problem is not None, w
    programs, key_blocks, block_kv = problem
    bucket = head_dim_bucket(w.d)
    moved = lean_moved_bytes(w, programs * key_blocks, hardware.sm_count, block_kv)
    rows, l2 = lean_row_blocks(w, programs), measured_l2_rate(hardware)
    streamed = lean_stream_share(moved, rows, l2)
    sm = lean_sm_s_per_byte(terms, w.d) if terms is not None else 0.0
    return ([float(w.d), *(float(streamed) if b == bucket else 0.0 for b in HEAD_DIM_BUCKETS)],
            lean_reread_s(moved, rows, l2, sm))


def fit_lean(points: Sequence[LeanPoint], hardware: Hardware) -> dict[str, float]:
    """LEAN_TERMS by least squares on the relative error (module docstring)."""
    impl = get_implementation(IMPL)
    y = np.array([p.measured_s for p in points])
    terms: dict[str, float] | None = None
    for _ in range(FIXED_POINT_STEPS):
        complete = terms is not None and all(k in terms for k in LEAN_TERMS)
        cols = [_columns(p, impl, hardware, terms if complete else None) for p in points]
        x = np.array([c for c, _ in cols])
        fixed = np.array([f for _, f in cols])
        used = x.any(axis=0)  # a head-dim bucket without a point keeps no rate
        coef = np.zeros(x.shape[1])
        coef[used], *_ = np.linalg.lstsq(x[:, used] / y[:, None], 1.0 - fixed / y, rcond=None)
        terms = {"lean_program_s_per_dim": float(coef[0])}
        terms.update({k: 1.0 / float(c) for k, c in zip(LEAN_TERMS[1:], coef[1:], strict=True)
                      if c > 0})
    assert terms is not None
    return terms


def lean_errors(points: Sequence[LeanPoint], hardware: Hardware, terms: Mapping[str, float]
                ) -> list[float]:
    """(predicted − measured) / measured of each point under `terms`."""
    impl = get_implementation(IMPL)
    assert hardware.sm_count is not None
    out = []
    for p in points:
        problem = stream_k_problem(impl, p.workload, int(hardware.sram_per_block_bytes))
        assert problem is not None
        programs, key_blocks, block_kv = problem
        t = lean_time_s(p.workload, programs * key_blocks, hardware.sm_count, terms, block_kv,
                        lean_row_blocks(p.workload, programs), measured_l2_rate(hardware))
        out.append((t - p.measured_s) / p.measured_s)
    return out


def leave_one_session_out(points: Sequence[LeanPoint], hardware: Hardware) -> list[float]:
    """Each session's points predicted by the figures fitted on the other sessions."""
    out = []
    for session in dict.fromkeys(p.session for p in points):
        rest = [p for p in points if p.session != session]
        mine = [p for p in points if p.session == session]
        out += lean_errors(mine, hardware, fit_lean(rest, hardware))
    return out


def sensitivity(points: Sequence[LeanPoint], hardware: Hardware, terms: Mapping[str, float],
                step: float = 0.1) -> dict[str, tuple[float, float]]:
    """Each figure moved by ±step alone: (median |error| at −step, at +step)."""
    out = {}
    for key in terms:
        meds = []
        for s in (1 - step, 1 + step):
            errs = lean_errors(points, hardware, {**terms, key: terms[key] * s})
            meds.append(statistics.median(abs(e) for e in errs))
        out[key] = (meds[0], meds[1])
    return out


def call_errors(calls: Sequence[DecodeCall], floor_s: float, overhead_s: float) -> list[float]:
    """Each call's error under the call rule (comparison.Call) with its measured kernels."""
    return [(Call("fwd", c.kernels_s, overhead_s, floor_s).call_time_s - c.call_s) / c.call_s
            for c in calls]


def session_floor(calls: Sequence[DecodeCall], overhead_s: float) -> tuple[float, float, float]:
    """(best floor, lowest, highest floor within one point of its mean |error|) of one session:
    the range says how sharply the session fixes its floor (0 ... its shortest call where no
    call of the session was host-bound)."""
    losses = np.array([np.mean(np.abs(call_errors(calls, float(f), overhead_s)))
                       for f in FLOOR_GRID_S])
    best = int(np.argmin(losses))
    near = FLOOR_GRID_S[losses <= losses[best] + 0.01]
    return float(FLOOR_GRID_S[best]), float(near.min()), float(near.max())


def fit_decode_floor(calls: Sequence[DecodeCall], overhead_s: float
                     ) -> tuple[float, dict[str, tuple[float, float, float]]]:
    """(the median over sessions of each session's floor, every session's session_floor)."""
    sessions = {s: session_floor([c for c in calls if c.session == s], overhead_s)
                for s in dict.fromkeys(c.session for c in calls)}
    return float(statistics.median(v[0] for v in sessions.values())), sessions
