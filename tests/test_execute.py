"""The NumPy executor: counts = closed form to the element, output = standard attention."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.closedform import closed_form
from iosim.algorithms.tilewalk import walk
from iosim.errors import IosimError
from iosim.execute import (
    EXECUTORS,
    MAX_SCORES,
    ExecutorError,
    InstrumentedHBM,
    SramBudget,
    SramExceededError,
    execute,
    forward_sram_bytes,
    precision,
    random_inputs,
    reference_attention,
    register,
)
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from tests.conftest import examples
from tests.strategies import tilings, workloads

TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2}
FORWARD = sorted(a for a, p in EXECUTORS if p == "fwd" and a not in ("triton", "cascade"))
"""Every forward executor but the Triton kernels' (flash2's, self-attention only) and cascade's
(shared-prefix batches only: tests/test_cascade.py)."""
"""Algorithms with a forward executor (an algorithm added without one is not tested here)."""


def closed_terms(algorithm: str, workload: Workload,
                 tiling: Tiling | None) -> dict[tuple[str, str, str], int]:
    out: dict[tuple[str, str, str], int] = defaultdict(int)
    for t in closed_form(ALGORITHMS[algorithm].kernels(workload), workload, tiling):
        out[(t.kernel, t.tensor, t.op)] += t.elements
    return dict(out)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), algorithm=st.sampled_from(FORWARD),
       dtype=st.sampled_from(["float64", "float32", "float16"]))
def test_executor_counts_equal_closed_form_and_output_equals_standard(
        data: st.DataObject, algorithm: str, dtype: str) -> None:
    workload = data.draw(workloads(max_n=200))
    tiling = data.draw(tilings(workload, min_block=8))
    prec = precision(dtype)
    inputs = random_inputs(workload, 1, prec)
    run = execute(algorithm, workload, inputs, dtype=dtype, block_q=tiling.block_q,
                  block_kv=tiling.block_kv, dropout_p=0.2, seed=3, record=True)
    model_tiling = tiling if ALGORITHMS[algorithm].tiled else None
    assert run.counts == closed_terms(algorithm, workload, model_tiling)
    # the executor's access stream is the walk's, access by access (bytes aside: dtypes differ)
    strip = [(a.kernel, a.tensor, a.op, a.batch, a.head, a.row_start, a.row_stop, a.cols, a.init)
             for a in walk(ALGORITHMS[algorithm].kernels(workload), workload, model_tiling)]
    assert run.log is not None
    assert [(a.kernel, a.tensor, a.op, a.batch, a.head, a.row_start, a.row_stop, a.cols, a.init)
            for a in run.log] == strip
    standard = execute("standard", workload, inputs, dtype=dtype, dropout_p=0.2, seed=3)
    assert np.max(np.abs(run.output.astype(np.float64) - standard.output.astype(np.float64)),
                  initial=0.0) <= TOLERANCE[dtype]
    reference = reference_attention(workload, inputs, seed=3, dropout_p=0.2)
    assert np.max(np.abs(run.output.astype(np.float64) - reference),
                  initial=0.0) <= TOLERANCE[dtype]


@pytest.mark.parametrize("algorithm", FORWARD)
@pytest.mark.parametrize("dtype,model", [("float32", "fp32"), ("float16", "fp16")])
def test_executor_stores_each_tensor_at_the_models_bytes_per_element(
        algorithm: str, dtype: str, model: str) -> None:
    """fp16/fp32 inputs and outputs, fp32 statistics, a 1-byte dropout mask, as the model says."""
    w = Workload(70, n_kv=50, d=8, heads=2, kv_heads=1, causal=True, dtype=model,
                 unfused=("scale", "mask", "dropout"))
    run = execute(algorithm, w, random_inputs(w, 0, precision(dtype)), dtype=dtype,
                  block_q=16, block_kv=24, dropout_p=0.1)
    tiling = Tiling(16, 24, 0, "", "") if ALGORITHMS[algorithm].tiled else None
    for term in closed_form(ALGORITHMS[algorithm].kernels(w), w, tiling):
        assert run.itemsize[term.tensor] == term.element_bytes, term


def test_seed_003_exactness_check() -> None:
    """Seed 003 ("What is FlashAttention?", Worked example): "With 256 tokens, head dimension 16
    and 64-row blocks on random data, the tiled output differed from standard attention by at most
    ≈ 5.6×10⁻¹⁶. Standard attention holds 65,536 scores at once; the tiled version holds at most
    4,096 in a tile." Our data are other random numbers, so the bound is rounding level, 1e-15."""
    w = Workload(256, d=16)
    inputs = random_inputs(w, 0, precision("float64"))
    standard = execute("standard", w, inputs)
    assert standard.peak_scores == 65_536
    for algorithm in ("flash1", "flash2"):
        tiled = execute(algorithm, w, inputs, block_q=64, block_kv=64)
        assert np.max(np.abs(tiled.output - standard.output)) <= 1e-15
        assert tiled.peak_scores == 4_096


