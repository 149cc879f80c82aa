"""`iosim calibrate --impl`: fitting implementations into the GPU YAML's measured.impls, from the
committed H200 record (tests/data/h200-impl-fit.json, `benchmarks/impl_validation_h200.py
/root/out/h200-impl-fit.json 120 fit` on the lent H200, torch 2.11.0+cu130; the command is in the
file) and, for the GPU path, with a fake runner on the CPU; the refusals; and that rewriting a
YAML keeps every key of `measured:` a fit does not own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iosim.analysis.compare import compare
from iosim.calibrate.impl_run import FIT_GRID, Runner, measure_impls, workload_record
from iosim.errors import ConfigError
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import ImplCalibration
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.impl_calibration import with_impl_calibration
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from tests.conftest import run_cli as run

DATA = Path(__file__).parent / "data"
FIT_RECORD = DATA / "h200-impl-fit.json"
GPU_RECORD = DATA / "h200-calibration.json"
H200 = resolve_hardware("h200").hardware


def _measured(path: Path) -> Any:
    measured = load_hardware(path).measured
    assert measured is not None
    return measured


def test_the_fit_from_the_committed_record_gives_the_shipped_figures(tmp_path: Path) -> None:
    """The shipped measured.impls of configs/gpus/h200.yaml are this command's output on the
    committed record; the figures no forward fit writes (sdpa-flash's backward, the GPU's own
    fit, the paged-KV table) are kept."""
    out = tmp_path / "h200.yaml"
    code, stdout, err = run("calibrate", "--gpu", "h200", "--out", str(out), "--impl", "all",
                            "--from", str(FIT_RECORD))
    assert (code, err) == (0, "")
    new, shipped = _measured(out), H200.measured
    assert shipped is not None and set(new.impls) == set(shipped.impls)
    for name, entry in shipped.impls.items():
        assert new.impls[name].efficiency == entry.efficiency, name
        assert new.impls[name].call_overhead_s == entry.call_overhead_s, name
        assert new.impls[name].backward == entry.backward, name
        assert f"{name} " in stdout
    assert new.impls["sdpa-flash"].backward  # the backward fit kept
    assert new.paged_kv_efficiency == shipped.paged_kv_efficiency
    assert new.backward_schedule == shipped.backward_schedule
    assert new.kernel_efficiency == shipped.kernel_efficiency
    assert "tests/data/h200-impl-fit.json" in new.impls["flex"].source


def test_the_gpu_calibration_keeps_the_keys_it_does_not_fit(tmp_path: Path) -> None:
    """`calibrate --gpu h200` rewriting the YAML used to drop measured.paged_kv_efficiency and
    backward_schedule (and now measured.impls): kept, value for value, and said so."""
    out = tmp_path / "h200.yaml"
    code, _, err = run("calibrate", "--gpu", "h200", "--out", str(out), "--from", str(GPU_RECORD))
    assert code == 0
    assert err.startswith("Warning: kept measured.backward_schedule, "
                          "measured.paged_kv_efficiency, measured.impls of ")
    new, shipped = _measured(out), H200.measured
    assert shipped is not None
    assert new.paged_kv_efficiency == shipped.paged_kv_efficiency
    assert new.paged_kv_source == shipped.paged_kv_source
    assert new.backward_schedule == shipped.backward_schedule
    assert new.impls == shipped.impls
    # and the file a second fit writes from it is the same file
    again = tmp_path / "again.yaml"
    code, _, _ = run("calibrate", "--gpu", str(out), "--out", str(again), "--from", str(GPU_RECORD))
    assert code == 0 and again.read_text() == out.read_text()


def _fake_runner(h200_unit: Any, refuse: set[int]) -> Runner:
    """Every point takes twice what the unit-efficiency profile predicts (no host time), so
    the fit must find efficiency 0.5; the points in `refuse` are refused as torch would."""
    def check(impl: Any, w: Workload) -> float:
        if FIT_GRID.index(w) in refuse:
            raise RuntimeError("No available kernel. Aborting execution.")
        return 1e-3

    def time(impl: Any, w: Workload) -> tuple[float, list[dict[str, Any]]]:
        a = compare(w, h200_unit, impl=impl, profile="measured").algorithms[-1]
        return 2 * a.time_s, [{"name": "fake", "time_s": 2 * a.time_s}]
    return Runner(check, time)


def test_the_gpu_path_measures_records_and_fits_through_a_runner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path with a fake runner (the CPU has no GPU): every grid point checked, then
    timed, refusals recorded, the record written beside --out, the fit from it."""
    unit = with_impl_calibration(H200, "sdpa-flash",
                                 ImplCalibration({"fused": 1.0, "memory": 1.0}, "unit"))
    runner = _fake_runner(unit, refuse={3})
    impl = get_implementation("sdpa-flash")
    record = measure_impls([impl], runner, device={"name": "NVIDIA H200", "torch": "fake"},
                           command="test")
    assert [p["workload"] for p in record["points"]] == [workload_record(w) for w in FIT_GRID]
    assert "refused" in record["points"][3] and "time_s" not in record["points"][3]
    monkeypatch.setattr("iosim.cli.calibrate_impl.measure_on_gpu",
                        lambda impls, budget: record)
    out = tmp_path / "h200.yaml"
    code, stdout, err = run("calibrate", "--gpu", "h200", "--out", str(out), "--impl",
                            "sdpa-flash")
    assert (code, err) == (0, "")
    written = json.loads((tmp_path / "h200.impl-record.json").read_text())
    assert written == record
    fitted = _measured(out).impls["sdpa-flash"]
    assert fitted.efficiency["fused"] == pytest.approx(0.5, abs=2e-3)
    assert fitted.call_overhead_s == 0.0
    assert "13 points" in stdout  # 14 grid points, one refused


