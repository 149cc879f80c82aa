"""The vectorised sweep equals `compare` point by point, and it is really vectorised."""

from __future__ import annotations

import importlib
import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.base import Algorithm
from iosim.algorithms.flash1 import Flash1
from iosim.algorithms.loopnest import Access, Kernel
from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepResult, SweepSpec, sweep
from iosim.errors import IosimError, TilingError, UnknownGpuError
from iosim.inputs.workload import Workload
from tests.conftest import examples

sweep_module = importlib.import_module("iosim.analysis.sweep")
spec_module = importlib.import_module("iosim.analysis.sweep_spec")
roofline_module = importlib.import_module("iosim.estimates.roofline")


def _check_against_compare(result: SweepResult, every: int = 1) -> int:
    """Every (point, algorithm) of every `every`-th point equals compare() on that workload;
    returns rows checked."""
    cols = result.columns()
    spec = result.spec
    checked = 0
    per_point = len(result.algorithms)
    for row in range(len(cols["algorithm"])):
        point = row // per_point
        if point % every:
            continue
        pick = {axis: spec.values(axis)[int(result.index[axis][point])]
                for axis in spec_module.AXES}
        w = Workload(int(cols["n"][row]), n_kv=int(cols["n_kv"][row]), d=int(cols["d"][row]),
                     heads=int(cols["heads"][row]), kv_heads=int(cols["kv_heads"][row]),
                     batch=int(cols["batch"][row]), dtype=str(cols["dtype"][row]),
                     causal=bool(cols["causal"][row]), pass_=str(cols["pass"][row]),
                     unfused=spec.unfused, sparsity=float(cols["sparsity"][row]))
        name = str(cols["algorithm"][row])
        kwargs: dict[str, Any] = {"block_q": pick["block_q"], "block_kv": pick["block_kv"]}
        if name == "splitkv":
            kwargs["splits"] = pick["splits"]
        if pick["sram_bytes"] is not None:
            kwargs["sram"] = pick["sram_bytes"]
        if pick["sram_elements"] is not None:
            kwargs["sram_elements"] = pick["sram_elements"]
        try:
            c = compare(w, str(cols["gpu"][row]), algorithms=[name], profile=spec.profile,
                        **kwargs)
        except TilingError:
            assert not cols["fits_sram"][row], (row, name)
            continue
        a = c.algorithm(name)
        # a default rule's blocks that overflow the SRAM by ℓ, m are kept, with a fits note
        assert cols["fits_sram"][row] == (a.tiling is None or not a.tiling.fits_note)
        assert cols["sram_bytes"][row] == c.sram_bytes
        if a.tiling is not None:
            assert (cols["block_q"][row], cols["block_kv"][row]) == (a.tiling.block_q,
                                                                     a.tiling.block_kv)
            assert cols["splits"][row] == a.tiling.splits
            if w.pass_ != "fwd":
                assert (cols["bwd_block_q"][row], cols["bwd_block_kv"][row]) == \
                    a.tiling.backward_blocks
        assert cols["hbm_read_bytes"][row] == a.hbm_read_bytes
        assert cols["hbm_write_bytes"][row] == a.hbm_write_bytes
        assert cols["hbm_bytes"][row] == a.hbm_bytes
        assert cols["matmul_flops"][row] == a.matmul_flops
        assert cols["elementwise_flops"][row] == a.elementwise_flops
        # the same float operations in the same order: equal, not merely close
        assert cols["time_s"][row] == a.time_s
        assert cols["bound"][row] == a.bound
        assert cols["traffic_ratio_vs_standard"][row] == a.traffic_ratio_vs_standard
        assert cols["speedup_vs_standard"][row] == a.speedup_vs_standard
        checked += 1
    return checked


GRID = SweepSpec(n=(1, 100, 1000, 4096), n_kv=(None, 777), gpu=("a100", "h100-sxm"),
                 d=(64, 128), heads=(4, 8), kv_heads=(None, 2), causal=(False, True),
                 block_kv=(None, 64, 1024), dtype=("fp16", "fp32"))


def test_grid_equals_compare_at_every_seventh_point() -> None:
    """Every 7th of the grid's 1,536 points (7 is prime to every axis' length, so each value of
    each axis is checked, in many combinations); test_grid_equals_compare_everywhere, marked
    slow, checks them all."""
    result = sweep(GRID)
    assert result.points == 4 * 2 * 2 * 2 * 2 * 2 * 2 * 3 * 2
    assert _check_against_compare(result, every=7) > result.points // 7  # most rows fit