def test_rows_that_see_no_key_output_zero() -> None:
    """Bottom-right causal with N_q > N_kv: query rows q < N_q − N_kv see no key at all."""
    w = Workload(10, n_kv=4, d=3, causal=True)
    inputs = random_inputs(w, 0, precision("float64"))
    for algorithm in FORWARD:
        out = execute(algorithm, w, inputs, block_q=3, block_kv=2).output
        assert np.all(out[0, 0, :6] == 0)
        assert np.all(np.isfinite(out))
    lse = execute("flash2", w, inputs, block_q=3, block_kv=2).outputs["L"]
    assert np.all(lse[0, 0, :6] == np.inf)  # FA2's convention for an empty row
    assert np.all(np.isfinite(lse[0, 0, 6:]))


def test_dropout_mask_is_the_same_in_the_standard_pipeline_and_in_the_tiles() -> None:
    w = Workload(40, d=4, unfused=("dropout",))
    inputs = random_inputs(w, 0, precision("float64"))
    standard = execute("standard", w, inputs, dropout_p=0.5, seed=9)
    kept = standard.outputs["Z"][0, 0].mean()
    assert 0.4 < kept < 0.6
    without = execute("standard", Workload(40, d=4), inputs)
    assert np.max(np.abs(standard.output - without.output)) > 1e-3  # dropout changed the output
    for algorithm in ("flash1", "flash2"):
        tiled = execute(algorithm, w, inputs, block_q=8, block_kv=16, dropout_p=0.5, seed=9)
        assert np.max(np.abs(tiled.output - standard.output)) <= 1e-12


def test_sram_peak_is_the_working_set_and_one_byte_less_raises() -> None:
    w = Workload(128, d=16, dtype="fp16")
    inputs = random_inputs(w, 0, precision("float16"))
    need = forward_sram_bytes(32, 64, 16, precision("float16"))
    for algorithm in ("flash1", "flash2"):
        run = execute(algorithm, w, inputs, dtype="float16", block_q=32, block_kv=64)
        assert run.sram_peak_bytes == need == run.sram_budget_bytes
        with pytest.raises(SramExceededError, match=r"raise sram or use smaller block_q/block_kv"):
            execute(algorithm, w, inputs, dtype="float16", block_q=32, block_kv=64,
                    sram_bytes=need - 1)


def test_sram_budget_names_what_it_holds() -> None:
    sram = SramBudget(100, source="--sram 100", owner="flash1")
    sram.hold("K_j", 10, 4)
    sram.hold("K_j", 20, 4)  # the same buffer, refilled: 80 bytes, not 120
    assert sram.held_bytes == 80
    with pytest.raises(SramExceededError) as err:
        sram.hold("Q_i", 6, 4)
    assert "K_j 80 B, Q_i 24 B = 104 bytes" in str(err.value)
    sram.drop("K_j", "Q_i")
    assert sram.held_bytes == 0
    assert sram.peak_bytes == 80


