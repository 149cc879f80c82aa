"""What hostile10 (2 Dec 2026) found in measured figures and the records they are fitted from:
a ceiling above the GPU's datasheet (hostile9 leftover 1) and a point whose correctness check
failed (leftover 3). Each test is one finding; its comment says what the input did before (on
main at 6d7ab46). The records are tests/data's, edited in one field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iosim.errors import ConfigError
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware import Hardware, MeasuredProfile
from iosim.inputs.hardware_yaml import load_hardware
from tests.conftest import DATA
from tests.hostile import check_run, workdir

H200_YAML = (config_dir() / "h200.yaml").read_text(encoding="utf-8")
QUICK = json.loads((DATA / "h200-calibration-quick.json").read_text(encoding="utf-8"))
IMPL_FIT = json.loads((DATA / "h200-impl-fit.json").read_text(encoding="utf-8"))
MEASURE_LINES = (DATA / "h200-measure.jsonl").read_text(encoding="utf-8").splitlines()


def _calibrate(folder: Path, record: Any, *extra: str, name: str = "rec.json") -> str:
    path = folder / name
    if isinstance(record, str):
        path.write_text(record, encoding="utf-8")
    else:
        path.write_text(json.dumps(record), encoding="utf-8")
    outcome = check_run(["calibrate", "--gpu", "h200", "--from", name, "--out", "o.yaml",
                         *extra], folder)
    assert outcome.code == 2, outcome.err[-300:]
    assert not (folder / "o.yaml").exists()
    return outcome.err


# -- a measured ceiling above the datasheet's (leftover 1) ----------------------------------

@pytest.mark.parametrize(("old", "new", "key"), [
    # before: accepted; every measured-profile time 2.3x too short
    ("value: 4272.4 GB/s", "value: 10 TB/s", "measured.hbm_bandwidth"),
    # before: accepted; a bf16 matmul faster than the H200's tensor cores
    ("value: 686.2 TFLOP/s", "value: 1100 TFLOP/s", "measured.peak_flops.bf16"),
])
def test_a_measured_ceiling_above_the_datasheet_is_refused_in_a_gpu_yaml(old: str, new: str,
                                                                        key: str) -> None:
    assert old in H200_YAML
    with workdir() as folder:
        (folder / "mine.yaml").write_text(H200_YAML.replace(old, new, 1), encoding="utf-8")
        outcome = check_run(["compare", "--gpu", "mine.yaml", "--n", "1024", "--profile",
                             "measured"], folder)
    assert outcome.code == 2
    assert f": {key}:" in outcome.err and "datasheet" in outcome.err


def test_a_measured_ceiling_within_the_datasheets_rounding_is_kept(tmp_path: Path) -> None:
    # a guard (passes on main too): 1 % above 4.8 TB/s is a datasheet rounded to two digits
    path = tmp_path / "h.yaml"
    path.write_text(H200_YAML.replace("value: 4272.4 GB/s", "value: 4.848 TB/s", 1),
                    encoding="utf-8")
    assert load_hardware(path).measured.hbm_bandwidth_bytes_per_s == 4.848e12  # type: ignore[union-attr]


def test_a_measured_peak_of_a_dtype_the_datasheet_lacks_is_refused(tmp_path: Path) -> None:
    # before: accepted; a measured fp8 rate on a GPU the datasheet gives no FP8 tensor cores
    a100 = (config_dir() / "a100-80gb-sxm.yaml").read_text(encoding="utf-8")
    measured = ("measured:\n  provenance: a hand-written test\n  peak_flops:\n    fp8:\n"
                "      value: 500 TFLOP/s\n      source: made up\n")
    path = tmp_path / "a.yaml"
    path.write_text(a100 + measured, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"measured\.peak_flops\.fp8: has no datasheet"):
        load_hardware(path)


def test_a_hardware_built_in_python_meets_the_same_ceilings() -> None:
    # before: accepted; a Python Hardware is held to the YAML's bounds (one input boundary)
    h200 = load_hardware(config_dir() / "h200.yaml")
    fast = MeasuredProfile("test", 2 * h200.hbm_bandwidth_bytes_per_s, {}, {})
    with pytest.raises(ConfigError, match=r"measured\.hbm_bandwidth"):
        Hardware(h200.name, h200.display_name, h200.path, h200.hbm_capacity_bytes,
                 h200.hbm_bandwidth_bytes_per_s, h200.sram_per_block_bytes,
                 dict(h200.peak_flops_per_s), measured=fast)


def test_calibrate_from_a_record_whose_copy_outruns_the_gpu_is_refused() -> None:
    # before: exit 0; an H200 YAML written with a measured 14 TB/s HBM (the copies' times cut
    # to 0.3x)
    record = json.loads(json.dumps(QUICK))
    for m in record["measurements"]:
        if m["kernel"] in ("copy", "torch_copy"):
            for key in ("time_s", "time_p20_s", "time_p80_s"):
                m[key] *= 0.3
    with workdir() as folder:
        err = _calibrate(folder, record)
    assert "measured.hbm_bandwidth" in err and "datasheet" in err
    assert "record them again" in err  # the fix, not clipped away


# -- a point whose correctness check failed (leftover 3) --------------------------------------

def test_calibrate_from_a_point_over_its_tolerance_is_refused() -> None:
    # before: exit 0; a fused kernel off by 50 % fitted as the fused efficiency
    record = json.loads(json.dumps(QUICK))
    index = next(i for i, m in enumerate(record["measurements"]) if m["kernel"] == "attn_fwd")
    record["measurements"][index]["rel_error"] = 0.5
    with workdir() as folder:
        err = _calibrate(folder, record)
    assert f"measurements[{index}]" in err and "rel_error 0.5" in err


def test_calibrate_from_a_dtype_no_calibration_runs_is_refused() -> None:
    # before: exit 0; a copy "in fp64" fitted as the HBM ceiling
    record = json.loads(json.dumps(QUICK))
    record["measurements"][0]["dtype"] = "fp64"
    with workdir() as folder:
        err = _calibrate(folder, record)
    assert "measurements[0]" in err and "'fp64'" in err


@pytest.mark.parametrize("value", [0.9, -0.1, "small", True])
def test_calibrate_impl_from_a_point_over_its_tolerance_is_refused(value: object) -> None:
    # before: exit 0; sdpa-flash's efficiencies fitted on a point that computed wrongly (and
    # "small", True, -0.1 were never looked at)
    record = json.loads(json.dumps(IMPL_FIT))
    record["points"][0]["rel_error"] = value
    with workdir() as folder:
        err = _calibrate(folder, record, "--impl", "sdpa-flash")
    assert "point 0" in err and "rel_error" in err


def test_calibrate_impl_from_a_measure_record_over_its_tolerance_is_refused() -> None:
    # before: exit 0; the measure record's rel_error was dropped when its points were read
    first = json.loads(MEASURE_LINES[0])
    first["rel_error"] = 0.7
    text = "\n".join([json.dumps(first), *MEASURE_LINES[1:]]) + "\n"
    with workdir() as folder:
        err = _calibrate(folder, text, "--impl", "sdpa-flash", name="m.jsonl")
    assert "point 0" in err and "rel_error" in err
