"""What a small page costs a paged KV cache: the transaction efficiency, from calibration only.

A kernel reading K/V through a block table gathers each tile page by page: pages of a few tokens
break a tile's rows into short runs at scattered addresses, so DRAM serves the same bytes at a
lower rate (issue 14: one kernel moved the same bytes at 0.87 TB/s with page size 1 and about
4 TB/s at 128). iosim does not guess that rate. A GPU YAML may carry it, measured:

    measured:
      paged_kv_efficiency:
        source: <the measurement and the fit (tools/fit_paged_kv.py)>
        by_page_size: {1: 0.2, 16: 0.9, 128: 1.0}   # paged ÷ contiguous K/V read rate

A listed page size uses its factor; one between two listed sizes the log-linear interpolation
between them (said so); one outside the measured range, or a GPU without the key, is "not
calibrated": the output shows the bytes only, and the time stays the contiguous cache's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from iosim.algorithms.loopnest import Kernel
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import is_array
from iosim.record import Record

KEY = "measured.paged_kv_efficiency"


class PageEfficiency(Record):
    """The factor for one page size on one GPU (None: not calibrated), and the words for it."""

    page_size: int
    factor: float | None
    note: str

    def to_dict(self) -> dict[str, object]:
        """The JSON object (compare's key paged_kv)."""
        return {"page_size": self.page_size, "efficiency": self.factor, "note": self.note}


def paged_roof_bytes(kernel: Kernel, terms: Iterable[tuple[str, Any]],
                     efficiency: PageEfficiency | None) -> Any:
    """The bytes a kernel's memory roof is charged: its (tensor, DRAM bytes) with the K and V
    reads of a kernel that reads a block table divided by the calibrated efficiency. Ints (one
    point), or int64 arrays over a sweep's points (analysis/sweep_split_dram.py): the same sum
    in the same order, rounded half to even alike (np.rint, Python's round)."""
    paged = any(a.per_page for a in kernel.accesses)
    factor = efficiency.factor if efficiency is not None else None
    if not paged or factor is None:
        return sum(b for _, b in terms)
    total = sum(b / factor if t in ("K", "V") else b for t, b in terms)
    return np.rint(total).astype(np.int64) if is_array(total) else round(total)


def page_efficiency(hardware: Hardware, page_size: int) -> PageEfficiency:
    """The calibrated K/V read efficiency of pages of `page_size` tokens on `hardware`."""
    table = hardware.measured.paged_kv_efficiency if hardware.measured else {}
    if not table:
        from pathlib import Path  # for this message only (start-up time)

        return PageEfficiency(page_size, None, (
            f"paged KV ({page_size} tokens/page): transaction efficiency not calibrated for "
            f"{hardware.name} (no {KEY} in {Path(hardware.path).name}); bytes only"))
    if page_size in table:
        factor = table[page_size]
        how = "measured"
    else:
        below = [p for p in table if p < page_size]
        above = [p for p in table if p > page_size]
        if not below or not above:
            return PageEfficiency(page_size, None, (
                f"paged KV ({page_size} tokens/page): outside the calibrated page sizes "
                f"{min(table)}..{max(table)} of {hardware.name}; not calibrated, bytes only"))
        lo, hi = max(below), min(above)
        t = (math.log2(page_size) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
        factor = table[lo] + t * (table[hi] - table[lo])
        how = f"interpolated between the measured {lo} and {hi} tokens/page"
    return PageEfficiency(page_size, factor, (
        f"paged KV ({page_size} tokens/page): K/V reads at {factor:.3g}× a contiguous "
        f"cache's rate ({how}: {KEY} of {hardware.name}, charged by the measured profile)"))
