"""What hostile10 (2 Dec 2026) found in `verify`'s budget (hostile9 leftover 2): it counted tile
pairs, not what each costs, so large tiles or head dims ran for a minute. The budget is now
the work (analysis/verify.py:verify_work, multiply-add equivalents); its timings are
benchmarks/verify_work_speed.py's."""

from __future__ import annotations

import pytest

import iosim
from iosim.algorithms.tilewalk import walk
from iosim.analysis import verify as V
from iosim.analysis.requests import choose_algorithms, default_algorithms
from iosim.errors import IosimError
from tests.hostile import check_run, workdir


@pytest.mark.parametrize("args", [
    # before: accepted, 11-77 s on the shared 2-core machine (4,232 tile pairs of d = 256)
    ["--model", "gemma-2-2b", "--layer", "local", "--n", "1448"],
    # before: accepted, 18 s (128 tile pairs, each 128 × 128 × 2048)
    ["--n", "1024", "--d", "2048", "--block", "128"],
    # before: accepted (a causal layer of 8 heads at d = 256 without a window: 13.7 G)
    ["--n", "1024", "--d", "256", "--heads", "8", "--causal"],
])
def test_a_verify_of_large_tiles_is_refused_by_its_work(args: list[str]) -> None:
    with workdir() as folder:
        outcome = check_run(["verify", *args], folder)
    assert outcome.code == 2
    assert "multiply-adds" in outcome.err and "iosim compare" in outcome.err


def _work(w: iosim.Workload, block: int) -> V.VerifyWork:
    chosen = choose_algorithms(default_algorithms(w), splits_given=False)
    return V.verify_work(w, chosen, block, block)


def test_the_documented_verify_examples_stay_within_the_budget() -> None:
    # a guard: docs/verify-explain.md's timed examples (benchmarks/verify_speed.py) and the
    # executor's own largest case (N = N_kv = 4096, one head, docs/input-limits.md)
    for w in (iosim.Workload(1024, d=64), iosim.Workload(1024, d=64, pass_="fwdbwd"),
              iosim.Workload(4096, d=64)):
        assert _work(w, 64).total <= V.VERIFY_WORK


@pytest.mark.parametrize(("n", "n_kv", "block_q", "block_kv"), [
    (300, 200, 48, 32), (200, 300, 48, 32), (256, 256, 64, 64), (100, 100, 7, 13),
    (1, 50, 8, 8), (64, 1000, 16, 100)])
def test_the_causal_pairs_counted_are_the_pairs_the_tile_walk_visits(
        n: int, n_kv: int, block_q: int, block_kv: int) -> None:
    # the estimate's causal pair count against an independent one: flash2's walk reads each
    # visited key block once per query block (tilewalk.walk)
    w = iosim.Workload(n, n_kv=n_kv, causal=True)
    tiling = iosim.Tiling(block_q, block_kv, 10**6, "test", "given")
    kernels = iosim.get_algorithm("flash2").kernels(w, tiling)
    reads = sum(1 for s in walk(kernels, w, tiling) if s.tensor == "K" and s.op == "read")
    chosen = choose_algorithms(["flash2"], splits_given=False)
    assert V.verify_work(w, chosen, block_q, block_kv).pair_runs == reads


def test_the_python_verify_refuses_the_same_work() -> None:
    # before: verify() ran the gemma local layer's shape for a minute as the CLI did
    w = iosim.Workload(1448, d=256, heads=8, kv_heads=4, causal=True)
    with pytest.raises(IosimError, match="multiply-adds"):
        iosim.verify(w)