@pytest.mark.slow
def test_grid_equals_compare_everywhere() -> None:
    result = sweep(GRID)
    assert _check_against_compare(result) > result.points  # most rows fit, all checked


def test_backward_passes_gqa_and_sparsity_equal_compare() -> None:
    """Issue 3's kernels (Alg. 3/4 backward, FA2's backward blocks, GQA dK/dV expansion, the
    block-sparse mask) through the sweep, unchanged."""
    spec = SweepSpec(n=(256, 1000), gpu=("a100", "h100"), d=(64,), heads=(8,),
                     kv_heads=(None, 2), pass_=("fwd", "bwd", "fwdbwd"), causal=(False, True),
                     sparsity=(1.0, 0.25), block_kv=(None, 128))
    result = sweep(spec)
    assert _check_against_compare(result) > 0
    flash2 = result.algorithm("flash2")
    passes = result.axis_values("pass_")
    given = result.index["block_kv"] == 1
    # FA2's code at d = 64 with 163 KiB opt-in shared memory (A100): 128 × 128 backward tiles
    # (flash_bwd_launch_template.h:178-179, configs/impls/sdpa-flash.yaml)
    assert set(flash2.bwd_block_kv[(passes == "bwd") & ~given
                                   & (result.index["gpu"] == 0)].tolist()) == {128}
    assert set(flash2.bwd_block_q[passes == "fwd"].tolist()) == {0}


DECODING = SweepSpec(n=(1, 16), n_kv=(4096, 65536), gpu=("a100", "h100"), heads=(16, 32),
                     kv_heads=(2, 16), batch=(1, 8),
                     algorithms=("standard", "flash2", "splitkv"), splits=(None, 1, 4),
                     causal=(False, True))


