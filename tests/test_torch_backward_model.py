"""SDPA's flash backward (FA2's CUDA kernels) and eager PyTorch's backward against iosim's L2
model and time fit, from the committed H200 records (tests/data/backward-h200.json and
backward-h200-torch.json, `python3 benchmarks/backward_h200.py OUT --torch-only` on the lent
H200, benchmarks/backward-h200-torch/run.log): no GPU. Also the closed form of the new L2
patterns (FA2's atomics into dQaccum, its descending query loop, Alg. 4's serial sweeps)
against the walk-driven simulation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosim.algorithms import get_algorithm
from iosim.analysis.compare import compare
from iosim.calibrate import CalibrationError
from iosim.calibrate import eager_unaligned as U
from iosim.calibrate import torch_bwd_fit as F
from iosim.errors import ConfigError
from iosim.estimates import l2_cutoff, l2_handover
from iosim.estimates.l2 import dram_estimate
from iosim.estimates.l2_model import modelled
from iosim.estimates.l2_simulate import simulate
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import replace
from tests.conftest import examples

MiB = 2**20


@pytest.fixture(scope="module")
def records() -> list:
    return F.load()


@pytest.fixture(scope="module")
def h200():  # type: ignore[no-untyped-def]
    return load_hardware(config_dir() / "h200.yaml")


@pytest.fixture(scope="module")
def rows(records: list, h200) -> list:  # type: ignore[no-untyped-def]
    return F.dram_comparison(records, h200)


# --- closed form = simulation for the backward kernels --------------------------------------


@contextmanager
def _ideal_lru() -> Iterator[None]:
    """The L2 model's cutoff as the ideal LRU that l2_simulate walks: a step at the L2's size
    and no retained share (estimates/l2_cutoff.py, l2_handover.py: the H200's fitted soft
    cutoff and retained share are what the records measure)."""
    with patch.object(l2_cutoff, "FILL_SHARE", 1.0), patch.object(l2_cutoff, "FILL_WIDTH", 0.0), \
            patch.object(l2_handover, "RETAINED_SHARE", 0.0):
        yield


def _tiling(block_q: int, block_kv: int) -> Tiling:
    return Tiling(block_q, block_kv, 1 << 30, "test", "test", bwd_block_q=block_q,
                  bwd_block_kv=block_kv)


@pytest.mark.parametrize(("algorithm", "n", "heads", "causal", "mib", "programs"), [
    ("flash2", 1024, 8, False, 60, 132),   # Q, dO, dQaccum of a head shared in L2
    ("flash2", 2048, 4, False, 2, 16),     # every wave re-reads them (and writes dQaccum back)
    ("flash2", 2048, 4, True, 2, 16),      # causal, the query blocks walked from the last down
    ("flash1", 1024, 8, False, 60, 132),   # Alg. 4: Q, O, dO, dQ, l, m stay in L2
    ("flash1", 1024, 8, False, 1, 4),      # they do not: re-fetched every key block
])
def test_backward_closed_form_is_the_simulation_in_clear_regimes(
        h200, algorithm: str, n: int, heads: int, causal: bool, mib: float,  # type: ignore[no-untyped-def]
        programs: int) -> None:
    w = Workload(n, d=64, heads=heads, causal=causal, pass_="bwd")
    kernels = get_algorithm(algorithm).kernels(w)
    assert all(modelled(k) for k in kernels)
    t = _tiling(64, 128)
    with _ideal_lru():
        closed = dram_estimate(kernels, w, t, h200, concurrent_programs=programs,
                               l2_bytes=mib * MiB)
    simulated = simulate(kernels, w, t, l2_bytes=mib * MiB, concurrent_programs=programs)
    assert closed.read_bytes == pytest.approx(simulated.read_bytes, rel=0.01)
    assert closed.write_bytes == pytest.approx(simulated.write_bytes, rel=0.01)


@settings(max_examples=examples(30), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(algorithm=st.sampled_from(["flash2", "flash1"]), n=st.sampled_from([128, 256, 384, 512]),
       d=st.sampled_from([16, 32, 64]), heads=st.sampled_from([1, 2, 4]),
       batch=st.sampled_from([1, 2]), causal=st.booleans(),
       block_q=st.sampled_from([32, 64, 128]), block_kv=st.sampled_from([32, 64, 128]),
       programs=st.sampled_from([1, 2, 4, 8, 16]), room=st.sampled_from([8, 16, 64, 256]))
def test_backward_closed_form_follows_the_simulation(
        h200, algorithm: str, n: int, d: int, heads: int, batch: int, causal: bool,  # type: ignore[no-untyped-def]
        block_q: int, block_kv: int, programs: int, room: int) -> None:
    """As the forward's test (tests/test_l2.py), for FA2's and Alg. 4's backward kernels: within
    20 % of the simulated LRU (worst seen over 160 random shapes: +8.6 %, FA2 causal). Multi-head
    only: the simulation does not stream the GQA group sum."""
    w = Workload(n, d=d, heads=heads, batch=batch, causal=causal, pass_="bwd")
    t = _tiling(block_q, block_kv)
    step = programs * (2 * block_q + 4 * block_kv) * d * 2
    kernels = get_algorithm(algorithm).kernels(w)
    with _ideal_lru():
        closed = dram_estimate(kernels, w, t, h200, concurrent_programs=programs,
                               l2_bytes=room * step)
    simulated = simulate(kernels, w, t, l2_bytes=room * step, concurrent_programs=programs)
    assert abs(closed.bytes - simulated.bytes) <= 0.20 * simulated.bytes


@pytest.mark.parametrize(("n", "heads", "mib", "programs"), [
    (4096, 4, 1.5, 8),   # the first cohort's shortest program ends 50 steps in: 2.4 MiB > 1.5
    (3000, 3, 1.2, 6),   # N not a multiple of the tiles
])
def test_fa2_causal_stream_restarts_follow_the_simulation(
        h200, n: int, heads: int, mib: float, programs: int) -> None:  # type: ignore[no-untyped-def]
    """FA2's causal backward walks the query blocks down: when the first cohort's shortest
    program ends, the next one restarts on the last block after the L2 lost it and reads its
    sweep again (l2_restarts.py). The tile-by-tile LRU simulation shows it (more than 1.5
    passes over Q, dO, dQaccum where one pass per head was the earlier closed form), and the
    closed form now follows it within 2 %."""
    w = Workload(n, d=64, heads=heads, causal=True, pass_="bwd")
    kernels = [k for k in get_algorithm("flash2").kernels(w) if k.loop is not None]
    assert all(k.inner_descending for k in kernels)
    t = _tiling(64, 128)
    with _ideal_lru():
        closed = dram_estimate(kernels, w, t, h200, concurrent_programs=programs,
                               l2_bytes=mib * MiB)
    simulated = simulate(kernels, w, t, l2_bytes=mib * MiB, concurrent_programs=programs)
    q_sim = {(term.tensor, term.op): term.bytes for term in simulated.terms}
    q_bytes = heads * n * 64 * 2
    assert q_sim[("Q", "read")] > 1.5 * q_bytes  # the restarts are in the model itself
    assert closed.bytes == pytest.approx(simulated.bytes, rel=0.02)


@pytest.mark.parametrize(("mib", "reads"), [(0.375, 1), (0.25, 4), (0.1, 4)])
def test_eager_mask_pass_rereads_its_broadcast_mask_as_the_simulation(
        h200, mib: float, reads: int) -> None:  # type: ignore[no-untyped-def]
    """Eager's causal mask pass reads one (N, N_kv) bool mask for every (batch, head): held
    once while a head's stream (dS read, dS_masked written out of place, the mask: 320 KiB at
    N = 256) fits the L2, read again by each of the 4 heads when it does not (at 256 KiB: the
    stream fitted while the pass ran in place, 192 KiB), in the closed form as in the
    walk-driven LRU simulation."""
    p = {"n": 256, "d": 64, "heads": 4, "kv_heads": 4, "batch": 1, "causal": True,
         "dtype": "fp16"}
    w = F.workload_of(p)
    a = F.model(w, "eager", h200)
    mask = [k for k in F.launched(w, "eager", a) if k.name == "bwd_mask"]
    closed = dram_estimate(mask, w, a.tiling, h200, l2_bytes=mib * MiB, concurrent_programs=132)
    simulated = simulate(mask, w, a.tiling, l2_bytes=mib * MiB, concurrent_programs=132)
    assert [(t.tensor, t.bytes) for t in closed.terms] == [
        (t.tensor, t.bytes) for t in simulated.terms]
    assert {t.tensor: t.bytes for t in closed.terms}["mask"] == reads * 256 * 256


def test_fa2_backward_uses_its_own_occupancy(h200) -> None:  # type: ignore[no-untyped-def]
    """FA2's d = 128 backward holds one 64 × 128 program per SM (144 KiB of shared memory):
    132 at once on the H200, not the forward's count."""
    w = Workload(8192, d=128, heads=16, batch=2, pass_="bwd")
    a = compare(w, h200, impl="sdpa-flash").algorithms[1]
    assert a.tiling is not None and a.tiling.bwd_programs_per_sm == 1
    assert a.dram is not None and not a.dram.unmodelled_kernels


