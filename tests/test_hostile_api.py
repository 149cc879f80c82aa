"""Hostile Python calls (review 4): wrong types get one IosimError naming the parameter, never
an AttributeError/TypeError from deep inside, and never a silently different workload.

Each case failed on main at 272a447 (the error named in its comment)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import iosim
from iosim import Workload
from iosim.inputs.gpus import config_dir


@pytest.mark.parametrize("value", ["no", "False", 1, None, [], "yes"])
def test_causal_must_be_a_bool(value):
    # before: accepted and stored as given; "no" and "False" are truthy, so the kernels
    # counted a causal mask (a silently wrong number)
    with pytest.raises(iosim.WorkloadError, match="causal must be True or False") as caught:
        Workload(1024, causal=value)
    assert caught.value.param == "causal"


def test_causal_string_no_is_not_counted_as_causal_in_a_sweep():
    with pytest.raises(iosim.IosimError, match="causal must be True or False"):
        iosim.sweep(iosim.SweepSpec(n=(1024,), gpu=("a100",), causal=("no",)))


def test_numpy_integers_are_whole_numbers():
    # before: "n must be a whole number, got np.int64(4096)", which is untrue
    w = Workload(np.int64(4096), d=np.int32(64), heads=np.uint8(8), causal=np.bool_(True),
                 sparsity=np.float32(0.5), seqlens=None)
    plain = Workload(4096, d=64, heads=8, causal=True, sparsity=0.5)
    assert (w.n, w.d, w.heads, w.causal, w.sparsity) == (4096, 64, 8, True, 0.5)
    assert type(w.n) is int and type(w.causal) is bool
    a100 = iosim.compare(w, "a100").algorithm("flash2")
    assert a100.hbm_bytes == iosim.compare(plain, "a100").algorithm("flash2").hbm_bytes


def test_numpy_lengths_for_packed_and_shared_prefix_batches():
    packed = Workload(1024, seqlens=np.array([512, 500, 12]))
    assert packed.seqlens == (512, 500, 12) and all(type(s) is int for s in packed.seqlens)
    shared = Workload(1, prefix_len=np.int64(512), suffix_lens=np.array([16, 40]), batch=2,
                      n_kv=552)
    assert shared.suffix_lens == (16, 40)


def test_a_numpy_float_is_still_not_a_whole_number():
    with pytest.raises(iosim.WorkloadError, match="n must be a whole number"):
        Workload(np.float64(4096))


def test_compare_takes_a_pathlib_path_to_a_gpu_yaml():
    # before: AttributeError: 'PosixPath' object has no attribute 'peak_flops'
    path = config_dir() / "a100-80gb-sxm.yaml"
    by_path = iosim.compare(Workload(1024), Path(path))
    assert by_path.algorithm("flash2").hbm_bytes == iosim.compare(
        Workload(1024), "a100").algorithm("flash2").hbm_bytes


@pytest.mark.parametrize("hardware", [None, 5, 1.5, ["a100"]])
def test_compare_names_a_gpu_of_the_wrong_type(hardware):
    # before: AttributeError: 'NoneType' object has no attribute 'name'
    with pytest.raises(iosim.IosimError, match="hardware must be a name or a file path"):
        iosim.compare(Workload(1024), hardware)


@pytest.mark.parametrize("workload", [1024, {"n": 1024}, None])
def test_compare_names_a_workload_of_the_wrong_type(workload):
    # before: AttributeError: 'int' object has no attribute 'n'
    with pytest.raises(iosim.IosimError, match=r"workload must be an iosim\.Workload"):
        iosim.compare(workload, "a100")


def test_compare_names_an_impl_of_the_wrong_type():
    # before: AttributeError: 'int' object has no attribute 'check_shape'
    with pytest.raises(iosim.IosimError, match="impl must be a name or a file path"):
        iosim.compare(Workload(1024), "h100", impl=3)


def test_one_string_of_names_is_names_not_letters():
    # before: algorithms="flash2" -> "unknown algorithm 'f'"; unfused="scale" -> "op 's'"
    only = iosim.compare(Workload(1024), "a100", algorithms="flash2")
    assert [a.name for a in only.algorithms] == ["flash2"]
    assert Workload(1024, unfused="scale,mask").unfused == ("scale", "mask")


def test_sweep_spec_takes_one_value_a_list_or_a_numpy_array_per_axis():
    # before: n=1024 -> TypeError: 'int' object is not iterable; gpu="a100" -> unknown GPU 'a'
    one = iosim.sweep(iosim.SweepSpec(n=1024, gpu="a100"))
    arrays = iosim.sweep(iosim.SweepSpec(n=np.array([1024]), gpu=["a100"], d=[np.int64(64)]))
    tuples = iosim.sweep(iosim.SweepSpec(n=(1024,), gpu=("a100",)))
    for result in (one, arrays):
        assert list(result.columns()["hbm_bytes"]) == list(tuples.columns()["hbm_bytes"])
        assert all(type(v) is int for v in (*result.spec.n, *result.spec.d))


@pytest.mark.parametrize("call", [
    lambda: iosim.resolve_model(None),
    lambda: iosim.resolve_model(5),
    lambda: iosim.load_model(None),
    lambda: iosim.load_hardware(None),
    lambda: iosim.resolve_hardware(3),
])
def test_model_and_gpu_loaders_name_a_spec_of_the_wrong_type(call):
    # before: AttributeError ('int' object has no attribute 'strip') or TypeError
    with pytest.raises(iosim.IosimError, match="must be a name or a file path"):
        call()


@pytest.mark.parametrize("base", [None, [8192], 8192])
def test_model_layers_names_a_base_that_is_not_a_mapping(base):
    # before: TypeError: 'NoneType' object is not iterable
    with pytest.raises(iosim.IosimError, match="base must be a mapping"):
        iosim.model_layers(iosim.resolve_model("llama-3.1-8b"), base)


@pytest.mark.parametrize("field", ["dtype", "pass_", "packing", "fp8_scales"])
@pytest.mark.parametrize("value", [["fp16"], np.array(["fp16", "bf16"]), 3])
def test_a_name_field_of_the_wrong_type_is_named(field, value):
    # before (found by test_fuzz_python_workload_and_compare): dtype=[...] raised TypeError
    # (unhashable list) and dtype=np.array([...]) ValueError (ambiguous truth value)
    with pytest.raises(iosim.WorkloadError, match=f"unknown {field}") as caught:
        Workload(64, **{field: value})
    assert caught.value.param == field
