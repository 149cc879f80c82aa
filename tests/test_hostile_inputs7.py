"""Hostile input files (review 7): measurement records for `roofline --record` and `calibrate
--impl --from`, GPU and model YAMLs by path, and files that are no files. One `Error:` line,
exit 2, never a wait; each test failed on 32ef341 (the failure is in its comment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iosim.inputs.gpus import config_dir
from iosim.inputs.model_files import models_dir
from tests.hostile import assert_clean, invoke

DATA = Path(__file__).parent / "data"
MEASURE_LINES = (DATA / "h200-measure.jsonl").read_text(encoding="utf-8").splitlines()
H200 = (config_dir() / "h200.yaml").read_text(encoding="utf-8")
GEMMA = (models_dir() / "gemma-2-2b.yaml").read_text(encoding="utf-8")
SHAPE = ["--gpu", "h200", "--impl", "sdpa-flash", "--n", "4096", "--d", "128", "--heads", "32",
         "--batch", "2"]


def _both_readers(tmp_path: Path, text: str) -> list[str]:
    """The errors of roofline --record and calibrate --impl --from on one record."""
    record = tmp_path / "rec.jsonl"
    record.write_text(text, encoding="utf-8")
    errors = []
    for args in (["roofline", *SHAPE, "--record", str(record), "--out", str(tmp_path / "fig")],
                 ["calibrate", "--gpu", "h200", "--out", str(tmp_path / "o.yaml"), "--impl",
                  "sdpa-flash", "--from", str(record)]):
        outcome = invoke(args)
        assert_clean(outcome, args)
        assert outcome.code == 2, (args[0], outcome.err or outcome.out[:300])
        errors.append(outcome.err)
    assert not (tmp_path / "fig").exists() and not (tmp_path / "o.yaml").exists()
    return errors


def _point(**changes: object) -> str:
    point = json.loads(MEASURE_LINES[0])
    point.update(changes)
    return json.dumps(point) + "\n"


@pytest.mark.parametrize(("workload_change", "needle"), [
    ({"n": True}, "whole number"),     # before: roofline took it, "no point at N 4096"
    ({"n": 4096.5}, "whole number"),   # before: roofline took it
    ({"d": 10**400}, "67,108,864"),    # before: roofline took it
])
def test_a_measure_point_s_workload_is_checked_by_both_readers(tmp_path: Path,
                                                               workload_change: dict,
                                                               needle: str) -> None:
    workload = {**json.loads(MEASURE_LINES[0])["workload"], **workload_change}
    for err in _both_readers(tmp_path, _point(workload=workload)):
        assert "line 1: workload" in err or "point 0" in err, err
        assert "'" not in err.split(":")[-1][:2], err  # the reason unquoted (was 'n must ...')


def test_a_measured_time_of_1e308_s_is_refused(tmp_path: Path) -> None:
    # before: roofline drew the point at 10^308 s
    for err in _both_readers(tmp_path, _point(measured_time_s=1e308)):
        assert "measured_time_s must be seconds in (0, 60)" in err or "time_s" in err, err


def test_a_key_twice_in_a_record_is_refused(tmp_path: Path) -> None:
    # before: json kept the second measured_time_s and both readers went on
    line = MEASURE_LINES[0][:-1] + ', "measured_time_s": 0.5}\n'
    for err in _both_readers(tmp_path, line):
        assert "'measured_time_s' appears twice" in err, err


def test_an_empty_record_says_so(tmp_path: Path) -> None:
    # before: roofline said "not valid JSON (line 1: Expecting value)"
    for err in _both_readers(tmp_path, "\n  \n"):
        assert "is empty" in err, err


@pytest.mark.parametrize("flag", ["roofline --record", "calibrate --from", "--gpu", "--model"])
def test_a_fifo_given_as_an_input_file_is_refused_not_waited_on(tmp_path: Path,
                                                                flag: str) -> None:
    # before: roofline --record and calibrate --from hung in open() until a writer came; a
    # FIFO --gpu or --model was "no such hardware file"
    fifo = tmp_path / "input.yaml"
    os.mkfifo(fifo)
    args = {"roofline --record": ["roofline", *SHAPE, "--record", str(fifo), "--out",
                                  str(tmp_path / "fig")],
            "calibrate --from": ["calibrate", "--gpu", "h200", "--out", str(tmp_path / "o.yaml"),
                                 "--from", str(fifo)],
            "--gpu": ["compare", "--gpu", str(fifo), "--n", "64"],
            "--model": ["compare", "--gpu", "h100", "--model", str(fifo), "--n", "64"]}[flag]
    done = subprocess.run([sys.executable, "-m", "iosim", *args], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "not a regular file" in done.stderr, done.stderr


@pytest.mark.parametrize(("old", "new", "key"), [
    # before: call_overhead_s: null was taken as no call overhead
    ("call_overhead_s: 1.55e-05", "call_overhead_s: null",
     "measured.impls.sdpa-flash.call_overhead_s"),
    ("call_overhead_s: 1.55e-05", "call_overhead_s:", "measured.impls.sdpa-flash.call_overhead_s"),
])
def test_an_empty_value_in_a_gpu_yaml_is_named(tmp_path: Path, old: str, new: str,
                                               key: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(H200.replace(old, new, 1), encoding="utf-8")
    args = ["compare", "--gpu", str(path), "--n", "4096", "--d", "128", "--profile", "measured",
            "--impl", "sdpa-flash"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and f"{key}: is empty (null)" in outcome.err, outcome.err


def test_a_model_layer_with_window_null_is_not_silently_full_attention(tmp_path: Path) -> None:
    # before: Gemma's local layers with `window: null` (as Hugging Face writes no window) were
    # counted as full attention
    path = tmp_path / "gemma.yaml"
    path.write_text(GEMMA.replace("window: 4096", "window: null", 1), encoding="utf-8")
    args = ["compare", "--gpu", "h200", "--model", str(path), "--n", "8192"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and "layers[0].window: is empty (null)" in outcome.err, outcome.err


@pytest.mark.parametrize("per_sm", ["{64: 99999999999999999999, 128: 1}", "{64: 33, 128: 1}",
                                    "{0: 2, 128: 1}"])
def test_programs_per_sm_are_within_what_an_sm_holds(tmp_path: Path, per_sm: str) -> None:
    # before: 10^20 programs per SM were accepted (CUDA keeps at most 32 resident)
    path = tmp_path / "mine.yaml"
    path.write_text(H200.replace("programs_per_sm: {64: 2, 128: 1}",
                                 f"programs_per_sm: {per_sm}", 1), encoding="utf-8")
    args = ["compare", "--gpu", str(path), "--n", "4096", "--d", "64", "--pass", "bwd",
            "--algo", "triton", "--profile", "measured"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and "programs_per_sm" in outcome.err and "1 to 32" in outcome.err