def test_decoding_with_splitkv_equals_compare() -> None:
    """Flash-Decoding: N = 1, GQA packing, the split heuristic and given split counts; every
    5th of the 384 points against compare (5 is prime to every axis' length), all of them in
    test_decoding_with_splitkv_equals_compare_everywhere (slow)."""
    result = sweep(DECODING)
    assert _check_against_compare(result, every=5) == -(-result.points // 5) * 3
    splits = result.algorithm("splitkv").splits
    assert len(set(splits.tolist())) > 3  # the heuristic picks many counts across the grid
    assert set(result.algorithm("flash2").splits.tolist()) == {1}


@pytest.mark.slow
def test_decoding_with_splitkv_equals_compare_everywhere() -> None:
    result = sweep(DECODING)
    assert _check_against_compare(result) == result.points * 3


def test_splits_errors() -> None:
    with pytest.raises(IosimError, match="splits applies to splitkv"):
        sweep(SweepSpec(n=(1,), n_kv=(4096,), gpu=("a100",), splits=(2,)))
    with pytest.raises(IosimError, match="splits=64 is more than the"):
        sweep(SweepSpec(n=(1,), n_kv=(512, 4096), gpu=("a100",), algorithms=("splitkv",),
                        splits=(64,)))


def test_sram_axes_and_block_q_and_unfused() -> None:
    spec = SweepSpec(n=(512, 2048), gpu=("t4",), sram_bytes=(None, 32768, 200_000),
                     block_q=(None, 16, 128), causal=(True,), unfused=("mask", "dropout"))
    assert _check_against_compare(sweep(spec)) > 0
    spec = SweepSpec(n=(3000,), gpu=("a100",), sram_elements=(4096, 65536, 98304))
    result = sweep(spec)
    assert _check_against_compare(result) == 3 * 3
    # M = 98,304 fp16 elements is the 192 KB of seed 003; Alg. 1 line 1: B_c = ⌈M/4d⌉ = 384
    assert result.algorithm("flash1").block_kv.tolist()[-1] == 384


@settings(max_examples=examples(25))
@given(n=st.lists(st.integers(1, 5000), min_size=1, max_size=3, unique=True),
       d=st.lists(st.sampled_from([16, 32, 64, 128, 256]), min_size=1, max_size=2, unique=True),
       blocks=st.lists(st.one_of(st.none(), st.integers(1, 700)), min_size=1, max_size=3,
                       unique=True),
       causal=st.sampled_from([(False,), (True,), (False, True)]),
       gpu=st.sampled_from([("a100",), ("l4", "mi300x")]))
def test_random_grids_equal_compare(n: list[int], d: list[int], blocks: list[int | None],
                                    causal: tuple[bool, ...], gpu: tuple[str, ...]) -> None:
    spec = SweepSpec(n=tuple(n), d=tuple(d), block_q=tuple(blocks), gpu=gpu, causal=causal)
    _check_against_compare(sweep(spec))


def test_figure2_block_sweep() -> None:
    """FlashAttention Fig. 2 (middle) shape: N 1024, d 64, 16 heads, batch 64, fp16, flash1 fwd.

    Expected bytes per (batch, head), from the reference's literal FA1 count
    (shared/reference/flashattention.md §3: 2Nd + T_c(3Nd + 4N), l and m in fp32) plus the
    Alg. 1 line 2 initialisation (Nd + 2N, reported as its own kernel by iosim).
    """
    n, d, bh = 1024, 64, 16 * 64
    spec = SweepSpec(n=(n,), d=(d,), heads=(16,), batch=(64,), gpu=("a100-40gb-sxm",),
                     algorithms=("flash1",), block_kv=(32, 64, 128, 256, 512, 1024))
    result = sweep(spec)
    flash1 = result.algorithm("flash1")
    for i, b_c in enumerate(spec.block_kv):
        assert b_c is not None
        t_c = -(-n // b_c)
        per_head = (2 * n * d * 2 + t_c * (3 * n * d * 2 + 4 * n * 4)) + (n * d * 2 + 2 * n * 4)
        assert flash1.hbm_bytes[i] == per_head * bh
    assert flash1.block_q.tolist() == [64] * 6  # B_r = min(⌈M/4d⌉, d) = d
    traffic = flash1.hbm_bytes.tolist()
    assert traffic == sorted(traffic, reverse=True)
    # memory-bound while the passes are many, compute-bound (flat) once B_c reaches 512
    assert flash1.memory_bound.tolist() == [True, True, True, True, False, False]
    assert flash1.time_s[4] == flash1.time_s[5]
    # the A100's 163 KiB per block holds B_c = 512 but not 1024 (see test_tiling_arrays)
    assert flash1.fits_sram.tolist() == [True] * 5 + [False]


def test_progress_is_reported_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_module, "CHUNK_POINTS", 10)
    calls: list[tuple[int, int]] = []
    result = sweep(SweepSpec(n=tuple(range(64, 64 * 26, 64)), gpu=("a100",)),
                   on_progress=lambda done, total: calls.append((done, total)))
    assert calls == [(10, 25), (20, 25), (25, 25)]
    # chunks do not change the numbers
    whole = sweep(SweepSpec(n=tuple(range(64, 64 * 26, 64)), gpu=("a100",)))
    for a, b in zip(result.algorithms, whole.algorithms, strict=True):
        assert np.array_equal(a.hbm_bytes, b.hbm_bytes) and np.array_equal(a.time_s, b.time_s)


def test_work_does_not_grow_with_the_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Python loop per point: the closed-form helpers run as often for 4,096 points as for 2."""
    counts = {"access_elements": 0, "kernel_flops": 0}

    def counting(name: str) -> Any:
        original = getattr(roofline_module, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return original(*args, **kwargs)
        return wrapper

    for name in counts:
        monkeypatch.setattr(roofline_module, name, counting(name))
    sweep(SweepSpec(n=(512, 1024), gpu=("a100",)))
    small = dict(counts)
    counts.update({k: 0 for k in counts})
    sweep(SweepSpec(n=tuple(range(256, 256 + 64 * 16, 16)), d=(32, 64, 128, 256),
                    heads=(1, 2, 4, 8), batch=(1, 2, 4, 8), gpu=("a100",)))
    assert counts == small


def test_kernels_are_asked_per_combination_of_what_they_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """flash1 declares pass, heads and kv_heads: one kernels() call per combination of those
    axes' values (kv_heads follows heads here), whatever the rest of the grid."""
    calls = []
    original = Flash1.kernels

    def counting(self: Any, workload: Workload, tiling: Any = None) -> Any:
        calls.append(workload)
        return original(self, workload, tiling)

    monkeypatch.setattr(Flash1, "kernels", counting)
    sweep(SweepSpec(n=tuple(range(256, 256 * 41, 256)), d=(32, 64, 128), heads=(1, 4, 16),
                    gpu=("a100",), algorithms=("flash1",)))
    assert len(calls) == 3  # the three heads values; N and d do not change the kernel list


class _Staged(Algorithm):
    """A made-up algorithm whose kernel list depends on N: a sweep must split the grid by N."""

    name = "staged"
    title = "test: flash1 plus an extra whole-tensor kernel when N > 1000"
    tiled = True
    kernel_axes = frozenset({"pass_", "n"})

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        kernels = Flash1().forward(workload)
        if workload.n > 1000:
            kernels += (Kernel("extra", "extra pass over O", "elementwise", (
                Access("O", "read", "prologue", "q", "d", "test: read O"),
                Access("O", "write", "prologue", "q", "d", "test: write O"),
            )),)
        return kernels


def test_kernels_that_depend_on_the_workload_flow_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ALGORITHMS, "staged", _Staged())
    spec = SweepSpec(n=(512, 1000, 1001, 4096), d=(64, 128), gpu=("a100",),
                     algorithms=("staged", "flash1"))
    result = sweep(spec)
    assert _check_against_compare(result) == 8 * 2
    staged, flash1 = result.algorithm("staged"), result.algorithm("flash1")
    extra = staged.hbm_bytes - flash1.hbm_bytes
    n = result.axis_values("n")
    d = result.axis_values("d")
    assert np.array_equal(extra, np.where(n > 1000, 2 * n * d * 2, 0))


