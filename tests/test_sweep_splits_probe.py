"""Issue 13 item 5: a sweep that includes N = 1 (so adds splitkv) asks for kernel lists once per
class of split counts, not once per (N, split count): that product made a 640,000-point table
30× slower."""

from __future__ import annotations

import pytest

from iosim.algorithms.splitkv import MAX_SPLITS, SplitKV
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.inputs.workload import Workload


@pytest.mark.parametrize("n, kv_heads", [(1, 8), (1, 32), (16, 8)])
def test_every_split_count_above_one_has_the_kernels_of_two(n: int, kv_heads: int) -> None:
    """What SplitKV.split_class declares: counts above 1 share one kernel list."""
    w = Workload(n, n_kv=65536, d=128, heads=32, kv_heads=kv_heads)
    algo = SplitKV()
    two = algo.forward(w, 2)
    assert all(algo.forward(w, s) == two for s in range(3, MAX_SPLITS + 1))
    assert algo.forward(w, 1) != two


def test_decode_sweep_asks_for_kernels_per_n_not_per_n_and_split(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = SplitKV.kernels

    def counting(self: SplitKV, *args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SplitKV, "kernels", counting)
    n = tuple(range(1, 101))
    spec = SweepSpec(n=n, n_kv=tuple(range(512, 512 * 41, 512)), gpu=("a100",),
                     algorithms=("standard", "flash2", "splitkv"))
    result = sweep(spec)
    splits = result.algorithm("splitkv").splits
    assert len(set(splits.tolist())) > 10  # many split counts in this grid ...
    assert calls <= 2 * len(n) + 50  # ... yet one probe per N and split class (old code: ~2,000)
