"""What a cuBLAS GEMM finds in L2 of a whole tensor an earlier kernel streamed (bwd11).

The closed form (l2.py `_carried`) charges a tensor that an earlier whole-tensor kernel touched
as an ideal LRU cache would keep it: every line whose reuse distance (the bytes touched since,
linear along the stream from `alpha + beta` to `alpha`) is at most the L2 hits, every other
misses. Eager PyTorch's elementwise kernels follow that (they read each line once, in address
order, on every SM at once). A GEMM that reads the operand does not, on either side of the
cutoff (ncu, every eager backward record: dK = dSᵀ Q after dQ = dS K read dS; dQ after the
scale pass wrote dS; dP = dO Vᵀ after dV = Pᵀ dO read dO):

  * Below the L2, misses begin early and grow gradually: dK's dS misses 9-18 % at a reuse
    distance of 0.58-0.70 × the L2, 55-69 % at 0.85-0.91, where the ideal LRU keeps it all.
    That is the L2's soft cutoff (l2_cutoff.py: sets of a hashed, two-partition L2 overflow at
    different fills), with its constants as fitted on Algorithm 4 and FA2 (not refitted here):
    each line misses with miss_probability(its reuse distance), averaged over the stream.
  * Beyond the L2, a share of the earlier stream survives where the ideal LRU keeps none:
    dK still hits 10-16 MB of dS (0.16-0.25 of the L2) at 1.0-1.3 × the L2, fewer beyond
    (0.14 at 1.5, 0.02-0.08 at 2.3-2.6, none from 3), dQ of the scale pass's output about the
    same. RETAINED_SHARE · L2 of the tensor's lines survive a reuse distance up to the L2,
    and that share falls linearly to none at RETAIN_SPAN · L2 beyond it.

A line hits with the larger of the two (the two describe the same cache: the soft cutoff the
bulk below it, the retained share the tail above it). Pure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.algorithms.loopnest import Kernel
from iosim.estimates import l2_cutoff

RETAINED_SHARE = 0.25
"""Bytes of an earlier kernel's stream, as a share of the L2, that a GEMM still finds at a
reuse distance of the L2 (fitted: `python -m iosim.calibrate.gemm_handover_fit`, seen eager
records; sensitivity in reports/backward-h200.md)."""
RETAIN_SPAN = 2.0
"""Reuse distance beyond the L2, as a share of it, over which the retained share falls to none
(fitted with RETAINED_SHARE)."""


def survival(reuse: float) -> float:
    """The chance that a line a GEMM re-reads after `reuse` × the L2 of other lines is still in
    L2: the soft cutoff's, or the retained share's where that is more (the module docstring);
    `survivals` at one point."""
    return float(survivals(np.asarray(reuse, dtype=float)))


STEPS = 32
"""Points of the midpoint rule that averages `survival` over a stream's reuse distances (the
average moves by < 0.2 % of the tensor from 32 to 256 points on the seen records)."""


def gemm_hit_fraction(alpha: Any, beta: Any, capacity: float) -> Any:
    """Fraction of a carried tensor a GEMM finds in L2: its reuse distances run linearly from
    alpha + beta to alpha bytes along the stream (l2.py `_carried`'s terms). Floats, or arrays
    over a sweep's points (analysis/whole_tensor_dram.py: survivals, the same doubles)."""
    lo, hi = (alpha + beta) / capacity, alpha / capacity
    mean = sum(survivals(np.maximum(0.0, lo + (hi - lo) * (i + 0.5) / STEPS))
               for i in range(STEPS)) / STEPS
    return mean if isinstance(mean, np.ndarray) and mean.ndim else float(mean)


def survivals(reuse: np.ndarray) -> np.ndarray:
    """`survival` at each element of an array of reuse distances (0-d for one point)."""
    bulk = 1.0 - l2_cutoff.miss_probabilities(reuse, 1.0)
    positive = reuse > 0
    fade = np.where(reuse <= 1.0, 1.0, np.maximum(0.0, 1.0 - (reuse - 1.0) / RETAIN_SPAN))
    share = np.minimum(1.0, RETAINED_SHARE / np.where(positive, reuse, 1.0)) * fade
    return np.asarray(np.where(positive, np.maximum(bulk, share), bulk))


def gemm_reads_carried(reader: Kernel, earlier: Kernel) -> bool:
    """Whether the rule applies: a whole-tensor matmul (a cuBLAS GEMM) re-reading what an
    earlier whole-tensor kernel streamed."""
    return reader.kind == "matmul" and reader.loop is None and earlier.loop is None