def test_instrumented_hbm_counts_tiles_and_not_the_host() -> None:
    hbm = InstrumentedHBM(record=True)
    hbm.place("Q", np.zeros((1, 2, 10, 4)))
    hbm.place("l", np.zeros((1, 2, 10), dtype=np.float32))
    with hbm.kernel("k"):
        tile = hbm.read("Q", 0, 1, 8, 12)  # the last block is short: 2 rows
        hbm.write("l", 0, 1, 0, 5, 1.0)
        hbm.write("Q", 0, 0, None, None, tile.sum())
    hbm.peek("Q")
    assert tile.shape == (2, 4)
    assert hbm.counts == {("k", "Q", "read"): 8, ("k", "l", "write"): 5, ("k", "Q", "write"): 40}
    assert hbm.itemsize == {"Q": 8, "l": 4}
    assert hbm.log is not None
    assert [(a.tensor, a.op, a.head, a.row_start, a.row_stop, a.cols) for a in hbm.log] == [
        ("Q", "read", 1, 8, 10, 4), ("l", "write", 1, 0, 5, 1), ("Q", "write", 0, 0, 10, 4)]
    with pytest.raises(RuntimeError, match="outside a kernel"):
        hbm.read("Q", 0, 0)
    with hbm.uncounted(), hbm.kernel("hidden"):
        hbm.read("Q", 0, 0)
    assert ("hidden", "Q", "read") not in hbm.counts


def test_registry_is_keyed_by_algorithm_and_pass() -> None:
    assert {("standard", "fwd"), ("flash1", "fwd"), ("flash2", "fwd"), ("splitkv", "fwd"),
            ("standard", "bwd"), ("flash1", "bwd"), ("flash2", "bwd")} <= set(EXECUTORS)
    assert set(FORWARD) >= {"standard", "flash1", "flash2"}
    with pytest.raises(ValueError, match="already registered"):
        register("flash1", "fwd")(lambda run: None)


def test_a_pass_without_an_executor_is_refused_with_a_hint() -> None:
    """splitkv is forward-only (an inference kernel): its backward is refused in one line."""
    w = Workload(16, d=4, pass_="bwd")
    assert ("splitkv", "bwd") not in EXECUTORS
    with pytest.raises(ExecutorError, match=r"no backward executor for splitkv \(there is one for "
                                            r"flash1, flash2, standard, triton\); use pass_=fwd"):
        execute("splitkv", w, random_inputs(w, 0, precision("float64"), grad=True))


def test_a_run_too_large_names_the_limit_and_the_closed_form() -> None:
    w = Workload(8192, d=16)
    with pytest.raises(ExecutorError) as err:
        execute("flash2", w, {})
    message = str(err.value)
    assert f"{MAX_SCORES:,}" in message and "iosim compare --n 8192" in message
    with pytest.raises(ExecutorError, match="tile pairs"):
        execute("flash2", Workload(1024, d=4), {}, block_q=1, block_kv=1)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_blocks_are_refused(bad: object) -> None:
    w = Workload(16, d=4)
    with pytest.raises(IosimError, match="block_q must be a whole number of at least 1"):
        execute("flash1", w, random_inputs(w, 0, precision("float64")), block_q=bad)  # type: ignore[arg-type]


def test_unknown_dtype_is_refused() -> None:
    with pytest.raises(IosimError, match="unknown executor dtype 'bfloat16'"):
        precision("bfloat16")


def test_float16_accumulates_in_float32() -> None:
    """4096 products of ones: an fp16 accumulator stops at 2048 (2048 + 1 rounds back to 2048)."""
    prec = precision("float16")
    a = np.full((1, 4096), 1.0, dtype=np.float16)
    b = np.full((4096, 1), 1.0, dtype=np.float16)
    assert prec.matmul(a, b)[0, 0] == 4096.0
    assert prec.matmul(a, b).dtype == np.float32
