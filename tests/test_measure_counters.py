"""`iosim measure` with Nsight Compute (issue 11 item 5): per kernel, predicted beside measured
time, DRAM and L2 bytes; ncu missing, refused or failed is one line and the timing still
prints. The GPU and ncu are replaced by fakes here (their launches are structure, not results:
no number below is asserted as a measurement); the committed record's points are real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iosim.analysis.compare import compare
from iosim.calibrate import CalibrationError, impl_fit
from iosim.calibrate.measure_record import counted_kernels, read_points
from iosim.calibrate.ncu import EVICT, METRICS, ProfileRun, Started
from iosim.cli.measure_cmd import measurement_point
from iosim.inputs.workload import Workload
from iosim.output.render_measure import measurement_lines
from tests.conftest import DATA
from tests.conftest import run_cli as run

DECODE = Workload(1, n_kv=65536, d=128, heads=32, kv_heads=8)
SPLIT, COMBINE = "void pytorch_flash::flash_fwd_splitkv_kernel<T>(P)", "combine_kernel"


def _launch(name: str, read: float, write: float, l2: float) -> dict[str, Any]:
    return {"kernel": name, METRICS[0]: read, METRICS[1]: write, METRICS[2]: l2}


def _point(timed: list[tuple[str, float]], counters: dict[str, Any] | None) -> dict[str, Any]:
    """A point as measure builds it, around iosim's real prediction of the decode step."""
    estimate = compare(DECODE, "h200", impl="sdpa-flash", profile="measured").algorithms[-1]
    point = measurement_point("sdpa-flash", DECODE, "h200", "measured", estimate,
                              sum(t for _, t in timed),
                              [{"name": n, "time_s": t} for n, t in timed], 1e-4)
    if counters is not None:
        point["counters"] = counters
    return point


