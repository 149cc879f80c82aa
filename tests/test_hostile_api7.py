"""The Python API of docs/api.md with values of the wrong type (review 7): every call either
returns or raises an IosimError naming the parameter, never a TypeError, AttributeError,
ValueError or OverflowError from deep inside. The grid is every call × every value: 91 of its
192 cases failed on 32ef341 (each call marked `before:` had some), the rest hold what was
right; each test after it failed there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import iosim
from iosim import IosimError, Workload

SMALL = Workload(64, d=8)
WRONG: dict[str, Any] = {
    "np_float": np.float64(128.0), "fraction": 128.5, "bool": True, "np_bool": np.bool_(True),
    "text": "abc", "list": [128], "huge": 10**400, "nan": float("nan"), "bytes": b"a100",
    "dict": {}, "complex": 1j, "array": np.array([128, 256]),
}

CALLS: dict[str, Callable[[Any], object]] = {
    # before: TypeError "cannot use a string pattern", OverflowError "int too large to convert"
    "compare(sram=)": lambda v: iosim.compare(SMALL, "a100", sram=v),
    # before: ValueError "The truth value of an array ... is ambiguous"
    "compare(profile=)": lambda v: iosim.compare(SMALL, "a100", profile=v),
    "compare(tiles=)": lambda v: iosim.compare(SMALL, "a100", tiles=v),
    "Workload(unfused=)": lambda v: Workload(64, unfused=v),
    "sweep(SweepSpec(profile=))": lambda v: iosim.sweep(iosim.SweepSpec(n=(64,), gpu=("a100",),
                                                                       profile=v)),
    # before: TypeError "expected str, bytes or os.PathLike object"
    "sweep(SweepSpec(impl=))": lambda v: iosim.sweep(iosim.SweepSpec(n=(64,), gpu=("a100",),
                                                                    impl=v)),
    # before: TypeError "'float' object is not iterable", AttributeError "no attribute 'strip'"
    "verify(algorithms=)": lambda v: iosim.verify(SMALL, algorithms=v),
    "verify(sram=)": lambda v: iosim.verify(SMALL, sram=v),
    "verify(dtype=)": lambda v: iosim.verify(SMALL, dtype=v),
    # before: AttributeError "'float' object has no attribute 'dtype'"
    "verify(workload)": lambda v: iosim.verify(v),
    # before: AttributeError "'str' object has no attribute 'layers'"
    "compare_model(model)": lambda v: iosim.compare_model(v, {"n": 1024}, "h100"),
    # before: AttributeError "'float' object has no attribute 'strip'"
    "get_algorithm()": lambda v: iosim.get_algorithm(v),
    # before: AttributeError "'str' object has no attribute 'peak_flops'"
    "roofs_for(hardware)": lambda v: iosim.roofs_for(v, "fp16"),
    # before: TypeError "unhashable type: 'list'"
    "roofs_for(dtype=)": lambda v: iosim.roofs_for(iosim.resolve_hardware("a100").hardware, v),
    "compare(workload)": lambda v: iosim.compare(v, "a100"),
    "model_layers(base)": lambda v: iosim.model_layers(iosim.resolve_model("gemma-3-4b"), v),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("value", sorted(WRONG))
def test_a_wrong_type_is_an_iosim_error(call: str, value: str) -> None:
    try:
        CALLS[call](WRONG[value])
    except IosimError as exc:
        assert "\ue000" not in str(exc)  # the parameter marks rendered
    # any other exception fails the test


def test_model_layers_without_n_names_it() -> None:
    # before: TypeError "Workload.__init__() missing 1 required positional argument: 'n'"
    with pytest.raises(IosimError, match="n"):
        iosim.model_layers(iosim.resolve_model("gemma-3-4b"), {"batch": 2})


def test_model_layers_with_an_unknown_argument_names_it() -> None:
    # before: TypeError "got an unexpected keyword argument 'seq_len'"
    with pytest.raises(IosimError, match="seq_len"):
        iosim.model_layers(iosim.resolve_model("gemma-3-4b"), {"n": 64, "seq_len": 2})


@pytest.mark.parametrize("name", ["block_q", "block_kv"])
def test_verify_bounds_blocks_as_compare_does(name: str) -> None:
    # before: verify(block_q=10**400) ran (one block), where compare refuses beyond 2^26
    with pytest.raises(IosimError, match="67,108,864"):
        iosim.verify(SMALL, **{name: 10**400})
    with pytest.raises(IosimError, match="67,108,864"):
        iosim.compare(SMALL, "a100", **{name: 10**400})


def test_verify_takes_numpy_block_sizes() -> None:
    # before: verify(algorithms="flash2") ran the letters f, l, a, ...: "unknown algorithm 'f'"
    assert iosim.verify(SMALL, algorithms="flash2", block_q=np.int64(32), block_kv=np.int32(32)).ok
