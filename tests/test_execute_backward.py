"""Backward, split-KV and block-sparse executors: counts = closed form = tile walk, access by
access; gradients = a float64 analytic backward (itself checked by finite differences)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosim import Workload, closed_form, get_algorithm, make_tiling, walk
from iosim.algorithms.blocks import cdiv
from iosim.execute import (
    EXECUTORS,
    ExecutorError,
    InstrumentedHBM,
    SramExceededError,
    backward_sram_bytes,
    execute,
    precision,
    random_inputs,
    reference_attention,
    reference_gradients,
)
from iosim.inputs.tiling import Tiling
from iosim.record import replace
from tests.conftest import examples

TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2}
"""As iosim.analysis.verify.TOLERANCE: gradients are compared relative to max(1, max |float64 gradient|)."""
BACKWARD = sorted(a for a, p in EXECUTORS if p == "bwd" and a != "triton")
"""The general-shape executors (the Triton kernels' own are tested in test_triton_bwd_model.py:
self-attention, no mask or dropout)."""
SETTINGS = settings(max_examples=examples(120), suppress_health_check=[HealthCheck.too_slow])


def model_tiling(name: str, w: Workload, block_q: int, block_kv: int, *, splits: int = 1,
                 bwd: tuple[int, int] | None = None) -> Tiling | None:
    if not get_algorithm(name).tiled:
        return None
    tiling = replace(make_tiling(w, 10**9, "test", block_q=block_q, block_kv=block_kv),
                     splits=splits)
    if bwd is not None:
        tiling = replace(tiling, bwd_block_q=bwd[0], bwd_block_kv=bwd[1])
    return tiling


def check_counts_and_stream(name: str, w: Workload, run: object, tiling: Tiling | None) -> None:
    """The executor's counts are the closed form's, and its access stream is the walk's."""
    kernels = get_algorithm(name).kernels(w, tiling)
    closed: dict[tuple[str, str, str], int] = defaultdict(int)
    for t in closed_form(kernels, w, tiling):
        closed[(t.kernel, t.tensor, t.op)] += t.elements
    assert run.counts == dict(closed)  # type: ignore[attr-defined]

    def strip(a: object) -> tuple[object, ...]:
        return tuple(getattr(a, f) for f in ("kernel", "tensor", "op", "batch", "head",
                                             "row_start", "row_stop", "cols", "init", "split"))

    assert [strip(a) for a in run.log] == [strip(a) for a in walk(kernels, w, tiling)]  # type: ignore[attr-defined]


def scaled_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0)
                 / max(1.0, float(np.max(np.abs(want), initial=0.0))))


