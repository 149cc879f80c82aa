"""bwd11's GEMM handover (estimates/l2_handover.py): its limits against the ideal LRU the rest
of the closed form uses, and the shape of its survival curve. No GPU."""

from __future__ import annotations

import itertools
from unittest.mock import patch

import pytest

from iosim.estimates import l2_cutoff, l2_handover
from iosim.estimates.l2_model import hit_fraction


@pytest.mark.parametrize(("alpha", "beta"), [
    (0.5, 0.0), (0.9, 0.0), (1.2, 0.0), (1.04, -0.46), (1.8, -0.8), (2.2, -1.0), (0.3, 0.4),
])
def test_with_the_step_cutoff_and_no_retained_share_it_is_the_ideal_lru(
        alpha: float, beta: float) -> None:
    """The LRU's hit fraction (l2_model.hit_fraction: the fraction of a linear reuse-distance
    range within the L2) up to the midpoint rule's resolution."""
    capacity = 60.0
    with patch.object(l2_cutoff, "FILL_SHARE", 1.0), patch.object(l2_cutoff, "FILL_WIDTH", 0.0), \
            patch.object(l2_handover, "RETAINED_SHARE", 0.0):
        got = l2_handover.gemm_hit_fraction(alpha * capacity, beta * capacity, capacity)
    assert got == pytest.approx(hit_fraction(alpha * capacity, beta * capacity, capacity),
                                abs=1.0 / l2_handover.STEPS)


def test_survival_falls_with_the_reuse_distance_and_ends_at_none() -> None:
    distances = [i / 20 for i in range(0, 80)]
    values = [l2_handover.survival(d) for d in distances]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(values))
    assert values[0] == pytest.approx(1.0)
    assert l2_handover.survival(1.0 + l2_handover.RETAIN_SPAN) == pytest.approx(
        1.0 - l2_cutoff.miss_probability(1.0 + l2_handover.RETAIN_SPAN, 1.0))
    # beyond the L2 the retained share is what is left (the soft cutoff's tail is gone by 1.5)
    assert l2_handover.survival(1.5) == pytest.approx(
        l2_handover.RETAINED_SHARE / 1.5 * (1 - 0.5 / l2_handover.RETAIN_SPAN))


def test_the_array_form_is_the_per_point_one_to_the_last_bit() -> None:
    """gemm_hit_fraction on arrays (a measured sweep's standard baseline,
    analysis/whole_tensor_dram.py) gives each element the double the one-point call gives (one
    rule, survivals, on either): distances across 0, the L2 and the retained span's end."""
    import numpy as np

    gemm_hit_fraction = l2_handover.gemm_hit_fraction
    capacity = 60.0 * 2**20
    alpha = np.array([0, 1, 10e6, 40e6, 59e6, 61e6, 120e6, 400e6])
    beta = np.array([0, 5e6, 20e6, -30e6, 10e6, 1e6, 60e6, 0])
    fractions = gemm_hit_fraction(alpha, beta, capacity)
    assert fractions.tolist() == [gemm_hit_fraction(float(x), float(y), capacity)
                                  for x, y in zip(alpha, beta, strict=True)]
    # the grid spans every line hit, some, and none
    assert fractions.max() == 1 and fractions.min() == 0
    assert ((fractions > 0) & (fractions < 1)).sum() >= 4