# --- the records ------------------------------------------------------------------------------


def test_every_sdpa_and_eager_run_maps_onto_the_loop_nest(records: list, rows: list) -> None:
    """ncu's launches, in order, are iosim's kernels (dataflow checked by position and count;
    dram_comparison refuses a mismatch)."""
    runs = list(F.items(records))
    assert {what for _, what, _ in runs} == {"sdpa", "eager"}
    assert len(runs) >= 90
    assert {r.kernel for r in rows if r.what == "sdpa"} >= {
        "bwd_copy_dO", "bwd_copy_O", "bwd_dot_do_o", "bwd_attn", "bwd_convert_dq", "bwd_sum_dkdv"}


def test_the_torch_record_varies_every_axis(records: list) -> None:
    points = [p for p in records[1]["points"] if p["split"] == "judge"]
    assert any(p.get("n_kv") not in (None, p["n"]) for p in points)
    assert any(p["n"] % 128 for p in points) and any(p["kv_heads"] == 1 for p in points)
    assert {p["d"] for p in points} == {64, 128} and {p["dtype"] for p in points} == {"fp16", "bf16"}
    assert any(p["causal"] for p in points)
    assert any(p["batch"] * p["heads"] <= 4 for p in points)
    eager = [p for p in records[1]["points"] if "eager_s" in p]
    assert max(max(p["agree_eager"].values()) for p in eager) < 1e-2  # eager = SDPA's gradients


