"""What hostile9 (2 Dec 2026) found past the flags: files (implementation YAMLs, calibration and
measure records) and the Python API of docs/api.md. Each test is one finding; its comment says
what the input did before. Found by mutating every key of the shipped YAMLs and records (a
value replaced by 0, -1, 1e30, 2^63, NaN, '', 'abc', [], {}, null, true, 1e-320; a key deleted
or added) and by calling every public function with values of every type."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import iosim
from iosim.inputs.implementations_yaml import impls_dir
from iosim.inputs.tiling import make_tiling
from tests.conftest import DATA
from tests.hostile import check_run, workdir

SMALL = iosim.Workload(256, d=64, heads=2)
QUICK = json.loads((DATA / "h200-calibration-quick.json").read_text(encoding="utf-8"))
MEASURE_LINES = (DATA / "h200-measure.jsonl").read_text(encoding="utf-8").splitlines()


# -- implementation YAMLs ----------------------------------------------------------------------

def _impl_refused(folder: Path, old: str, new: str) -> str:
    text = (impls_dir() / "flex.yaml").read_text(encoding="utf-8")
    assert old in text
    (folder / "mine.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    outcome = check_run(["compare", "--gpu", "h200", "--n", "1024", "--impl", "mine.yaml"],
                        folder)
    assert outcome.code == 2
    return outcome.err


@pytest.mark.parametrize(("old", "new", "key"), [
    # before: a TypeError traceback ("'int' object is not iterable"), exit 1
    ("extra_kernels: []", "extra_kernels: 5", "extra_kernels"),
    ("extra_kernels: []", "extra_kernels: 1.5", "extra_kernels"),
    # before: taken for "none" by `or []`
    ("extra_kernels: []", "extra_kernels: 0", "extra_kernels"),
    ("extra_kernels: []", "extra_kernels: {}", "extra_kernels"),
    ("extra_kernels: []", "extra_kernels: []\nspills: 0", "spills"),
    # before: an implementation named '' (a blank column and blank messages)
    ("name: flex", "name: ''", "name"),
    ("title: \"torch FlexAttention (Inductor's Triton template, torch.compile)\"",
     "title: \"  \"", "title"),
])
def test_an_impl_yaml_value_of_the_wrong_shape_is_refused_by_key(old: str, new: str,
                                                                 key: str) -> None:
    with workdir() as folder:
        err = _impl_refused(folder, old, new)
    assert f": {key}:" in err


def test_a_users_impl_yaml_is_read_again_after_an_edit() -> None:
    # before: cached by path for the process: an edit between two compare() calls in one
    # session was never seen (a GPU or model YAML was read afresh)
    with workdir() as folder:
        mine = folder / "mine.yaml"
        shutil.copy(impls_dir() / "flex.yaml", mine)
        first = iosim.compare(SMALL, "h200", impl=str(mine))
        assert first.algorithm("flex").hbm_bytes > 0
        mine.write_text(mine.read_text(encoding="utf-8") + "surprise: 1\n", encoding="utf-8")
        with pytest.raises(iosim.ConfigError, match="surprise"):
            iosim.compare(SMALL, "h200", impl=str(mine))


# -- calibration records (calibrate --from) ----------------------------------------------------

def _calibrate_from(record: Any) -> tuple[int, str]:
    with workdir() as folder:
        (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
        outcome = check_run(["calibrate", "--gpu", "h200", "--from", "run.json", "--out",
                             "o.yaml"], folder)
        return outcome.code, outcome.err


def _mutated(path: tuple[Any, ...], value: Any) -> Any:
    record = json.loads(json.dumps(QUICK))
    node = record
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return record


@pytest.mark.parametrize(("path", "value", "needle"), [
    # before: a TypeError traceback ("'int' object is not iterable")
    (("counters", "spec"), 0, "counters.spec"),
    (("counters", "spec"), None, "counters.spec"),
    # before: each taken through str() or bool(): quick "no" was True, gpu 5 was "5"
    (("quick",), "no", "quick"),
    (("gpu",), 5, "gpu"),
    (("command",), [], "command"),
    (("counters", "status"), {}, "counters.status"),
    (("device", "name"), [], "device.name"),
    (("notes",), [1, 2], "notes"),
    # before: 1e-320 s passed (0, 10^6) and fitted an HBM bandwidth of inf, refused as
    # "/tmp/tmpXXXX/check.yaml: measured.hbm_bandwidth.value: 'inf GB/s'" after a warning line
    (("measurements", 0, "time_s"), 1e-320, "time_s"),
    (("measurements", 0, "rel_error"), -1, "rel_error"),
])
def test_a_calibration_record_field_of_the_wrong_kind_is_named(path: tuple[Any, ...],
                                                                value: Any, needle: str) -> None:
    code, err = _calibrate_from(_mutated(path, value))
    assert code == 2 and needle in err and "check.yaml" not in err


def test_a_fit_that_gives_no_gpus_figure_names_the_key_not_a_temporary_file() -> None:
    # the copy kernel's bytes 2^62 in 1 ns (each value in range): a fitted bandwidth of 4.6e27
    # B/s, beyond what a GPU YAML takes; before, the refusal named /tmp/.../check.yaml, after a
    # "Warning: kept ..." line
    record = json.loads(json.dumps(QUICK))
    for m in record["measurements"]:
        if m["kernel"] == "copy":
            m.update(time_s=1e-9, time_p20_s=1e-9, time_p80_s=1e-9, io_bytes=2**62)
    code, err = _calibrate_from(record)
    assert code == 2 and "check.yaml" not in err and "measured.hbm_bandwidth" in err


def test_result_algorithm_of_an_algorithm_not_run_is_an_iosim_error_and_a_key_error() -> None:
    # before: a bare KeyError('flash2'); compare(impl="flex") runs standard and flex
    result = iosim.compare(SMALL, "h200", impl="flex")
    with pytest.raises(iosim.NotInResultError, match="standard, flex"):
        result.algorithm("flash2")
    with pytest.raises(KeyError):
        iosim.sweep(iosim.SweepSpec(n=256, gpu="a100")).algorithm("cascade")


# -- measure records (calibrate --impl --from, roofline --record) ------------------------------

@pytest.mark.parametrize(("field", "value"), [
    # before: both taken and fitted
    ("measured_time_s", 1e-320),
    ("kernel", 2.0**63),
    ("kernel", 0),
])
def test_a_measure_record_time_out_of_range_is_named_by_line(field: str, value: float) -> None:
    point = json.loads(MEASURE_LINES[0])
    if field == "kernel":
        point["measured_kernels"][0]["time_s"] = value
    else:
        point[field] = value
    with workdir() as folder:
        (folder / "run.jsonl").write_text("\n".join([json.dumps(point), *MEASURE_LINES[1:]])
                                          + "\n", encoding="utf-8")
        outcome = check_run(["calibrate", "--gpu", "h200", "--impl", "sdpa-flash", "--from",
                             "run.jsonl", "--out", "o.yaml"], folder)
    assert outcome.code == 2 and "line 1" in outcome.err and "time_s" in outcome.err


# -- the Python API ----------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "needle"), [
    # before: each taken (tile_rule="no" gave Alg. 1's tiles, cc=-5 a default SM, impl="flex"
    # ignored, sram_source=None printed "None"), code_for=3 a TypeError, sram_per_sm="64" a
    # numpy UFuncTypeError, cc=[] "only 0-dimensional arrays can be converted"
    ({"tile_rule": "no"}, "tile rule"),
    ({"tile_rule": 3}, "tile rule"),
    ({"cc": -5}, "cc"),
    ({"cc": []}, "cc"),
    ({"cc": 2**70}, "cc"),
    ({"sram_per_sm": "64"}, "sram_per_sm"),
    ({"sram_per_sm": float("inf")}, "sram_per_sm"),
    ({"sram_per_sm": None}, "sram_per_sm"),
    ({"impl": "flex"}, "impl"),
    ({"code_for": 3}, "code_for"),
    ({"sram_source": None}, "sram_source"),
])
def test_make_tiling_checks_its_options(options: dict[str, Any], needle: str) -> None:
    kwargs: dict[str, Any] = {"sram_source": "given", **options}
    source = kwargs.pop("sram_source")
    with pytest.raises(iosim.TilingError, match=needle):
        make_tiling(SMALL, 96 * 1024, source, **kwargs)


def test_make_tiling_takes_what_compare_passes() -> None:
    tiling = make_tiling(SMALL, 96 * 1024, "given", cc=np.int64(90), sram_per_sm=228 * 1024,
                         tile_rule="alg1")
    assert tiling.block_q == make_tiling(SMALL, 96 * 1024, "given").block_q


@pytest.mark.parametrize("causal", ["no", 1, None, np.array([True, False])])
def test_roofs_for_causal_must_be_a_bool(causal: Any) -> None:
    # before: any value, its truth taken: causal="no" picked the causal FP8 matmul rate
    hardware = iosim.resolve_hardware("h200").hardware
    with pytest.raises(iosim.IosimError, match="causal"):
        iosim.roofs_for(hardware, "fp8_e4m3", "measured", causal=causal)


@pytest.mark.parametrize("model", [None, "llama-3.1-8b", 5, {}])
def test_model_layers_names_a_model_of_the_wrong_type(model: Any) -> None:
    # before: AttributeError "'str' object has no attribute 'layers'"
    with pytest.raises(iosim.IosimError, match=r"iosim\.resolve_model"):
        iosim.model_layers(model, {"n": 256})


@pytest.mark.parametrize("name", ["seqlens", "suffix_lens"])
def test_a_zero_dimensional_array_of_lengths_is_refused(name: str) -> None:
    # before: TypeError "iteration over a 0-d array"
    shape = {"n": 64} if name == "seqlens" else {"n": 1, "n_kv": 114, "prefix_len": 50}
    with pytest.raises(iosim.WorkloadError, match=name):
        iosim.Workload(**shape, **{name: np.array(64)})
    assert iosim.Workload(64, seqlens=np.array([32, 32])).seqlens == (32, 32)


@pytest.mark.parametrize(("field", "value"), [
    # before: TypeError "iteration over a 0-d array" (seqlens), ValueError "truth value of an
    # array ... is ambiguous" (window_capped, unfused); window_capped="no" was taken as True
    ("seqlens", np.array(64)), ("window_capped", np.array([True, False])),
    ("window_capped", "no"), ("unfused", np.array([1, 2])),
])
def test_a_sweep_spec_of_odd_values_is_an_iosim_error(field: str, value: Any) -> None:
    with pytest.raises(iosim.IosimError, match=field):
        iosim.sweep(iosim.SweepSpec(n=(256,), gpu=("a100",), **{field: value}))


@pytest.mark.parametrize("axis", ["n", "d", "heads"])
def test_a_zero_dimensional_array_is_one_value_of_a_sweep_axis(axis: str) -> None:
    # before: TypeError "iteration over a 0-d array" (every axis)
    spec: dict[str, Any] = {"n": 256, "gpu": "a100", axis: np.array(64 if axis != "n" else 256)}
    one = iosim.sweep(iosim.SweepSpec(**spec))
    assert one.spec.values(axis) == (int(spec[axis]),)


def test_verify_with_a_numpy_seed_gives_a_json_result() -> None:
    # before: the seed kept as np.int64: json.dumps(result.to_dict()) raised TypeError
    result = iosim.verify(iosim.Workload(64, d=8), algorithms="flash2", seed=np.int64(3))
    assert json.loads(json.dumps(result.to_dict()))["seed"] == 3


@pytest.mark.parametrize("elements", [np.int64(2**62), np.uint64(2**63), np.int64(2**63 - 1)])
def test_compare_sram_elements_as_a_huge_numpy_int_names_it(elements: Any) -> None:
    # before: NumPy's int64 wrapped past 2^63 (a RuntimeWarning) and the refusal said
    # "sram_bytes must be at least 1, got -9223372036854775808"
    with pytest.raises(iosim.IosimError, match="sram_elements gives an SRAM of"):
        iosim.compare(SMALL, "a100", sram_elements=elements)


@pytest.mark.parametrize("load", [iosim.load_hardware, iosim.load_model])
@pytest.mark.parametrize("path", ["", ".", "configs"])
def test_a_folder_given_as_a_file_is_named(load: Any, path: str) -> None:
    # before: IsADirectoryError "[Errno 21] Is a directory: 3" (the 3 a file descriptor)
    with pytest.raises(iosim.IosimError, match="is a folder, not a file"):
        load(path)
