"""Does a sweep point fit the GPU's HBM? `compare`'s footprint (inputs, outputs and what the
algorithm holds beside them: N×N matrices, statistics, workspace) against the GPU's capacity,
at chosen points of a sweep (the plots mark the points that do not fit).

A footprint grows with N, so along a series sorted by N (`along_n`) the points that fit are a
prefix: a bisection finds where it ends with O(log n) comparisons instead of one per point.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.analysis.sweep import SweepResult
from iosim.analysis.sweep_spec import WORKLOAD_AXES, spec_workload
from iosim.errors import IosimError


def hbm_fits(result: SweepResult, algorithm: str, positions: np.ndarray, *,
             along_n: bool = False) -> np.ndarray:
    """Whether the algorithm's footprint fits the GPU's memory at each of the points.

    along_n: the points differ only in N and are sorted by it (a series of traffic_vs_n)."""
    if not along_n:
        return np.array([_fits(result, algorithm, int(i)) for i in positions], dtype=bool)
    lo, hi = 0, len(positions)  # the first point that does not fit lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if _fits(result, algorithm, int(positions[mid])):
            lo = mid + 1
        else:
            hi = mid
    return np.arange(len(positions)) < lo


def _fits(result: SweepResult, algorithm: str, i: int) -> bool:
    from iosim.analysis.compare import compare

    # the point's value on each axis (None: the default, which Workload resolves alike)
    values = {a: _plain(result.spec.values(a)[int(result.index[a][i])]) for a in WORKLOAD_AXES}
    try:
        # the point's whole workload, its non-axis fields too (packed sequences, a paged cache,
        # a shared prefix, a model's capped window), as the sweep evaluated it
        workload = spec_workload(result.spec, **values)
        c = compare(workload, result.hardware[int(result.index["gpu"][i])],
                    algorithms=(algorithm,), sram=int(result.sram_bytes[i]))
    except IosimError:
        return True  # a point compare refuses was not plotted as a count either: no mark
    return c.algorithm(algorithm).footprint.fits


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
