"""Hostile input against what landed on 2026-12-01 (review5): measure records read by roofline,
measure --record, --splits auto with --pass, the sweep table's splits column, spill rows of a
user's implementation YAML, and output that cannot be written. Each test failed before its fix.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iosim.analysis.compare import compare
from iosim.calibrate.measure_record import measured_kernels_of, read_points
from iosim.inputs.workload import Workload
from tests.hostile import assert_clean, invoke

DATA = Path(__file__).parent / "data"
MEASURE = DATA / "h200-measure.jsonl"
SHAPE = ["--gpu", "h200", "--impl", "sdpa-flash", "--n", "4096", "--d", "128", "--heads", "32",
         "--batch", "2"]
DECODE = ["--gpu", "h200", "--n", "1", "--n-kv", "4096", "--d", "128", "--heads", "32",
          "--kv-heads", "8"]


def _points() -> list[dict]:
    return [json.loads(line) for line in MEASURE.read_text(encoding="utf-8").splitlines()]


def test_a_first_point_with_a_negative_kernel_time_is_named(tmp_path: Path) -> None:
    # before: the first line's fault sent the file to the calibration reader, which said
    # "not valid JSON (line 2: Extra data)"
    point = _points()[0]
    point["measured_kernels"][0]["time_s"] = -0.0015
    record = tmp_path / "neg.jsonl"
    record.write_text(json.dumps(point) + "\n" + json.dumps(_points()[2]) + "\n",
                      encoding="utf-8")
    args = ["roofline", *SHAPE, "--record", str(record), "--out", str(tmp_path / "fig")]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2
    assert "line 1: measured_kernels" in outcome.err and "negative" in outcome.err
    assert not (tmp_path / "fig").exists()


def test_read_points_takes_a_str_path() -> None:
    assert read_points(str(MEASURE)) == read_points(MEASURE)  # was AttributeError: str.open


def test_counters_that_do_not_pair_leave_time_only_dots() -> None:
    # the decode point: torch.profiler timed 2 kernels, iosim predicts 2; ncu's list cut to 1.
    # before: no dots at all, and a line saying the 2 kernels "do not pair with the 2 predicted"
    point = _points()[3]
    assert point["counters"]["status"] == "ok" and len(point["measured_kernels"]) == 2
    point["counters"]["kernels"] = point["counters"]["kernels"][:1]
    w = Workload(**point["workload"])
    kernels = measured_kernels_of(point, compare(w, "h200", impl="sdpa-flash"), "sdpa-flash")
    assert [k.time_s for k in kernels] == [m["time_s"] for m in point["measured_kernels"]]
    assert all(k.dram_bytes is None and k.l2_bytes is None for k in kernels)


def test_roofline_says_why_a_point_is_time_only(tmp_path: Path) -> None:
    point = _points()[3]
    point["counters"]["kernels"] = point["counters"]["kernels"][:1]
    record = tmp_path / "cut.jsonl"
    record.write_text(json.dumps(point) + "\n", encoding="utf-8")
    from iosim.cli.roofline_cmd import _measured

    w = Workload(**point["workload"])
    kernels, note = _measured(record, compare(w, "h200", impl="sdpa-flash"), "sdpa-flash")
    assert len(kernels) == 2
    assert note is not None and "ncu counted 1 kernel," in note and "timed 2" in note


@pytest.mark.parametrize("content", [
    (DATA / "h200-calibration-quick.json").read_bytes(),  # another kind of record
    b"my notes\n",
    MEASURE.read_bytes()[:700],  # a point cut short, no newline
    MEASURE.read_bytes().rstrip(b"\n"),  # whole points, the last newline gone
])
def test_measure_record_refuses_a_file_it_would_spoil(tmp_path: Path, content: bytes) -> None:
    # before: nothing was checked until after the run, which then appended to the file
    record = tmp_path / "mine.json"
    record.write_bytes(content)
    args = ["measure", *SHAPE, "--record", str(record)]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and "--record" in outcome.err, outcome.err
    assert "CUDA" not in outcome.err  # refused before looking for a GPU
    assert record.read_bytes() == content


def test_measure_record_accepts_a_measure_record_or_a_new_file(tmp_path: Path) -> None:
    from iosim.cli.measure_cmd import check_record_target

    check_record_target(MEASURE)
    check_record_target(tmp_path / "new.jsonl")
    assert not (tmp_path / "new.jsonl").exists()


@pytest.mark.parametrize("command", [["compare", *DECODE], ["sweep", *DECODE]])
def test_splits_auto_with_a_backward_pass_names_the_pass(command: list[str]) -> None:
    # before: "--splits auto applies to splitkv; add it to --algo": splitkv has no backward
    args = [*command, "--splits", "auto", "--pass", "bwd"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and "--pass fwd" in outcome.err and "--algo" not in outcome.err


def test_the_sweep_table_shows_the_split_counts_it_varies() -> None:
    # before: --splits 1,auto printed two rows per point that no column told apart (80 columns)
    args = ["sweep", *DECODE, "--algo", "splitkv", "--splits", "1,auto"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    header = next(line for line in outcome.out.splitlines() if "B_r×B_c" in line)
    assert "splits" in header.split()
    rows = [line.split() for line in outcome.out.splitlines() if line.strip().startswith("splitkv")]
    assert len(rows) == 2 and rows[0][3] != rows[1][3]  # 1 and the chosen count
    assert len(header) <= 80


def test_a_spill_row_that_would_never_be_used_is_refused(tmp_path: Path) -> None:
    # spill_for takes the first row whose d_max covers d: a row after a wider one was dead,
    # and d = 64 silently took the d_max 256 row's bytes
    text = (Path(__file__).parents[1] / "configs/impls/sdpa-flash.yaml").read_text("utf-8")
    start, end = text.index("spills:\n"), text.index("backward_tiles:")
    yaml = tmp_path / "mine.yaml"
    yaml.write_text(text[:start] + "spills:\n"
                    "  - {d_max: 256, l2_store_bytes_per_block: 5, dram_write_bytes_per_program: 1,"
                    " source: x}\n"
                    "  - {d_max: 64, l2_store_bytes_per_block: 9, dram_write_bytes_per_program: 9,"
                    " source: y}\n" + text[end:], encoding="utf-8")
    args = ["compare", "--gpu", "h200", "--impl", str(yaml), "--n", "1024", "--d", "64"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and "spills[1].d_max" in outcome.err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [["compare", "--gpu", "h200", "--n", "256", "--format", "json"],
                                  ["sweep", "--gpu", "h200", "--n", "256,512"]])
def test_output_to_a_full_disk_is_one_line(args: list[str]) -> None:
    # before: OSError (No space left on device) as a traceback, status 1
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "iosim", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot write the output"), lines


def test_an_error_that_rounds_to_zero_has_no_sign() -> None:
    # the committed decode point: DRAM 269.2 MB predicted, 269.4 MB counted: was "-0%"
    from iosim.output.render_measure import measurement_lines

    lines = measurement_lines(_points()[3])
    dram = [line for line in lines if line.strip().startswith("DRAM bytes")]
    assert dram and not any(line.endswith(("-0%", "+0%")) for line in dram)
    assert any(line.endswith(" 0%") for line in dram)


def test_calibrate_from_a_measure_record_checks_it_as_roofline_does(tmp_path: Path) -> None:
    # before: a point with a negative kernel time was fitted without a word, and a line cut
    # short at line 7 was reported at "line 1 column 696"
    from iosim.calibrate import CalibrationError, impl_fit

    point = _points()[0]
    point["measured_kernels"][0]["time_s"] = -0.0015
    negative = tmp_path / "neg.jsonl"
    negative.write_text(json.dumps(point) + "\n", encoding="utf-8")
    with pytest.raises(CalibrationError, match="line 1: measured_kernels"):
        impl_fit.load_points(negative)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(MEASURE.read_bytes() + MEASURE.read_bytes()[:700])
    lines = len(MEASURE.read_text(encoding="utf-8").splitlines())
    with pytest.raises(CalibrationError, match=f"line {lines + 1}: not valid JSON"):
        impl_fit.load_points(cut)


def test_calibrate_from_reads_a_measure_record_whatever_its_name() -> None:
    # before: only a name ending .jsonl was read as JSON Lines ("Extra data" otherwise)
    import shutil
    import tempfile

    from iosim.calibrate import impl_fit

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "points.txt"
        shutil.copy(MEASURE, copy)
        assert impl_fit.load_points(copy)["points"] == impl_fit.load_points(MEASURE)["points"]


def test_splits_auto_over_a_huge_grid_is_refused_at_once() -> None:
    # before: each of 20,790 points chosen one by one (~30 ms each) before the bar moved
    from iosim.inputs.limits import MAX_AUTO_SPLIT_POINTS

    args = ["sweep", "--gpu", "h200,a100,h100", "--n", "1", "--n-kv", "1..1048576",
            "--d", "64,128,256", "--heads", "8..128", "--kv-heads", "8", "--batch", "1..1024",
            "--causal", "no,yes", "--splits", "auto", "--algo", "splitkv"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and "20,790 points" in outcome.err
    assert MAX_AUTO_SPLIT_POINTS < 20_790


def test_a_backward_roofline_says_measure_records_are_forward(tmp_path: Path) -> None:
    # before: "has no sdpa-flash point ... at N 4096, d 128, ..." where the record has one
    args = ["roofline", *SHAPE, "--pass", "bwd", "--record", str(MEASURE),
            "--out", str(tmp_path)]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 0 and "holds forward passes" in outcome.err
    assert "has no" not in outcome.err


def test_the_roofline_table_names_its_profile(tmp_path: Path) -> None:
    # a spec-profile table beside a measure record's dots read as the measured prediction
    # (combine splits 101 ns where compare --profile measured says 9.0 µs): it now says which
    args = ["roofline", "--gpu", "h200", "--n", "256", "--out", str(tmp_path)]
    outcome = invoke(args)
    assert_clean(outcome, args)
    title = next(line for line in outcome.out.splitlines() if "Roofline" in line)
    assert "(spec profile)" in title and len(title.rstrip()) <= 72  # the table's width