def test_fa2_dram_estimate_on_the_h200(rows: list) -> None:
    """Measured (the records): FA2's kernels of ≥ 50 MB within ±10 % of ncu at 221 of 252;
    the non-causal main kernels, where the waves' re-reads of Q, dO and dQaccum decide, within
    ±18 % at every point (worst: N = 2048, d = 64, 32 heads, −17.4 %; the d = 128 ones at
    N = 8192 read 12-14 % more than the model's one pass per head)."""
    sdpa = [r for r in rows if r.what == "sdpa"]
    ok, n = F.within(sdpa)
    assert n >= 240 and ok >= 0.85 * n
    main = [r for r in sdpa if r.kernel == "bwd_attn" and "/full" in r.point and r.measured >= F.BIG]
    assert len(main) >= 30
    assert max(abs(r.error) for r in main) <= 0.18
    totals = F.per_backward(sdpa)  # the whole backward of each run: 74 of 80 within ±10 %
    assert len(totals) >= 78 and sum(abs(e) <= 0.10 for e in totals.values()) >= 0.9 * len(totals)


def test_eager_dram_estimate_on_the_h200(records: list, rows: list, h200) -> None:  # type: ignore[no-untyped-def]
    """Eager's N×N passes (matmuls, the two softmax passes, scale, the causal mask pass with
    its broadcast bool mask), where P of the batch is over twice the L2: within ±10 % wherever
    they are ≥ 50 MB, but for dP = dO Vᵀ (up to −14 %) and the GQA sum's two reduce kernels
    (−15 %). Where P stays in L2 the per-kernel
    split of the write-backs moves (−43 % to +20 % per kernel, a few tens of MB): reported,
    not bounded."""
    size = {p["id"]: p["batch"] * p["heads"] * p["n"] * (p.get("n_kv") or p["n"]) * 2
            for r in records for p in r["points"]}
    eager = [r for r in rows if r.what == "eager" and r.measured >= F.BIG
             and size[r.point] > 2 * h200.l2_bytes]
    outside = [r for r in eager if abs(r.error) > 0.10]
    assert len(eager) >= 120
    assert all(r.kernel in ("bwd_dp", "bwd_sum_dkdv") and r.error > -0.17
               for r in outside), outside


def test_sdpa_time_fit_is_the_shipped_calibration_and_holds_out(records: list, h200) -> None:  # type: ignore[no-untyped-def]
    """The shipped constants are the fit's optimum (no neighbour on its fine grid fits the
    `fit` points better; the full grid search is `python -m iosim.calibrate.torch_bwd_fit`),
    and every judged point above 0.2 ms is within ±15 %."""
    best = F.fit_loss(records, "sdpa", h200, F.SDPA_TIME)
    s = F.SDPA_TIME
    for nearby in (replace(s, efficiency=s.efficiency + 0.02), replace(s, efficiency=s.efficiency - 0.02),
                   replace(s, overhead_s=s.overhead_s + 2e-6), replace(s, overhead_s=s.overhead_s - 2e-6),
                   replace(s, call_s=s.call_s + 3e-6), replace(s, call_s=s.call_s - 3e-6)):
        assert F.fit_loss(records, "sdpa", h200, nearby) >= best
    shipped = dict(h200.measured.impls["sdpa-flash"].backward)
    shipped.pop("memory")  # the forward memory efficiency the fit ran at, kept with it
    assert shipped == pytest.approx({"efficiency": F.SDPA_TIME.efficiency,
                                     "program_overhead_s": F.SDPA_TIME.overhead_s,
                                     "call_overhead_s": F.SDPA_TIME.call_s})
    judged = [p for p, split in F.timed(records, "sdpa")
              if split == "judge" and p["sdpa_s"] >= F.LAUNCH_BOUND_S]
    assert len(judged) >= 60
    for p in judged:
        t = F.predict_time(p, "sdpa", h200, F.SDPA_TIME)
        assert abs(t - p["sdpa_s"]) <= 0.15 * p["sdpa_s"], p["id"]