@pytest.mark.parametrize(("spec", "message"), [
    (SweepSpec(n=(), gpu=("a100",)), "n has no values"),
    (SweepSpec(n=(1024,), gpu=("a100", "a100-80gb-sxm")), "lists a100-80gb-sxm twice"),
    (SweepSpec(n=(1024,), gpu=("a100", "z9000")), "unknown GPU 'z9000'"),
    (SweepSpec(n=(1024,), gpu=("a100",), dtype=("fp8",)), "has no fp8 peak"),
    (SweepSpec(n=(1024,), gpu=("a100",), heads=(8, 12), kv_heads=(8,)), "does not divide"),
    (SweepSpec(n=(0,), gpu=("a100",)), "n must be at least 1"),
    (SweepSpec(n=(1024,), gpu=("a100",), block_kv=(0,)), "block_kv must be a whole number"),
    (SweepSpec(n=(1024,), gpu=("a100",), sram_bytes=(65536,), sram_elements=(4096,)),
     "not both"),
    (SweepSpec(n=tuple(range(1, 3001)), gpu=("a100",), d=tuple(range(1, 2001))),
     "6,000,000 grid points"),
    (SweepSpec(n=(1024,), gpu=("a100",), algorithms=("flash9",)), "unknown algorithm"),
])
def test_bad_grids_are_refused(spec: SweepSpec, message: str) -> None:
    with pytest.raises(IosimError, match=message.replace("(", r"\(")):
        sweep(spec)


def test_unknown_gpu_is_its_own_error() -> None:
    with pytest.raises(UnknownGpuError):
        sweep(SweepSpec(n=(1024,), gpu=("nope",)))


def test_columns_are_one_row_per_point_and_algorithm() -> None:
    result = sweep(SweepSpec(n=(256, 512, 1024), gpu=("a100", "h100")))
    cols = result.columns()
    assert len(cols["n"]) == 3 * 2 * 3
    assert cols["algorithm"][:3].tolist() == ["standard", "flash1", "flash2"]
    assert cols["gpu"][:9].tolist() == ["a100-80gb-sxm"] * 9
    assert cols["n"][:9].tolist() == [256] * 3 + [512] * 3 + [1024] * 3
    # standard's ratio to itself is 1; every row's ratio is standard's bytes over its own
    standard = cols["algorithm"] == "standard"
    assert np.all(cols["traffic_ratio_vs_standard"][standard] == 1.0)
    assert set(itertools.chain(cols["bound"].tolist())) <= {"memory", "compute"}
    # the first points only (what a table shows) are the first rows of the whole table
    head = result.columns(max_points=2)
    assert list(head) == list(cols)
    for name, values in head.items():
        assert values.tolist() == cols[name][:6].tolist()


def test_the_measured_profile_is_compares_not_approximated():
    # compare's measured profile charges the per-workload L2-aware DRAM estimate; a sweep over
    # L2-oblivious bytes would differ from compare for the same point (2.26 vs 2.56 ms at
    # N = 8192, d = 128, 32 heads, flash2 on the h200's recorded profile): the sweep charges
    # the same estimate, point by point (analysis/sweep_measured.py), and agrees
    import math

    from iosim.analysis.compare import compare
    from iosim.analysis.sweep import SweepSpec, sweep
    from iosim.inputs.workload import Workload

    spec = SweepSpec(n=(8192,), d=(128,), heads=(32,), gpu=("h200",), profile="measured")
    c = compare(Workload(8192, d=128, heads=32), "h200", profile="measured")
    for grid in sweep(spec).algorithms:
        assert math.isclose(float(grid.time_s[0]), c.algorithm(grid.name).time_s, rel_tol=1e-12)
