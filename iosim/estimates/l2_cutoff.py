"""The chance that a re-read line is gone from the L2, as a function of its reuse distance.

An ideal LRU cache of C bytes keeps a line whose reuse distance (distinct bytes touched between
two uses of it) is at most C and loses every line beyond: a step at C. The H200's L2 is not one
LRU: its lines are spread over two partitions and many sets by an address hash, each set
replaced on its own, so at a given reuse distance some sets are fuller than the mean and lose
their lines while others keep them. Misses therefore start before the stream reaches the
nominal size and grow with it gradually. Measured: Algorithm 4's fused backward (one program
per head sweeping its Q, O, dO, dQ rows once per key block) re-reads half of its sweeps from
DRAM at 0.81 × the L2 (N 6144, d 128, 8 heads: ncu 3.1 GB where the ideal LRU predicts 0.1 GB)
and 92-98 % of them at 1.08 × (tests/data/backward-h200-fresh{,3}.json).

The model: a re-read at reuse distance D misses with probability Φ((D/C − FILL_SHARE) /
FILL_WIDTH), the normal distribution of the fill at which a line's set overflows (a set's load
is a sum of many hashed placements: about normal), clipped to exactly 0 and 1 beyond
TAIL standard deviations so that the sums over blocks and programs that use it stay finite
closed forms (l2_waves.sum_weighted). With FILL_WIDTH = 0 it is the step at FILL_SHARE; with
FILL_SHARE = 1 too, the ideal LRU that l2_simulate.py walks (tests compare them that way).

Both constants are fitted, not hardware facts: `python -m iosim.calibrate.l2_cutoff_fit` fits
them on the seen records (Algorithm 4's fused kernel and FA2's causal backward restarts,
l2_restarts.py, the same physics: a re-read after a reuse distance close to the L2) and prints
their sensitivity; reports/backward-h200.md judges them on a fresh set.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FILL_SHARE = 0.825
"""The reuse distance, as a share of the L2, at which half the re-read lines miss. Fitted with
FILL_WIDTH on a grid (0.70-0.95 by 0.025 × 0-0.2) over the 34 kernels of the seen records that
the cutoff moves (`python -m iosim.calibrate.l2_cutoff_fit`): 32 of 34 within ±10 % of ncu
(the ideal LRU, 1.0 and 0: 23 of 34; bwd4's step at 0.8: 26). Sensitivity on them: 0.8 or 0.85
→ 29 or 31 of 34. Replaces l2_restarts' RESTART_CAPACITY_SHARE = 0.8, a step at that share."""
FILL_WIDTH = 0.15
"""The standard deviation of that share over the L2's sets. Fitted with FILL_SHARE (above);
sensitivity on the seen kernels: 0.125 → 31 of 34, 0.2 → 26, 0 (a step at 0.825) → 26."""
TAIL = 4.0
"""Standard deviations beyond which a miss is taken as certain or impossible (Φ(−4) = 3e-5)."""


def miss_probability(reuse_bytes: float, capacity: float) -> float:
    """The chance that a line re-read after `reuse_bytes` distinct bytes is no longer in an L2
    of `capacity` bytes (FILL_SHARE, FILL_WIDTH: the module docstring)."""
    fill = reuse_bytes / capacity
    if FILL_WIDTH <= 0:
        return 1.0 if fill > FILL_SHARE else 0.0
    z = (fill - FILL_SHARE) / FILL_WIDTH
    if z <= -TAIL:
        return 0.0
    if z >= TAIL:
        return 1.0
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _erf(values: np.ndarray) -> np.ndarray:
    """math.erf on each element: the same doubles as the scalar miss_probability, to the last
    bit (np.fromiter over math.erf: a quarter faster than np.frompyfunc's object array)."""
    return np.fromiter(map(math.erf, values.tolist()), dtype=np.float64, count=values.size)


def miss_probabilities(reuse_bytes: Any, capacity: float) -> Any:
    """miss_probability at each element of an array of reuse distances (the same doubles, to
    the last bit: the same operations element by element, math.erf evaluated only inside the
    tails), for the sweep's array path (analysis/split_choice_grid.py); a float for a float."""
    if not isinstance(reuse_bytes, np.ndarray):
        return miss_probability(reuse_bytes, capacity)
    fill = reuse_bytes / capacity
    if FILL_WIDTH <= 0:
        return np.where(fill > FILL_SHARE, 1.0, 0.0)
    z = (fill - FILL_SHARE) / FILL_WIDTH
    out = np.where(z >= TAIL, 1.0, 0.0)
    inside = (z > -TAIL) & (z < TAIL)
    if np.any(inside):
        erf = _erf(z[inside] / math.sqrt(2.0))
        out[inside] = 0.5 * (1.0 + erf)
    return out


def never_misses(reuse_bytes: float, capacity: float) -> bool:
    """Whether a re-read after at most `reuse_bytes` surely hits (below the cutoff's tail)."""
    return miss_probability(reuse_bytes, capacity) == 0.0


def sure_miss_bytes(capacity: float) -> float:
    """The reuse distance beyond which every re-read misses."""
    return capacity * (FILL_SHARE + TAIL * max(0.0, FILL_WIDTH))


def never_miss_bytes(capacity: float) -> float:
    """The reuse distance up to which every re-read hits."""
    return capacity * (FILL_SHARE - TAIL * max(0.0, FILL_WIDTH))