def test_compare_measured_uses_the_backward_calibration(h200) -> None:  # type: ignore[no-untyped-def]
    """compare --impl sdpa-flash --pass bwd --profile measured is the fitted model: its time is
    the one the fit judged (fp16, N = 8192, d = 128, 2 × 16 heads: 9.134 ms measured)."""
    w = Workload(8192, d=128, heads=16, batch=2, pass_="bwd")
    a = compare(w, h200, impl="sdpa-flash", profile="measured").algorithms[1]
    p = {"n": 8192, "d": 128, "heads": 16, "kv_heads": 16, "batch": 2, "causal": False,
         "dtype": "fp16"}
    assert a.time_s + a.call_overhead_s == pytest.approx(F.predict_time(p, "sdpa", h200,
                                                                        F.SDPA_TIME))
    assert abs(a.time_s + a.call_overhead_s - 9.134e-3) <= 0.15 * 9.134e-3


def test_a_broken_record_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"what": "no points"}))
    with pytest.raises(CalibrationError, match="not a backward record"):
        F.load([bad])
    assert F.main([str(bad)]) == 2


def test_a_bad_backward_calibration_is_refused(tmp_path: Path) -> None:
    text = (config_dir() / "h200.yaml").read_text()
    bad = tmp_path / "x.yaml"
    bad.write_text(text.replace("backward: {efficiency: 0.52", "backward: {efficiency: 7"))
    with pytest.raises(ConfigError, match=r"measured\.impls\.sdpa-flash\.backward\.efficiency"):
        load_hardware(bad)


def test_unaligned_constants_are_their_fit(records: list, h200) -> None:  # type: ignore[no-untyped-def]
    """N % 8 != 0: the fallback GEMMs' streaming rates (and the first rule's efficiencies) and
    the non-shared-memory softmax's efficiency are fitted on UNALIGNED_FIT's ncu kernel times
    (fit points, not judged)."""
    gemm, softmax, rate = F.fit_unaligned(records, h200)
    assert gemm == pytest.approx(U.FALLBACK_GEMM_EFFICIENCY, abs=0.005)
    assert softmax == pytest.approx(U.SOFTMAX_UNALIGNED_EFFICIENCY, abs=0.005)
    assert rate == pytest.approx(U.FALLBACK_GEMM_BYTES_PER_S, rel=0.005)
    assert U.unaligned_class(4096) is None and U.unaligned_class(12345) == "odd"
    assert U.unaligned_class(2500) == "even"


def test_eager_time_where_its_kernels_are_the_modelled_ones(records: list, h200) -> None:  # type: ignore[no-untyped-def]
    """Eager's backward time (this report's model, fitted on the `fit` points; the mask pass
    at MASK_EFFICIENCY, fitted on their ncu kernel times) within ±20 % at every judged point
    whose N×N matrices overflow the L2 and whose N is a multiple of 8. The others are the
    known misses: P in L2 (matmuls read it from L2: +39 %, −31 %) and N % 8 ≠ 0 (cuBLAS's
    fallback kernels and the non-shared-memory softmax: −34 %, −55 %)."""
    assert F.fit_mask_efficiency(records, h200) == pytest.approx(F.MASK_EFFICIENCY, abs=0.01)
    tm = F.EAGER_TIME  # = fit_time(records, "eager", h200) (3 s: the report checks it)
    judged = [p for p, split in F.timed(records, "eager") if split == "judge"
              and p["eager_s"] >= F.LAUNCH_BOUND_S and p["n"] % 8 == 0
              and p["batch"] * p["heads"] * p["n"] * (p.get("n_kv") or p["n"]) * 2
              > 2 * h200.l2_bytes]
    assert len(judged) >= 12
    for p in judged:
        t = F.predict_time(p, "eager", h200, tm)
        assert abs(t - p["eager_s"]) <= 0.20 * p["eager_s"], p["id"]
