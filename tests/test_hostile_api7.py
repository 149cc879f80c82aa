"""The Python API of docs/api.md with values of the wrong type (review 7): every call either
returns or raises an IosimError naming the parameter, never a TypeError, AttributeError,
ValueError or OverflowError from deep inside. The grid is every call × every value: 310 of its
559 cases failed on 32ef341 (each call marked `before:` had some), the rest hold what was
right; each test after it failed there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import iosim
from iosim import IosimError, Workload
from iosim.execute import execute, precision, random_inputs

SMALL = Workload(64, d=8)
WRONG: dict[str, Any] = {
    "np_float": np.float64(128.0), "fraction": 128.5, "bool": True, "np_bool": np.bool_(True),
    "text": "abc", "list": [128], "huge": 10**400, "nan": float("nan"), "bytes": b"a100",
    "dict": {}, "complex": 1j, "array": np.array([128, 256]), "negative": -1,
}



KERNELS = iosim.ALGORITHMS["standard"].kernels(SMALL)
A100 = iosim.resolve_hardware("a100").hardware


def _inputs() -> dict[str, Any]:
    return random_inputs(SMALL, 0, precision("float64"))


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
    # before: TypeError "unhashable type: 'list'", AttributeError "no attribute 'n_kv'",
    # "'<=' not supported", "SeedSequence expects int"; seed="abc" and block_q=10**400 ran
    "execute(algorithm)": lambda v: execute(v, SMALL, _inputs()),
    "execute(workload)": lambda v: execute("flash2", v, _inputs()),
    "execute(inputs)": lambda v: execute("flash2", SMALL, v),
    "execute(dtype=)": lambda v: execute("flash2", SMALL, _inputs(), dtype=v),
    "execute(block_q=)": lambda v: execute("flash2", SMALL, _inputs(), block_q=v),
    "execute(seed=)": lambda v: execute("flash2", SMALL, _inputs(), seed=v),
    "execute(dropout_p=)": lambda v: execute("flash2", SMALL, _inputs(), dropout_p=v),
    "execute(sram_bytes=)": lambda v: execute("flash2", SMALL, _inputs(), sram_bytes=v),
    "random_inputs(workload)": lambda v: random_inputs(v, 0, precision("float64")),
    "random_inputs(seed)": lambda v: random_inputs(SMALL, v, precision("float64")),
    "random_inputs(prec)": lambda v: random_inputs(SMALL, 0, v),
    "precision()": lambda v: precision(v),
    "verify(seed=)": lambda v: iosim.verify(SMALL, seed=v),
    "verify(dropout_p=)": lambda v: iosim.verify(SMALL.with_(unfused=("dropout",)), dropout_p=v),
    # before: latent_kv="no" and 10**400 were taken as true
    "model_layers(latent_kv=)": lambda v: iosim.model_layers(iosim.resolve_model("deepseek-v3"),
                                                             {"n": 64}, latent_kv=v),
    # before: AttributeError "no attribute 'strip'", "no attribute 'items'"
    "compare_model(layer=)": lambda v: iosim.compare_model(iosim.resolve_model("gemma-3-4b"),
                                                           {"n": 64}, "h100", layer=v),
    "compare_model(given=)": lambda v: iosim.compare_model(iosim.resolve_model("gemma-3-4b"),
                                                           {"n": 64}, "h100", given=v),
    # before: AttributeError "no attribute 'd'"; sram 128.5 B was a Tiling of 128.5 bytes
    "make_tiling(workload)": lambda v: iosim.make_tiling(v, 4096, "x"),
    "make_tiling(sram_bytes)": lambda v: iosim.make_tiling(SMALL, v, "x"),
    # before: AttributeError "no attribute 'sparsity_fraction'", "'float' object is not
    # iterable", "no attribute 'block_q'"; tiling=0 and tiling={} were taken as untiled
    "closed_form(kernels)": lambda v: iosim.closed_form(v, SMALL, None),
    "closed_form(workload)": lambda v: iosim.closed_form(KERNELS, v, None),
    "closed_form(tiling)": lambda v: iosim.closed_form(KERNELS, SMALL, v),
    "walk(tiling)": lambda v: list(iosim.walk(KERNELS, SMALL, v)),
    "walk_arrays(workload)": lambda v: iosim.walk_arrays(KERNELS, v, None),
    "dram_estimate(hardware)": lambda v: iosim.dram_estimate(KERNELS, SMALL, None, v),
    "dram_estimate(l2_bytes=)": lambda v: iosim.dram_estimate(KERNELS, SMALL, None, A100,
                                                              l2_bytes=v),
    "dram_estimate(programs_per_sm=)": lambda v: iosim.dram_estimate(KERNELS, SMALL, None, A100,
                                                                     programs_per_sm=v),
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


@pytest.mark.parametrize(("call", "needle"), [
    # before: each ran, the value silently taken (or, for a seed, ignored)
    (lambda: execute("flash2", SMALL, _inputs(), seed="abc"), "seed"),
    (lambda: execute("flash2", SMALL, _inputs(), block_q=10**400), "67,108,864"),
    (lambda: random_inputs(SMALL, True, precision("float64")), "seed"),
    (lambda: random_inputs(SMALL, [1, 2], precision("float64")), "seed"),
    (lambda: iosim.model_layers(iosim.resolve_model("deepseek-v3"), {"n": 64}, latent_kv="no"),
     "latent_kv"),
    (lambda: iosim.make_tiling(SMALL, 128.5, "x"), "sram_bytes"),
    (lambda: iosim.make_tiling(SMALL, 4096, "x", outer="rows"), "outer"),
    (lambda: iosim.closed_form(KERNELS, SMALL, 0), "tiling"),
    (lambda: iosim.dram_estimate(KERNELS, SMALL, None, A100, l2_bytes=float("nan")), "l2_bytes"),
])
def test_a_value_once_taken_silently_is_refused(call: Callable[[], object], needle: str) -> None:
    with pytest.raises(IosimError, match=needle):
        call()