def _fake_gpu(monkeypatch: pytest.MonkeyPatch, launches: list[dict[str, Any]] | None,
              status: str = "ok", ncu: str | None = "/usr/bin/ncu") -> list[Any]:
    """measure's GPU steps replaced: no check, two kernels timed, ncu giving `launches`."""
    import iosim.calibrate.env as env
    import iosim.calibrate.impl_ncu as impl_ncu
    import iosim.calibrate.measure as measure
    import iosim.calibrate.ncu as ncu_module

    seen: list[Any] = []
    monkeypatch.setattr(env, "require_gpu", lambda what: None)
    monkeypatch.setattr(env, "device_info", lambda: {"name": "fake"})
    monkeypatch.setattr(measure, "check", lambda impl, w: 1e-4)
    monkeypatch.setattr(measure, "time_and_kernels", lambda impl, w: (
        9e-5, [{"name": SPLIT, "time_s": 8e-5}, {"name": COMBINE, "time_s": 1e-5}]))
    monkeypatch.setattr(ncu_module, "ncu_path", lambda: ncu)

    def profile(spec: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ProfileRun:
        seen.append(spec)
        return ProfileRun(status, "ncu ... SPEC MANIFEST", "Version 2025.3.1.0",
                          tuple(launches or ()))

    def start(spec: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Started:
        # measure starts ncu beside itself: the fake's run is over before it is read
        return Started(None, "", Path("/nonexistent/iosim-ncu-fake"), "", "", METRICS,
                       profile(spec))
    monkeypatch.setattr(impl_ncu, "profile", profile)
    monkeypatch.setattr(impl_ncu, "start_profile", start)
    return seen


DECODE_FLAGS = ("measure", "--gpu", "h200", "--impl", "sdpa-flash", "--n", "1", "--n-kv",
                "65536", "--d", "128", "--heads", "32", "--kv-heads", "8")
EVICT_ROW = _launch(EVICT, 5e8, 0.0, 5e8)


def test_measure_reads_ncu_per_kernel_and_records_it(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    launches = [EVICT_ROW, _launch(SPLIT, 2.6e8, 1e6, 2.7e8), _launch(COMBINE, 1e4, 2e3, 4e5),
                _launch(EVICT, 5e8, 3e5, 5e8)]
    seen = _fake_gpu(monkeypatch, launches)
    out = tmp_path / "m.jsonl"
    code, stdout, stderr = run(*DECODE_FLAGS, "--record", str(out))
    assert code == 0, stderr
    # the point ncu ran is the user's, named as the user named the implementation
    assert seen == [[{"id": "measure", "impl": "sdpa-flash", "workload": {
        "n": 1, "n_kv": 65536, "d": 128, "heads": 32, "kv_heads": 8, "batch": 1,
        "dtype": "fp16", "causal": False}}]]
    assert "ncu counters read (ncu 2025.3.1.0)" in stdout
    (point,) = read_points(out) or []
    counted = counted_kernels(point)
    # each kernel its own reads and writes; the closing evict's writes go to the last kernel
    assert counted == [{"name": SPLIT, "l2_bytes": 2.7e8, "dram_bytes": 2.6e8 + 1e6},
                       {"name": COMBINE, "l2_bytes": 4e5, "dram_bytes": 1e4 + 2e3 + 3e5}]
    assert stdout.endswith(f"recorded in {out}\n")
    assert all(len(line) <= 80 for line in stdout.splitlines()[:-1])
    # `calibrate --impl --from` reads the new lines as it read the old
    assert impl_fit.load_points(out)["points"][0]["time_s"] == 9e-5
    # where the wall time went (round 10): seconds since measure started, in order
    phases = json.loads(out.read_text())["phases_s"]
    assert list(phases)[:5] == ["predicted", "ncu_started", "checked", "ncu_ready", "timed"]
    assert "counted" in phases and all(v >= 0 for v in phases.values())


@pytest.mark.parametrize(("ncu", "status", "line"), [
    (None, "ok", "no ncu (Nsight Compute) on PATH: DRAM and L2 bytes not measured"),
    ("/x/ncu", "refused: ==ERROR== ERR_NVGPUCTRPERM - The user does not have permission",
     "ncu refused: no permission for GPU counters (ERR_NVGPUCTRPERM): run as root"),
    ("/x/ncu", "failed: ncu ran past 300 s", "ncu counters not read, failed: ncu ran past 300 s"),
])
def test_without_counters_one_line_says_why_and_the_time_still_prints(
        monkeypatch: pytest.MonkeyPatch, ncu: str | None, status: str, line: str) -> None:
    _fake_gpu(monkeypatch, [], status=status, ncu=ncu)
    code, stdout, _ = run(*DECODE_FLAGS)
    assert code == 0
    assert [x for x in stdout.splitlines() if "ncu" in x] == [line]
    assert "time (do_bench median)" in stdout


def test_no_counters_flag_runs_no_ncu(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _fake_gpu(monkeypatch, [])
    code, stdout, _ = run(*DECODE_FLAGS, "--no-counters")
    assert code == 0 and seen == []
    assert "ncu counters off (--no-counters)" in stdout


def test_launches_out_of_protocol_are_a_failure_not_a_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_gpu(monkeypatch, [_launch(SPLIT, 1.0, 1.0, 1.0)])  # no evict before it
    code, stdout, _ = run(*DECODE_FLAGS)
    assert code == 0
    assert "ncu counters not read, failed: the measured point: expected an evict" in stdout


def test_the_table_pairs_kernels_and_names_the_dram_gap() -> None:
    counters = {"status": "ok", "kernels": [
        {"name": SPLIT, "dram_read_bytes": 2e8, "dram_write_bytes": 0, "l2_bytes": 2.7e8},
        {"name": COMBINE, "dram_read_bytes": 1e6, "dram_write_bytes": 0, "l2_bytes": 1e6}],
        "closing_evict_write_bytes": 0}
    point = _point([(SPLIT, 8e-5), (COMBINE, 1e-5)], counters)
    lines = measurement_lines(point)
    assert all(len(line) <= 80 for line in lines)
    predicted = point["predicted_kernels"]
    assert lines[3].startswith(f"{predicted[0]['label']} · flash_fwd_splitkv_kernel")
    assert lines[7].startswith(f"{predicted[1]['label']} · combine_kernel")
    assert any(line.startswith("DRAM per kernel: ncu's count while it ran") for line in lines)
    # the call's DRAM is off by more than 15 %: the line names it and the kernel of the
    # largest gap in bytes (the split pass), not the combine's larger share
    total = (sum(p["dram_bytes"] for p in predicted) - 2.01e8) / 2.01e8
    model = lines.index(next(x for x in lines if x.startswith("model:")))
    text = " ".join(lines[model:])
    assert f"DRAM bytes {total:+.0%} for the call, the largest gap on " \
           f"{predicted[0]['label']}" in text


def test_unpaired_launches_are_listed_with_the_prediction_named() -> None:
    point = _point([("a", 3e-5), ("b", 3e-5), ("c", 3e-5)], None)
    lines = measurement_lines(point)
    assert "3 kernels measured, 2 kernels predicted" in lines[0]
    assert any(x.startswith("predicted: split-KV attn, combine splits") for x in lines)
    assert all(len(line) <= 80 for line in lines)


def test_the_committed_time_only_points_still_read_and_render() -> None:
    points = read_points(DATA / "h200-measure.jsonl")
    assert points is not None and len(points) >= 2
    assert counted_kernels(points[0]) is None  # recorded before measure read ncu
    for p in points:
        assert all(len(line) <= 80 for line in measurement_lines(p))
    assert len(impl_fit.load_points(DATA / "h200-measure.jsonl")["points"]) == len(points)


@pytest.mark.parametrize(("text", "says"), [
    ('{"schema": "iosim.measure/1"}\n', "line 1: workload must name"),
    (json.dumps({**_point([("a", 1e-4), ("b", 1e-5)], None)}) + "\n{oops\n",
     "line 2: not valid JSON"),
])
def test_a_broken_measure_record_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    if says.startswith("line 1"):
        # a first line that says it is a measure point: its fault is named (review5), not
        # read as another kind of record
        with pytest.raises(CalibrationError, match=says):
            read_points(path)
        return
    code, _, stderr = run("roofline", "--gpu", "h200", "--n", "1", "--n-kv", "65536",
                          "--record", str(path), "--out", str(tmp_path))
    assert code == 2 and stderr.count("\n") == 1 and says in stderr


def _counted_points() -> list[dict[str, Any]]:
    """The committed record's points with ncu counters: benchmarks/measure_ncu_h200.sh on the
    H200 (benchmarks/NOTES.md, helper measure5)."""
    return [p for p in read_points(DATA / "h200-measure.jsonl") or []
            if counted_kernels(p) is not None]


def test_sdpa_flash_tiles_are_the_template_arguments_ncu_recorded() -> None:
    """Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, ...> in each launch ncu
    profiled (FlashAttention-2's kernel_traits.h) against the profile's tiles at that shape."""
    import re

    checked = 0
    for p in _counted_points():
        if p["impl"] != "sdpa-flash":
            continue
        w = Workload(**p["workload"])
        a = compare(w, "h200", impl="sdpa-flash", profile="measured").algorithm("sdpa-flash")
        assert a.tiling is not None
        first = p["counters"]["kernels"][0]["name"]
        traits = re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+), (\d+)", first)
        assert traits is not None, first
        d, block_m, block_n, _ = (int(x) for x in traits.groups())
        assert (d, block_m, block_n) == (w.d, a.tiling.block_q, a.tiling.block_kv), (w, first)
        # and the launches are the kernels the profile declares (split-KV: split, combine)
        assert len(p["counters"]["kernels"]) == len(a.kernels)
        checked += 1
    assert checked == 3


def test_the_committed_counters_sum_to_the_calls_dram() -> None:
    """Per kernel reads + writes, the closing evict's write-backs on the last: the kernels add
    up to every byte ncu counted between the two evicts and in the second's writes."""
    for p in _counted_points():
        c = p["counters"]
        everything = sum(k["dram_read_bytes"] + k["dram_write_bytes"] for k in c["kernels"]) \
            + c["closing_evict_write_bytes"]
        assert sum(k["dram_bytes"] for k in counted_kernels(p) or []) == everything


def test_when_ncu_and_the_profiler_disagree_only_the_call_is_compared() -> None:
    counters = {"status": "ok", "kernels": [
        {"name": n, "dram_read_bytes": 1e8, "dram_write_bytes": 0, "l2_bytes": 1e8}
        for n in ("memset", SPLIT, COMBINE)], "closing_evict_write_bytes": 0}
    lines = measurement_lines(_point([(SPLIT, 8e-5), (COMBINE, 1e-5)], counters))
    assert "ncu saw 3 kernels, torch.profiler 2: bytes for the call only" in lines
    dram = [line for line in lines if line.startswith("  DRAM bytes")]
    assert [line.split()[-2] for line in dram] == ["—", "—", "MB"]  # only the total measured