def test_the_budget_stops_starting_points() -> None:
    impl = get_implementation("sdpa-flash")
    calls: list[Workload] = []

    def slow_time(i: Any, w: Workload) -> tuple[float, list[dict[str, Any]]]:
        calls.append(w)
        import time
        time.sleep(0.02)
        return 1e-3, []
    record = measure_impls([impl], Runner(lambda i, w: 0.0, slow_time),
                           device={"name": "x"}, command="test", budget_s=0.01)
    assert len(calls) == 1 and "budget of 0 s reached at sdpa-flash #1" in record["stopped_early"]


def test_the_fit_grid_varies_every_acceptance_axis_and_holds_out_the_validation_set() -> None:
    """Issue 11's acceptance axes, each present in FIT_GRID; none of its shapes is one of
    benchmarks/impl_validation_h200.py's VALIDATION points (the held-out set)."""
    from benchmarks.impl_validation_h200 import VALIDATION

    assert not set(FIT_GRID) & set(VALIDATION)
    sms = H200.sm_count or 0
    l2 = H200.l2_bytes or 0
    assert any(w.batch * w.heads * -(-w.n // 128) < sms and w.n > 1 for w in FIT_GRID)
    assert any(w.group_size > 1 for w in FIT_GRID if w.n > 1)
    assert any(w.n & (w.n - 1) for w in FIT_GRID if w.n > 1)
    assert any(1 < w.n != w.n_kv for w in FIT_GRID)
    assert {w.d for w in FIT_GRID} == {64, 128, 256}
    assert {w.dtype for w in FIT_GRID} == {"fp16", "bf16"}
    assert any(w.causal for w in FIT_GRID)
    assert max(w.n_kv for w in FIT_GRID if w.n == 1) >= 65536
    kv_bytes = [2 * w.batch * w.kv_heads * w.n_kv * w.d * w.element_bytes for w in FIT_GRID]
    assert any(b > l2 for b, w in zip(kv_bytes, FIT_GRID, strict=True) if w.n > 1)
    assert any(b > l2 for b, w in zip(kv_bytes, FIT_GRID, strict=True) if w.n == 1)


# --- refusals: one line, exit 2 ------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "message"), [
    (["--impl", "nope"], "Error: unknown implementation 'nope'"),
    (["--impl", "sdpa-flash,,flex"], "Error: --impl 'sdpa-flash,,flex' has an empty entry"),
    (["--impl", "sdpa-flash,sdpa-flash"], "Error: --impl lists sdpa-flash twice"),
    (["--budget", "60"], "Error: --budget applies to --impl"),
    (["--impl", "flex", "--budget", "0"], "Error: Invalid value for '--budget'"),
    (["--impl", "flex", "--quick"], "Error: --quick belongs to the GPU calibration"),
    (["--impl", "flex", "--report", "r"], "Error: --report belongs to the GPU calibration"),
    (["--impl", "flex", "--counters"], "Error: --counters with --impl is not supported yet"),
    (["--impl", "flex", "--budget", "60", "--from", str(FIT_RECORD)],
     "Error: --budget limits a run on the GPU"),
    (["--impl", "flex", "--record", "r.json", "--from", str(FIT_RECORD)],
     "Error: --record names the file a GPU run writes"),
    (["--impl", "flex"], "Error: calibrate needs torch"),
])
def test_bad_flags_are_one_line(extra: list[str], message: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    monkeypatch.setitem(sys.modules, "torch", None)  # the CPU path: as if torch were absent
    code, _, err = run("calibrate", "--gpu", "h200", "--out", str(tmp_path / "o.yaml"),
                            *extra)
    assert code == 2 and err.startswith(message), err
    assert err.count("\n") == 1 or "Usage" in err
    assert not (tmp_path / "o.yaml").exists()


def test_bad_records_are_one_line(tmp_path: Path) -> None:
    out = str(tmp_path / "o.yaml")
    cases = {
        "x.json": ("{", "is not a readable JSON record"),
        "y.json": ('{"points": 3}', "is not an implementation record"),
        "z.json": (json.dumps({"points": [{"impl": "flex", "time_s": -1, "workload": {"n": 8}}]}),
                   "point 0 (flex): time_s must be seconds in (0, 60), got -1"),
        "w.json": (json.dumps({"points": [{"impl": "flex", "time_s": 1e-3,
                                           "workload": {"n": 8, "heads": 0}}]}),
                   "point 0 (flex): "),
        "e.jsonl": ("\n", "holds no measured points"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        code, _, err = run("calibrate", "--gpu", "h200", "--out", out, "--impl", "flex",
                           "--from", str(path))
        assert code == 2 and message in err and err.count("\n") == 1, (name, err)
    only_flash = tmp_path / "flash.json"
    record = json.loads(FIT_RECORD.read_text())
    record["points"] = [p for p in record["points"] if p["impl"] == "sdpa-flash"]
    only_flash.write_text(json.dumps(record))
    code, _, err = run("calibrate", "--gpu", "h200", "--out", out, "--impl", "flex", "--from",
                       str(only_flash))
    assert code == 2 and err.startswith(f"Error: {only_flash} holds no timed point of flex; "
                                        "record it on the GPU with `iosim calibrate --impl flex`")


def test_a_gpu_without_a_measured_section_and_an_existing_out(tmp_path: Path) -> None:
    out = tmp_path / "o.yaml"
    code, _, err = run("calibrate", "--gpu", "a100", "--out", str(out), "--impl", "flex",
                       "--from", str(FIT_RECORD))
    assert code == 2 and "has no measured section; run `iosim calibrate --gpu a100" in err
    out.write_text("keep me")
    code, _, err = run("calibrate", "--gpu", "h200", "--out", str(out), "--impl", "flex",
                       "--from", str(FIT_RECORD))
    assert code == 2 and "already exists; pass --force" in err and out.read_text() == "keep me"


def test_compare_without_the_entry_names_what_to_run(tmp_path: Path) -> None:
    text = Path(H200.path).read_text()
    path = tmp_path / "h200.yaml"
    path.write_text(text[:text.index("  impls:\n")])
    code, _, err = run("compare", "--gpu", str(path), "--n", "4096", "--impl", "sdpa-flash",
                       "--profile", "measured")
    assert code == 2 and err == (
        f"Error: {path} has no measured.impls entry for sdpa-flash (it has: none); run `iosim "
        f"calibrate --gpu h200 --impl sdpa-flash --out FILE` on that GPU (or with --from "
        f"RECORD, a record of `iosim measure --record`), or use --profile spec\n")


def test_an_implementation_yaml_with_a_calibration_block_is_refused(tmp_path: Path) -> None:
    text = (Path(get_implementation("flex").path)).read_text()
    path = tmp_path / "mine.yaml"
    path.write_text(text + "calibration:\n  h200:\n    efficiency: {fused: 0.5}\n")
    with pytest.raises(ConfigError, match=r"calibration: per-GPU fitted figures belong in the "
                                          r"GPU's YAML \(measured\.impls\.NAME"):
        get_implementation(str(path))


@pytest.mark.parametrize(("entry", "key"), [
    ("{efficiency: {fused: 2}, source: x}", "measured.impls.flex.efficiency.fused"),
    ("{efficiency: {fast: 1}, source: x}", "measured.impls.flex.efficiency.fast"),
    ("{efficiency: {fused: 0.5}}", "measured.impls.flex.source"),
    ("{efficiency: {fused: 0.5}, source: x, call_overhead_s: 1}",
     "measured.impls.flex.call_overhead_s"),
    ("{efficiency: {}, source: x}", "measured.impls.flex.efficiency"),
    ("{efficiency: {fused: 0.5}, source: x, colour: red}", "measured.impls.flex.colour"),
])
def test_a_bad_impls_entry_names_its_key(entry: str, key: str, tmp_path: Path) -> None:
    text = Path(H200.path).read_text()
    path = tmp_path / "h200.yaml"
    path.write_text(text[:text.index("  impls:\n")] + f"  impls:\n    flex: {entry}\n")
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_hardware(path)
