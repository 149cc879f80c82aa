"""cuDNN's lean decode kernel timed by its iterations (analysis/lean_time.py) and sdpa-cudnn's
decode host floor, against the H200's records (issue 11, round cudnn9)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from iosim.analysis.compare import compare
from iosim.analysis.lean_time import CTAS_PER_SM, LEAN_KERNEL, LEAN_TERMS, lean_grid
from iosim.calibrate import cudnn_lean_fit as L
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.workload import Workload
from tests.conftest import DATA, CliOutcome
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import IMPL_AXES, impl_seen


def _seen() -> list[Path]:
    """The records the figures are fitted on (benchmarks/cudnn9_fit.py SEEN)."""
    from benchmarks.cudnn9_fit import seen_paths

    return seen_paths()


def _kernel(w: Workload) -> tuple[float, str]:
    est = compare(w, "h200", impl="sdpa-cudnn", profile="measured").algorithms[-1]
    k = next(k for k in est.kernels if k.name == LEAN_KERNEL)
    return k.time_s, k.timed_by


def test_the_lean_grid_is_the_launch_ncu_recorded() -> None:
    """ncu's one lean launch (tests/data/h200-impl-launches-rw.csv, b1 h32/8 N_kv 32,768 d 128):
    grid 32 × 8 = 256 CTAs, two per SM by its registers and shared memory; the model's grid for
    that step's 2,048 iterations on CTAS_PER_SM · 132 slots is that grid."""
    import csv

    lines = (DATA / "h200-impl-launches-rw.csv").read_text().splitlines()
    # the record's one sdpa-cudnn decode call (its markers first, then ncu's rows in order)
    assert [x for x in lines if x.startswith("@@ sdpa-cudnn n=1 ")] == [
        "@@ sdpa-cudnn n=1 n_kv=32768 d=128 heads=32 kv=8 batch=1 causal=False"]
    rows = [r for r in csv.DictReader(x for x in lines if x.startswith('"'))
            if L.LEAN_NAME in r["Kernel Name"]]
    assert len(rows) == 1
    row = rows[0]
    grid = int(row["launch__grid_size"].replace(",", ""))
    per_sm = int(row["launch__occupancy_limit_registers"])
    assert per_sm == int(row["launch__occupancy_limit_shared_mem"]) == CTAS_PER_SM[128]
    iterations = 1 * 8 * 1 * (32768 // 128)  # batch · KV heads · row blocks · key blocks
    assert lean_grid(iterations, CTAS_PER_SM[128] * 132) == grid == 256


def test_a_lean_step_takes_rounds_of_every_ctas_tiles() -> None:
    """The stream-K grid's time is flat while the longest CTA's iteration count stays (one KV
    head: 264 slots at d 128, one iteration per 128 keys) and steps by one round's time when
    it grows; compare times the lean kernel by this model, not its roofline."""
    step = 264 * 128  # one more iteration for every CTA
    at = {n: _kernel(Workload(1, n_kv=n, d=128, heads=16, kv_heads=1)) for n in (
        2 * step - 127 * 264, 2 * step, 2 * step + 1, 3 * step, 3 * step + 1)}
    assert {by for _, by in at.values()} == {"lean"}
    t = {n: s for n, (s, _) in at.items()}
    assert t[2 * step - 127 * 264] == pytest.approx(t[2 * step])
    assert t[2 * step + 1] == pytest.approx(t[3 * step]) and t[3 * step] > t[2 * step]
    assert t[3 * step + 1] - t[3 * step] == pytest.approx(t[2 * step + 1] - t[2 * step])


def test_a_query_tile_wastes_its_empty_rows_and_rereads_past_16_from_the_l2() -> None:
    """The 16-row tile: 2, 8 and 16 query heads per KV head take the same time (one row block);
    32 (two row blocks) take longer than 16 but less than two KV heads' worth, the second row
    block re-reading the first's K/V tiles from the L2 (round cudnn10)."""
    times = {g: _kernel(Workload(1, n_kv=100000, d=128, heads=g, kv_heads=1))[0]
             for g in (2, 8, 16, 32)}
    two_heads = _kernel(Workload(1, n_kv=100000, d=128, heads=32, kv_heads=2))[0]
    assert times[2] == pytest.approx(times[8]) == pytest.approx(times[16])
    assert times[16] < times[32] < two_heads


def test_the_shipped_lean_figures_and_decode_floor_are_the_fit_of_the_seen_records() -> None:
    """sdpa-cudnn's LEAN_TERMS and decode_host_floor_s in configs/gpus/h200.yaml are
    calibrate/cudnn_lean_fit.py's fit on the seen records (python benchmarks/cudnn9_fit.py):
    91 lean steps of 12 records (round cudnn11: cudnnfresh9 and cudnnfresh10 seen), 82 decode
    calls in round cudnn9's 10 sessions, the floor the median over sessions."""
    h200 = resolve_hardware("h200").hardware
    assert h200.measured is not None
    shipped = h200.measured.impls["sdpa-cudnn"]
    points = L.lean_points(_seen())
    assert len(points) == 91
    fitted = L.fit_lean(points, h200)
    assert fitted == pytest.approx({k: shipped.terms[k] for k in LEAN_TERMS}, rel=1e-3)
    from benchmarks.cudnn9_fit import FLOOR_SEEN, seen_paths

    calls = L.decode_calls(seen_paths(FLOOR_SEEN))
    floor, sessions = L.fit_decode_floor(calls, shipped.call_overhead_s or 0.0)
    assert len(calls) == 82 and len(sessions) == 10
    assert floor == pytest.approx(shipped.terms["decode_host_floor_s"])


def test_the_lean_model_holds_out_of_session() -> None:
    """Each seen session's lean kernels predicted by the figures of the other sessions
    (python benchmarks/cudnn9_fit.py, round cudnn11 on 91 steps: median 6.2 %, worst 44 %
    (cudnnfresh9 #1, MQA g 8 d 64, −44 % in sample too), 80 of 91 within ±15 %; round cudnn10's
    rule, the L2 re-read free of the SM's share, refitted on the same 91: median 6.8 %, worst
    43 %, 77 of 91, reports/impl-validation/cudnn11-fresh.md)."""
    h200 = resolve_hardware("h200").hardware
    errs = [abs(e) for e in L.leave_one_session_out(L.lean_points(_seen()), h200)]
    assert statistics.median(errs) < 0.065 and max(errs) < 0.45
    assert sum(e <= 0.15 for e in errs) >= 79


def test_the_fresh_cudnn9_set_is_new_and_covers_the_lean_cases() -> None:
    """benchmarks/impl_validation_h200.py's CUDNNFRESH9 (cudnn9, measured after tag
    cudnn9-frozen): no point equals one of any other set of the script or of any committed H200
    implementation record; at least 14 decode steps, most of them lean (batch × KV heads ≤ 66)
    with d 256, MQA, GQA 4 and 8, N_kv 2k-131k, fp16 and bf16, and about four controls above
    66."""
    from benchmarks import impl_validation_h200 as V

    fresh = V.CUDNNFRESH9
    assert_fresh(fresh, as_is, impl_seen("cudnnfresh9"), size=(14, None), axes=IMPL_AXES)
    assert all(w.n == 1 for w in fresh)
    lean = [w for w in fresh if w.batch * w.kv_heads <= 66]
    assert len(lean) >= 14 and 3 <= len(fresh) - len(lean) <= 5
    assert {1, 4, 8} <= {w.group_size for w in lean} and 256 in {w.d for w in lean}
    assert min(w.n_kv for w in lean) < 2500 and max(w.n_kv for w in lean) > 128000
    assert {w.dtype for w in lean} == {"fp16", "bf16"}


def test_a_lean_figure_out_of_range_is_refused_in_one_line(
        tmp_path: Path, iosim_cli: Callable[..., CliOutcome]) -> None:
    """A GPU YAML whose lean streaming rate is not a positive number: one line naming the key
    and its range, exit 2 (inputs/impl_calibration.py TIME_TERMS)."""
    text = (Path(__file__).parents[1] / "configs" / "gpus" / "h200.yaml").read_text()
    assert "lean_stream_d64: 3.461e+12" in text
    bad = tmp_path / "h200.yaml"
    bad.write_text(text.replace("lean_stream_d64: 3.461e+12", "lean_stream_d64: -1"))
    code, _, err = iosim_cli("compare", "--n", "1", "--n-kv", "4096", "--gpu", str(bad),
                             "--impl", "sdpa-cudnn", "--profile", "measured")
    assert code == 2
    assert len(str(err).strip().splitlines()) == 1 and "lean_stream_d64" in str(err)
    assert "(0, 1e+13]" in str(err)
