"""Sliding windows and packed sequences (issue 14 item 1): closed form = tile walk = executor.

The block sums of algorithms/masks.py are checked against a brute-force dense enumeration of
the mask (every score, then every block pair that holds one), the executor's element mask
against FlashAttention's own test reference (`construct_local_mask` in flash-attention's
tests/test_flash_attn.py, re-derived here), and `verify` runs every tiled algorithm through
closed form, walk and executor, with outputs against the float64 masked reference.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import iosim
from iosim.algorithms.masks import mask_sums, split_work_rows
from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.analysis.verify import verify
from iosim.execute.numerics import problem_of


def _dense_mask(n_q: int, n_kv: int, causal: bool, window: int | None,
                seqlens: tuple[int, ...] | None) -> np.ndarray:
    """The kept scores, from the definition (interface of issue 14), score by score."""
    keep = np.zeros((n_q, n_kv), dtype=bool)
    starts = [0, *np.cumsum(seqlens).tolist()] if seqlens else [0]
    for q, k in itertools.product(range(n_q), range(n_kv)):
        if seqlens:
            s = next(i for i in range(len(seqlens)) if starts[i] <= q < starts[i + 1])
            if not starts[s] <= k < starts[s + 1]:
                continue
            p = q  # n = n_kv within each sequence
        else:
            p = q + n_kv - n_q
        if causal and k > p:
            continue
        if window is not None and (p - k >= window if causal else abs(k - p) >= window):
            continue
        keep[q, k] = True
    return keep


def _cut(length: int, size: int, seqlens: tuple[int, ...] | None) -> list[tuple[int, int]]:
    out, start = [], 0
    for part in seqlens or (length,):
        out += [(start + a, start + min(part, a + size)) for a in range(0, part, size)]
        start += part
    return out


CASES = [
    # n_q, n_kv, B_r, B_c, causal, window, seqlens
    (100, 100, 16, 16, True, 7, None), (100, 100, 16, 32, False, 7, None),
    (37, 150, 8, 16, True, 40, None), (150, 37, 16, 8, True, 20, None),
    (150, 37, 16, 8, False, 20, None), (64, 64, 64, 64, False, 64, None),
    (1, 300, 1, 64, True, 100, None), (90, 90, 16, 8, True, None, (30, 1, 59)),
    (90, 90, 32, 16, False, 9, (30, 1, 59)), (90, 90, 8, 32, True, 3, (45, 45)),
]


@pytest.mark.parametrize("packing", ["varlen", "document"])
@pytest.mark.parametrize("case", CASES)
def test_block_sums_equal_a_dense_enumeration(case: tuple, packing: str) -> None:
    n_q, n_kv, bq, bkv, causal, window, seqlens = case
    keep = _dense_mask(n_q, n_kv, causal, window, seqlens)
    pairs = q_rows = kv_rows = scores = 0
    # varlen cuts blocks per sequence; FlexAttention's document mask cuts the packed whole
    cut = seqlens if packing == "varlen" else None
    for (q0, q1), (k0, k1) in itertools.product(_cut(n_q, bq, cut), _cut(n_kv, bkv, cut)):
        if keep[q0:q1, k0:k1].any():  # partly inside: visited in full
            pairs += 1
            q_rows += q1 - q0
            kv_rows += k1 - k0
            scores += (q1 - q0) * (k1 - k0)
    sums = mask_sums(n_q, n_kv, bq, bkv, causal, window, seqlens, packing)
    assert (sums.pairs, sums.pair_q_rows, sums.pair_kv_rows, sums.scores) == (
        pairs, q_rows, kv_rows, scores)


@pytest.mark.parametrize("case", CASES)
def test_split_programs_with_work_equal_an_enumeration(case: tuple) -> None:
    n_q, n_kv, bq, bkv, causal, window, seqlens = case
    keep = _dense_mask(n_q, n_kv, causal, window, seqlens)
    splits = 3
    per_seq = [(-(-part // bkv)) for part in (seqlens or (n_kv,))]
    nb = -(-max(per_seq) // splits)  # flash_fwd_kernel.h n_blocks_per_split (max_seqlen_k)
    kv = _cut(n_kv, bkv, seqlens)
    local = [j for t_c in per_seq for j in range(t_c)]
    rows = 0
    for q0, q1 in _cut(n_q, bq, seqlens):
        for k in range(splits):
            mine = [j for j, (k0, k1) in enumerate(kv) if k * nb <= local[j] < (k + 1) * nb
                    and keep[q0:q1, k0:k1].any()]
            rows += (q1 - q0) if mine else 0
    assert split_work_rows(n_q, n_kv, bq, bkv, causal, window, seqlens, splits) == rows


def _fa2_local_mask(n_q: int, n_kv: int, left: int, right: int) -> np.ndarray:
    """flash-attention tests/test_flash_attn.py construct_local_mask (True = masked out):
    col > min(row + sk − sq + right, sk) or col < row + sk − sq − left."""
    row = np.arange(n_q)[:, None]
    col = np.arange(n_kv)[None, :]
    return (col > np.minimum(row + n_kv - n_q + right, n_kv)) | (col < row + n_kv - n_q - left)


@pytest.mark.parametrize(("n_q", "n_kv", "window"), [(50, 50, 8), (20, 70, 13), (70, 20, 5)])
def test_executor_mask_is_flash_attentions_window(n_q: int, n_kv: int, window: int) -> None:
    for causal, right in ((True, 0), (False, window - 1)):
        pr = problem_of(iosim.Workload(n_q, n_kv=n_kv, causal=causal, window=window))
        kept = pr.causal_allowed(0, n_q, 0, n_kv)
        assert np.array_equal(kept, ~_fa2_local_mask(n_q, n_kv, window - 1, right))


VERIFY = [
    dict(n=70, causal=True, window=20, heads=4, kv_heads=2),
    dict(n=70, causal=False, window=20),
    dict(n=40, n_kv=90, causal=True, window=30, heads=2, kv_heads=1),
    dict(n=90, n_kv=40, causal=False, window=12),
    dict(n=75, causal=True, seqlens=(30, 1, 44), heads=2, kv_heads=1),
    dict(n=75, causal=False, window=9, seqlens=(30, 1, 44)),
    dict(n=75, causal=True, window=5, seqlens=(20, 20, 35), packing="document"),
    dict(n=75, causal=False, seqlens=(30, 1, 44), packing="document", heads=2, kv_heads=1),
]


@pytest.mark.parametrize("fields", VERIFY)
@pytest.mark.parametrize("pass_", ["fwd", "fwdbwd"])
def test_verify_every_tiled_algorithm(fields: dict, pass_: str) -> None:
    w = iosim.Workload(d=4, pass_=pass_, **fields)  # type: ignore[arg-type]
    algorithms = ["flash1", "flash2"]
    if pass_ == "fwd":
        algorithms.append("splitkv")
    if w.n == w.n_kv:
        algorithms.append("triton")
    result = verify(w, algorithms=algorithms, block_q=16, block_kv=8,
                    splits=2 if "splitkv" in algorithms else None)
    assert result.ok, [(a.name, a.ok) for a in result.algorithms]
    # the mask skipped tiles: fewer K reads than the same kernel without it
    plain = verify(w.with_(window=None, seqlens=None, packing="varlen"), algorithms=["flash2"],
                   block_q=16,
                   block_kv=8)
    masked_k = next(t.closed_form for a in result.algorithms if a.name == "flash2"
                    for t in a.terms if t.tensor == "K")
    plain_k = next(t.closed_form for a in plain.algorithms if a.name == "flash2"
                   for t in a.terms if t.tensor == "K")
    assert masked_k < plain_k


def test_window_gains_nothing_from_gqa_in_decoding() -> None:
    """flash_api.cpp packs a KV head's query heads only without a window
    (seqlenq_ngroups_swapped needs window_size_left < 0 && window_size_right < 0)."""
    def kv_bytes(kv_heads: int, window: int | None) -> int:
        c = compare(iosim.Workload(1, n_kv=8192, d=128, heads=32, kv_heads=kv_heads,
                                   causal=True, window=window), "h100", algorithms=["splitkv"],
                    splits=4)
        kernel = c.algorithm("splitkv").kernels[0]
        return sum(t.bytes for t in kernel.traffic.terms if t.tensor in ("K", "V"))
    assert kv_bytes(8, None) * 4 == kv_bytes(32, None)  # packed: K/V once per KV head
    assert kv_bytes(8, 4096) == kv_bytes(32, 4096)  # windowed: once per query head


def test_one_point_sweep_equals_compare_under_masks() -> None:
    for window, seqlens in ((1024, None), (None, (1000, 3000, 96)), (256, (1000, 3000, 96))):
        w = iosim.Workload(4096, heads=8, kv_heads=2, causal=True, pass_="fwdbwd",
                           window=window, seqlens=seqlens)
        c = compare(w, "a100")
        s = sweep(SweepSpec(n=(4096,), gpu=("a100",), heads=(8,), kv_heads=(2,), causal=(True,),
                            pass_=("fwdbwd",), window=(window,), seqlens=seqlens))
        for grid in s.algorithms:
            a = c.algorithm(grid.name)
            assert int(grid.hbm_bytes[0]) == a.hbm_bytes, (window, seqlens, grid.name)
            assert float(grid.time_s[0]) == pytest.approx(a.time_s, rel=1e-12)


def test_a_window_sweep_is_one_axis() -> None:
    s = sweep(SweepSpec(n=(4096,), gpu=("a100",), causal=(True,), window=(None, 512, 4096),
                        algorithms=("flash2",)))
    hbm = s.algorithm("flash2").hbm_bytes.tolist()
    assert hbm[0] == hbm[2] > hbm[1]  # W = N causal is every key: the unmasked count
    assert s.columns()["window"].tolist() == [0, 512, 4096]


@pytest.mark.parametrize(("flags", "words"), [
    (["--window", "0"], "must be at least 1"),
    (["--window", "-3"], "must be at least 1"),
    (["--window", "5000"], "leave --window out, or use at most --window 4096"),
    (["--seqlens", "1000,3000"], "--seqlens add up to 4,000 tokens, not --n 4096"),
    (["--seqlens", "1000,x,96"], "--seqlens entry 2 must be a whole number"),
    (["--seqlens", "1000,2.5"], "--seqlens entry 2 must be a whole number"),
    (["--seqlens", ""], "--seqlens is empty"),
    (["--seqlens", ",".join(["1"] * 65537)], "beyond the 65,536"),
    (["--packing", "document"], "give --seqlens too"),
])
@pytest.mark.parametrize("command", ["compare", "verify", "sweep"])
def test_bad_masks_are_one_line_exit_2(flags: list[str], words: str, command: str) -> None:
    from click.testing import CliRunner

    from iosim.cli import cli

    args = [command, "--n", "4096", *flags] + ([] if command == "verify" else ["--gpu", "a100"])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, (args, result.output)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.output
    assert words in " ".join(lines[0].split()), lines[0]


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_masks_verify(data: st.DataObject) -> None:
    """Random window × causal × GQA × N ≠ N_kv × packing × pass: closed form = walk = executor."""
    kv_heads = data.draw(st.sampled_from([1, 2]))
    heads = kv_heads * data.draw(st.sampled_from([1, 2]))
    packed = data.draw(st.booleans())
    n = data.draw(st.integers(1, 48))
    n_kv = n if packed else data.draw(st.integers(1, 48))
    seqlens = None
    if packed:
        cuts = sorted(data.draw(st.sets(st.integers(1, max(1, n - 1)), max_size=3))) if n > 1 else []
        seqlens = tuple(b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True))
    window = data.draw(st.none() | st.integers(1, n_kv))
    if window is None and seqlens is None:
        window = n_kv
    w = iosim.Workload(n, n_kv=n_kv, d=2, heads=heads, kv_heads=kv_heads,
                       causal=data.draw(st.booleans()), window=window, seqlens=seqlens,
                       packing=data.draw(st.sampled_from(["varlen", "document"])) if packed
                       else "varlen", pass_=data.draw(st.sampled_from(["fwd", "bwd"])))
    algorithms = ["flash1", "flash2"] + (["splitkv"] if w.pass_ == "fwd" else [])
    block_q, block_kv = data.draw(st.integers(4, 16)), data.draw(st.integers(4, 16))
    splits = min(2, -(-n_kv // block_kv)) if "splitkv" in algorithms else None
    result = verify(w, algorithms=algorithms, block_q=block_q, block_kv=block_kv, splits=splits)
    assert result.ok, (w, block_q, block_kv, [(a.name, a.ok) for a in result.algorithms])


def _dram_k(workload: iosim.Workload, **blocks: int) -> tuple[int, int, str]:
    """(DRAM bytes, L2-oblivious bytes, note) of K in flash2's attention kernel on the H200."""
    a = compare(workload, "h200", algorithms=["flash2"], profile="measured",
                **blocks).algorithm("flash2")  # type: ignore[arg-type]
    assert a.dram is not None
    term = next(t for t in a.dram.terms if t.tensor == "K" and t.op == "read")
    return term.bytes, term.oblivious_bytes, term.note


