"""estimates/launch_order_dram.py's rules on arrays (the sweep's `--splits auto` path): the
states' re-read share against a brute-force sum over every wave (the rule as its docstring
states it, one miss probability per wave), and every array rule equal element by element to
the same rule called on one point's ints."""

from __future__ import annotations

import numpy as np
import pytest

from iosim.estimates.l2_cutoff import miss_probabilities, miss_probability
from iosim.estimates.launch_order_dram import RowBlockGrid, straddle_rereads, wave_miss_share

L2 = 62_914_560.0  # the H200's 60 MiB (configs/gpus/h200.yaml)


def brute_share(stream: int, programs: int, concurrent: int, written: int, later: int) -> float:
    """Σ over every wave w of (its programs / programs) · P_miss(its reuse distance)."""
    p, slots = max(1, programs), max(1, concurrent)
    total = 0.0
    for wave in range(-(-p // slots)):
        ended = min(p, (wave + 1) * slots)
        distance = written + later + stream * (p - ended) / p
        total += (ended - wave * slots) / p * miss_probability(distance, L2)
    return total


def _cases(rng: np.random.Generator, count: int) -> list[tuple[int, int, int, int, int]]:
    out = []
    for _ in range(count):
        programs = int(rng.integers(1, 40_000))
        out.append((int(rng.integers(0, 4_000_000_000)), programs, int(rng.integers(8, 1200)),
                    int(rng.integers(1, 150_000_000)), int(rng.integers(0, 2) * rng.integers(
                        0, 80_000_000))))
    return out


def test_the_share_is_the_sum_over_every_wave() -> None:
    rng = np.random.default_rng(14)
    for case in _cases(rng, 200):
        assert wave_miss_share(*case, L2) == pytest.approx(brute_share(*case), rel=1e-12,
                                                            abs=1e-15), case
    # inside the tails over many waves (a slow stream), and every wave beyond them
    for case in ((20_000_000, 50_000, 132, 30_000_000, 0), (10, 10, 1, 200_000_000, 0),
                 (0, 1000, 7, 55_000_000, 0)):
        assert wave_miss_share(*case, L2) == pytest.approx(brute_share(*case), rel=1e-12)


def test_arrays_give_each_points_share_to_the_last_bit() -> None:
    rng = np.random.default_rng(9)
    cases = _cases(rng, 400)
    columns = [np.array(c, dtype=np.int64).reshape(20, 20) for c in zip(*cases, strict=True)]
    shares = wave_miss_share(*columns, L2)
    assert shares.shape == (20, 20)
    assert shares.ravel().tolist() == [wave_miss_share(*c, L2) for c in cases]


def test_miss_probabilities_are_miss_probability_to_the_last_bit() -> None:
    reuse = np.linspace(0, 2 * L2, 10_001)
    assert miss_probabilities(reuse, L2).tolist() == [miss_probability(float(r), L2)
                                                      for r in reuse]


def test_straddle_on_arrays_is_each_points() -> None:
    rng = np.random.default_rng(3)
    points = []
    for _ in range(300):
        splits = int(rng.integers(1, 129))
        points.append((int(rng.integers(1, 65)), int(rng.integers(1, 9)),
                       int(rng.integers(1, 9)), splits, int(rng.integers(splits, 2000)),
                       int(rng.integers(0, 3_000_000_000)), int(rng.integers(1, 1100))))
    cols = [np.array(c, dtype=np.int64) for c in zip(*points, strict=True)]
    got = straddle_rereads(RowBlockGrid(*cols[:5]), cols[5], cols[6], L2)
    want = [straddle_rereads(RowBlockGrid(*p[:5]), p[5], p[6], L2) for p in points]
    assert got.tolist() == want
    assert any(w > 0 for w in want) and any(w == 0 for w in want)
