"""Sensitivity of eager9's constants on EAGERFRESH9: each moved ±10 % (no refit, a report of how
much each matters), the fresh set's calls within ±12 %, call median and kernel-model median.

    python benchmarks/eager9_sensitivity.py > benchmarks/eager9-h200/sensitivity.txt
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any
from unittest.mock import patch

from benchmarks.eager8_judge import rows
from iosim.analysis import impl_forward
from iosim.estimates import eager_fallback
from iosim.estimates.eager_mask_fill import with_mask_fill
from iosim.record import replace

RECORD = Path(__file__).parents[1] / "tests" / "data" / "h200-impl-eagerfresh9.json"
MASK_KEYS = ("mask", "mask_contiguous", "mask_copy", "mask_not")


def summary() -> str:
    found = rows([RECORD])
    calls = [abs(r["call_error"]) for r in found]
    kernels = [abs(r["kernel_error"]) for r in found]
    return (f"within ±12 % {sum(c <= 0.12 for c in calls):2d}, call median "
            f"{statistics.median(calls):.1%}, kernels median {statistics.median(kernels):.1%}")


def scaled_mask(name: str, factor: float) -> Any:
    def run(roofs: Any, w: Any) -> Any:
        own = dict(roofs.kernel_memory_efficiency)
        if name in own:
            own[name] *= factor
        return with_mask_fill(replace(roofs, kernel_memory_efficiency=own), w)
    return run


def main() -> None:
    rates = eager_fallback.FORWARD_FALLBACK
    print("frozen:", summary())
    for f in (0.9, 1.1):
        with patch.dict(rates, {k: (b * f, c * f) for k, (b, c) in rates.items()}):
            print(f"all eight fallback rates x{f}:", summary())
        for key, (b, c) in dict(rates).items():
            with patch.dict(rates, {key: (b * f, c * f)}):
                print(f"  {key} x{f}:", summary())
    for name in MASK_KEYS:
        for f in (0.9, 1.1):
            with patch.object(impl_forward, "with_mask_fill", scaled_mask(name, f)):
                print(f"memory_{name} x{f}:", summary())


if __name__ == "__main__":
    main()