def test_dram_estimate_under_masks() -> None:
    """A window as long as the keys is the causal mask: the masked L2 rule (l2_masks.py) gives
    what the causal closed form (l2.py's staggered programs, written apart) gives, and a short
    window's programs share K/V in L2 on the H200 (each KV head's K read once)."""
    shape = dict(d=128, heads=32, kv_heads=8, causal=True)
    causal = _dram_k(iosim.Workload(16384, **shape))
    full = _dram_k(iosim.Workload(16384, window=16384, **shape))
    assert full[0] == causal[0] and "read once" in full[2] and "read once" in causal[2]
    windowed = _dram_k(iosim.Workload(16384, window=1024, **shape))
    assert windowed[0] == causal[0] < windowed[1]  # each KV head's K once, not per visit



@pytest.mark.parametrize(("n", "n_kv", "kv_heads", "causal", "window", "seqlens", "blocks", "mib",
                          "programs"), [
    (4096, None, 4, True, 512, None, (128, 64), 60, 16),        # staggered window: fits
    (4096, None, 2, False, 256, None, (128, 64), 60, 16),       # two-sided, GQA
    (4096, None, 4, True, None, (1024, 2944, 128), (128, 64), 60, 16),  # packed, aligned
    (4096, None, 4, True, 1024, None, (64, 64), 1, 32),         # staggered at 1 MiB
    (1024, 8192, 4, True, 2048, None, (64, 64), 4, 16),         # in step: fits
    (1024, 8192, 4, True, 2048, None, (64, 64), 0.25, 16),      # in step: every visit misses
])
def test_masked_closed_form_is_the_simulation_in_clear_regimes(
        n: int, n_kv: int | None, kv_heads: int, causal: bool, window: int | None,
        seqlens: tuple[int, ...] | None, blocks: tuple[int, int], mib: float,
        programs: int) -> None:
    from iosim.algorithms import get_algorithm
    from iosim.estimates.l2 import dram_estimate
    from iosim.estimates.l2_simulate import simulate
    from iosim.inputs.gpus import resolve_hardware
    from iosim.inputs.tiling import Tiling

    w = iosim.Workload(n, n_kv=n_kv, d=64, heads=4, kv_heads=kv_heads, causal=causal,
                       window=window, seqlens=seqlens)
    kernels = get_algorithm("flash2").kernels(w)
    t = Tiling(*blocks, 1 << 30, "test", "test")
    closed = dram_estimate(kernels, w, t, resolve_hardware("h200").hardware,
                           concurrent_programs=programs, l2_bytes=mib * 2**20)
    simulated = simulate(kernels, w, t, l2_bytes=mib * 2**20, concurrent_programs=programs)
    assert closed.read_bytes == pytest.approx(simulated.read_bytes, rel=0.01)
    assert closed.write_bytes == pytest.approx(simulated.write_bytes, rel=0.01)


def test_split_heuristic_counts_the_varlen_grid() -> None:
    """mha_varlen_fwd sizes splits from sequences × ⌈max_seqlen/B_r⌉ query blocks: the grid
    the split kernel launches (loopnest.kernel_programs, via masks.grid_blocks)."""
    from iosim.algorithms.closedform import Dims, kernel_programs

    w = iosim.Workload(8192, heads=8, causal=True, seqlens=(512, 7680))
    a = compare(w, "h100", algorithms=["splitkv"]).algorithm("splitkv")
    assert a.tiling is not None and a.tiling.splits == 1
    kernel = next(k for k in iosim.get_algorithm("splitkv").kernels(w, a.tiling) if k.split)
    launched = int(kernel_programs(kernel, Dims.of(w, a.tiling)))
    assert f"= {launched} programs" in str(a.tiling.splits_rule)