@st.composite
def shapes(draw: st.DrawFn, *, max_n: int = 40) -> dict[str, object]:
    kv_heads = draw(st.integers(1, 2))
    group = draw(st.integers(1, 3))
    heads = kv_heads * group
    return {
        "n": draw(st.integers(1, max_n)),
        "n_kv": draw(st.integers(1, max_n)),
        "d": draw(st.integers(1, 6)),
        "heads": heads,
        "kv_heads": kv_heads,
        "batch": draw(st.integers(1, max(1, 4 // heads))),
        "causal": draw(st.booleans()),
        "sparsity": draw(st.sampled_from([1.0, 1.0, 0.5, 0.3, 0.77])),
        "unfused": draw(st.sampled_from([(), ("dropout",), ("mask",), ("scale", "mask", "dropout")])),
        "block_q": draw(st.integers(1, max(12, max_n // 4))),
        "block_kv": draw(st.integers(1, max(12, max_n // 4))),
    }


def workload_of(s: dict[str, object], pass_: str) -> Workload:
    return Workload(s["n"], n_kv=s["n_kv"], d=s["d"], heads=s["heads"],  # type: ignore[arg-type]
                    kv_heads=s["kv_heads"], batch=s["batch"], causal=s["causal"],  # type: ignore[arg-type]
                    sparsity=s["sparsity"], unfused=s["unfused"], pass_=pass_)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# the reference


def test_reference_gradients_equal_finite_differences() -> None:
    """The float64 analytic backward against central differences of Σ O∘dO, on a shape with
    every complication: causal with N > N_kv (a row that sees no key), GQA, a block-sparse mask,
    dropout."""
    w = Workload(7, n_kv=5, d=3, heads=4, kv_heads=2, causal=True, sparsity=0.6,
                 unfused=("dropout",), pass_="bwd")
    x = random_inputs(w, 2, precision("float64"), grad=True)
    masks = {"seed": 1, "dropout_p": 0.3, "block_q": 2, "block_kv": 2}
    grads = reference_gradients(w, x, **masks)
    eps = 1e-6
    for name in ("Q", "K", "V"):
        numeric = np.zeros_like(x[name])
        for index in np.ndindex(x[name].shape):
            plus = {k: v.copy() for k, v in x.items()}
            minus = {k: v.copy() for k, v in x.items()}
            plus[name][index] += eps
            minus[name][index] -= eps
            numeric[index] = ((reference_attention(w, plus, **masks) * x["dO"]).sum()
                              - (reference_attention(w, minus, **masks) * x["dO"]).sum()) / (2 * eps)
        assert np.max(np.abs(numeric - grads["d" + name])) < 1e-7, name
    assert np.all(grads["dQ"][0, :, :2] == 0)  # rows 0, 1 see no key (bottom-right causal)


# ---------------------------------------------------------------------------------------------
# backward executors: hypothesis over small shapes


@SETTINGS
@given(s=shapes(max_n=120), algorithm=st.sampled_from(BACKWARD), pass_=st.sampled_from(["bwd", "fwdbwd"]),
       dtype=st.sampled_from(["float64", "float32", "float16"]),
       bwd=st.one_of(st.none(), st.tuples(st.integers(1, 12), st.integers(1, 12))))
def test_backward_counts_equal_closed_form_and_gradients_equal_the_formula(
        s: dict[str, object], algorithm: str, pass_: str, dtype: str,
        bwd: tuple[int, int] | None) -> None:
    w = workload_of(s, pass_)
    if w.sparsity != 1:
        bwd = None  # a block-sparse mask needs both passes on one grid (execute refuses)
    block_q, block_kv = s["block_q"], s["block_kv"]
    x = random_inputs(w, 1, precision(dtype), grad=True)
    run = execute(algorithm, w, x, dtype=dtype, block_q=block_q, block_kv=block_kv,  # type: ignore[arg-type]
                  bwd_block_q=bwd[0] if bwd else None, bwd_block_kv=bwd[1] if bwd else None,
                  dropout_p=0.25, seed=5, record=True)
    check_counts_and_stream(algorithm, w, run, model_tiling(algorithm, w, block_q, block_kv,  # type: ignore[arg-type]
                                                            bwd=bwd))
    masks = {"seed": 5, "dropout_p": 0.25, "block_q": block_q, "block_kv": block_kv}
    want = reference_gradients(w, x, **masks)
    for name, value in run.gradients().items():
        assert value.shape == want[name].shape
        assert scaled_error(value, want[name]) <= TOLERANCE[dtype], name
    assert scaled_error(run.output, reference_attention(w, x, **masks)) <= TOLERANCE[dtype]


@pytest.mark.parametrize("algorithm", ["standard", "flash1", "flash2"])
@pytest.mark.parametrize("dtype,model", [("float32", "fp32"), ("float16", "fp16")])
def test_backward_stores_each_tensor_at_the_models_bytes_per_element(
        algorithm: str, dtype: str, model: str) -> None:
    """dQ, dK, dV (and standard's dP, dS) in the input dtype; flash2's D and dQaccum in fp32; the
    dropout mask 1 byte — as the closed form's terms say."""
    w = Workload(30, n_kv=22, d=4, heads=2, kv_heads=1, causal=True, dtype=model,
                 unfused=("scale", "mask", "dropout"), pass_="fwdbwd")
    run = execute(algorithm, w, random_inputs(w, 0, precision(dtype), grad=True), dtype=dtype,
                  block_q=8, block_kv=6, dropout_p=0.1)
    tiling = model_tiling(algorithm, w, 8, 6)
    for term in closed_form(get_algorithm(algorithm).kernels(w), w, tiling):
        assert run.itemsize[term.tensor] == term.element_bytes, term


def test_standard_backward_rereads_the_dropout_mask_and_feeds_p_drop_to_dv() -> None:
    """Alg. 3 with an unfused dropout: bwd_dv reads the dropped P, bwd_dropout reads Z (N² bytes)
    and dP, bwd_softmax the undropped P."""
    w = Workload(16, d=4, unfused=("dropout",), pass_="bwd")
    run = execute("standard", w, random_inputs(w, 0, precision("float32"), grad=True),
                  dtype="float32", dropout_p=0.5, seed=2)
    assert run.counts[("bwd_dv", "P_drop", "read")] == 256
    assert run.counts[("bwd_dropout", "Z", "read")] == 256 and run.itemsize["Z"] == 1
    assert run.counts[("bwd_softmax", "P", "read")] == 256
    assert ("dropout", "Z", "write") not in run.counts  # the forward ran, uncounted


def test_a_backward_only_run_counts_only_the_backward() -> None:
    """--pass bwd: the forward runs first (its O and statistics feed the backward), uncounted."""
    w = Workload(40, d=4, heads=2, kv_heads=1, pass_="bwd")
    x = random_inputs(w, 0, precision("float64"), grad=True)
    for algorithm in BACKWARD:
        run = execute(algorithm, w, x, block_q=16, block_kv=8)
        assert all(kernel.startswith("bwd_") for kernel, _, _ in run.counts), algorithm
        both = execute(algorithm, w.with_(pass_="fwdbwd"), x, block_q=16, block_kv=8)
        for name in ("dQ", "dK", "dV"):
            assert np.array_equal(run.outputs[name], both.outputs[name])


def test_flash2_backward_reads_lse_and_d_not_l_m_or_o() -> None:
    w = Workload(64, d=8, pass_="bwd")
    run = execute("flash2", w, random_inputs(w, 0, precision("float64"), grad=True),
                  block_q=16, block_kv=32)
    main = {(t, op) for k, t, op in run.counts if k == "bwd_attn"}
    assert ("L", "read") in main and ("D", "read") in main
    assert not {("O", "read"), ("l", "read"), ("m", "read")} & main
    # T_c = 2 key blocks: dQaccum read and written once per pair, Nd each per key block
    assert run.counts[("bwd_attn", "dQaccum", "read")] == 2 * 64 * 8


def test_backward_sram_peak_and_one_byte_less_raises() -> None:
    """The backward holds K_j, V_j, dK_j, dV_j and Q_i, O_i, dO_i, dQ_i, l_i, m_i (flash1, the
    larger in float32); flash2 holds Q_i, dO_i and an fp32 dQ_i, L_i, D_i instead."""
    prec = precision("float32")
    need = backward_sram_bytes(16, 32, 8, prec)
    assert need == (4 * 32 + 4 * 16) * 8 * 4 + 2 * 16 * 4
    w = Workload(64, d=8, pass_="bwd")
    x = random_inputs(w, 0, prec, grad=True)
    run = execute("flash1", w, x, dtype="float32", block_q=16, block_kv=32)
    assert run.sram_peak_bytes == need == run.sram_budget_bytes
    flash2 = execute("flash2", w, x, dtype="float32", block_q=16, block_kv=32)
    assert flash2.sram_peak_bytes == (4 * 32 + 2 * 16) * 8 * 4 + 16 * 8 * 4 + 2 * 16 * 4
    with pytest.raises(SramExceededError, match="dK_j"):
        execute("flash1", w, x, dtype="float32", block_q=16, block_kv=32, sram_bytes=need - 1)


def test_gqa_group_sum_adds_the_query_heads_shares() -> None:
    w = Workload(24, d=4, heads=6, kv_heads=2, pass_="bwd")
    x = random_inputs(w, 3, precision("float64"), grad=True)
    run = execute("flash2", w, x, block_q=8, block_kv=8)
    assert run.outputs["dK"].shape == (1, 2, 24, 4)
    assert run.counts[("bwd_sum_dkdv", "dK_expanded", "read")] == 6 * 24 * 4
    assert run.counts[("bwd_sum_dkdv", "dK", "write")] == 2 * 24 * 4
    want = reference_gradients(w, x, block_q=8, block_kv=8)
    assert np.max(np.abs(run.outputs["dK"] - want["dK"])) < 1e-12


# ---------------------------------------------------------------------------------------------
# split-KV and block-sparse forward executors


@SETTINGS
@given(s=shapes(max_n=60), decode=st.booleans(), split_seed=st.integers(0, 10**6),
       dtype=st.sampled_from(["float64", "float32", "float16"]))
def test_splitkv_counts_equal_closed_form_and_output_equals_the_formula(
        s: dict[str, object], decode: bool, split_seed: int, dtype: str) -> None:
    """Split-KV with its partial outputs and combine kernel; with N = 1 and GQA the query heads of
    a KV head are packed into one tile (FA2 seqlenq_ngroups_swapped)."""
    if decode:
        s = {**s, "n": 1}
    w = workload_of(s, "fwd")
    if w.n == 1 and w.group_size > 1:
        w = w.with_(sparsity=1.0)  # packed + sparse is refused (tested below)
    block_q, block_kv = s["block_q"], s["block_kv"]
    splits = 1 + split_seed % cdiv(w.n_kv, block_kv)  # type: ignore[operator]
    x = random_inputs(w, 1, precision(dtype))
    run = execute("splitkv", w, x, dtype=dtype, block_q=block_q, block_kv=block_kv,  # type: ignore[arg-type]
                  splits=splits, dropout_p=0.25, seed=5, record=True)
    check_counts_and_stream("splitkv", w, run, model_tiling("splitkv", w, block_q, block_kv,  # type: ignore[arg-type]
                                                            splits=splits))
    want = reference_attention(w, x, seed=5, dropout_p=0.25, block_q=block_q, block_kv=block_kv)  # type: ignore[arg-type]
    assert scaled_error(run.output, want) <= TOLERANCE[dtype]


@SETTINGS
@given(s=shapes(max_n=60), algorithm=st.sampled_from(["standard", "flash1", "flash2"]),
       sparsity=st.sampled_from([0.5, 0.3, 0.77, 0.05]))
def test_block_sparse_forward_counts_and_output(s: dict[str, object], algorithm: str,
                                                sparsity: float) -> None:
    """Alg. 5: the tiled kernels skip the mask's zero pairs; standard applies the same mask
    densely; all equal the masked float64 formula."""
    w = workload_of({**s, "sparsity": sparsity}, "fwd")
    block_q, block_kv = s["block_q"], s["block_kv"]
    x = random_inputs(w, 1, precision("float64"))
    run = execute(algorithm, w, x, block_q=block_q, block_kv=block_kv, dropout_p=0.25,  # type: ignore[arg-type]
                  seed=5, record=True)
    check_counts_and_stream(algorithm, w, run, model_tiling(algorithm, w, block_q, block_kv))  # type: ignore[arg-type]
    want = reference_attention(w, x, seed=5, dropout_p=0.25, block_q=block_q, block_kv=block_kv)  # type: ignore[arg-type]
    assert np.max(np.abs(run.output - want), initial=0.0) <= 1e-12


def test_block_sparse_mask_changes_the_output_and_skips_pairs() -> None:
    w = Workload(64, d=4)
    x = random_inputs(w, 0, precision("float64"))
    dense = execute("flash2", w, x, block_q=16, block_kv=16)
    sparse = execute("flash2", w.with_(sparsity=0.25), x, block_q=16, block_kv=16)
    assert np.max(np.abs(dense.output - sparse.output)) > 1e-3
    # 16 pairs, ⌈16/4⌉ = 4 non-zero: K read for 4 pairs of 16 rows × d = 4
    assert sparse.counts[("attn", "K", "read")] == 4 * 16 * 4
    assert dense.counts[("attn", "K", "read")] == 16 * 16 * 4


def test_splitkv_writes_fp32_partials_and_combines_them() -> None:
    w = Workload(1, n_kv=100, d=8, heads=8, kv_heads=2, dtype="fp16")
    x = random_inputs(w, 0, precision("float16"))
    run = execute("splitkv", w, x, dtype="float16", block_q=64, block_kv=16, splits=3)
    assert run.outputs["O_partial"].shape == (3, 1, 8, 1, 8)
    assert run.itemsize["O_partial"] == run.itemsize["lse_partial"] == 4
    assert run.itemsize["O"] == 2
    # packed: K read once per KV head (2 × 100 × 8), not once per query head
    assert run.counts[("splitkv_attn", "K", "read")] == 2 * 100 * 8
    want = reference_attention(w, x)
    assert np.max(np.abs(run.output.astype(np.float64) - want)) < 1e-2
    one = execute("splitkv", w, x, dtype="float16", block_q=64, block_kv=16, splits=1)
    assert not any(k == "splitkv_combine" for k, _, _ in one.counts)


def test_an_empty_split_loads_nothing_and_the_combine_ignores_it() -> None:
    """Causal, N = N_kv = 8, B_c = 2, 4 splits of one key block: the first query block (rows 0-1)
    sees key block 0 only, so its splits 1-3 load nothing and write −∞ log-sum-exps."""
    w = Workload(8, d=2, causal=True)
    x = random_inputs(w, 0, precision("float64"))
    run = execute("splitkv", w, x, block_q=2, block_kv=2, splits=4)
    assert np.all(run.outputs["lse_partial"][1:, 0, 0, :2] == -np.inf)
    q_reads = [a for a in execute("splitkv", w, x, block_q=2, block_kv=2, splits=4,
                                  record=True).log or () if a.tensor == "Q"]
    assert len(q_reads) == 1 + 2 + 3 + 4  # row block i has i + 1 splits with work
    assert np.max(np.abs(run.output - reference_attention(w, x))) < 1e-12


# ---------------------------------------------------------------------------------------------
# refusals and the HBM's split copies


def test_runs_that_cannot_be_done_are_refused_in_one_line() -> None:
    w = Workload(32, d=4, sparsity=0.5, pass_="fwdbwd")
    x = random_inputs(w, 0, precision("float64"), grad=True)
    with pytest.raises(ExecutorError, match="same blocks"):
        execute("flash2", w, x, block_q=8, block_kv=8, bwd_block_q=16)
    decode = Workload(1, n_kv=64, d=4, heads=4, kv_heads=2, sparsity=0.5)
    with pytest.raises(ExecutorError, match="packs the query heads"):
        execute("splitkv", decode, random_inputs(decode, 0, precision("float64")), block_kv=8,
                splits=2)
    with pytest.raises(ExecutorError, match=r"no backward executor for splitkv.*pass_=fwd"):
        execute("splitkv", Workload(8, d=2, pass_="bwd"), {})
    with pytest.raises(ExecutorError, match=r"^splits must be a whole number from 1 to the 2 key"):
        execute("splitkv", Workload(16, d=2), {}, block_kv=8, splits=3)


def test_instrumented_hbm_counts_split_copies() -> None:
    hbm = InstrumentedHBM(record=True)
    hbm.allocate("O_partial", (1, 2, 5, 3), np.float32, copies=4)
    with hbm.kernel("k"):
        hbm.write("O_partial", 0, 1, 0, 5, 1.0, split=3)
        tile = hbm.read("O_partial", 0, 1, 2, 4, split=3)
    assert tile.shape == (2, 3) and np.all(tile == 1.0)
    assert np.isnan(hbm.peek("O_partial")[0]).all()  # the other copies untouched
    assert hbm.counts == {("k", "O_partial", "write"): 15, ("k", "O_partial", "read"): 6}
    assert hbm.log is not None and [a.split for a in hbm.log] == [3, 3]
    with pytest.raises(ValueError, match="has 4 split copies"):
        hbm.read("O_partial", 0, 0, split=4)
