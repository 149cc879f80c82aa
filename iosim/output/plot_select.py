"""Selections of a sweep for its figures: series along an axis, and the words of titles and
legends (the fixed workload, the SRAM, the blocks, the GPUs of a set of points)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from iosim.analysis.sweep import SweepResult
from iosim.output.render import fmt_binary_bytes
from iosim.record import Record


class Series(Record):
    """Grid points along one axis, the other varying axes held at one combination."""

    label: str
    """'' for the only series, else e.g. 'd 128, GPU h100-sxm'."""
    positions: np.ndarray
    """Point indices, sorted by the x axis."""


_AXIS_LABELS = {"gpu": "GPU", "dtype": "", "pass_": "", "causal": "causal", "batch": "batch",
                "heads": "heads", "kv_heads": "kv heads", "d": "d", "d_v": "d_v", "n": "N", "n_kv": "N_kv",
                "sram_bytes": "SRAM", "sram_elements": "M", "block_q": "B_r",
                "block_kv": "B_c", "sparsity": "s", "splits": "splits", "window": "window"}
"""A caption word for every sweep axis (sweep_spec.AXES: tests/test_hostile_variants.py holds
them equal; a missing one was a KeyError as soon as that axis varied in a figure)."""

_NONE_TEXT = {"window": "no window", "kv_heads": "kv heads = heads", "n_kv": "N_kv = N",
              "d_v": "d_v = d"}
"""How a None (the default) reads where "auto" would say something untrue."""


def value_text(result: SweepResult, axis: str, i: int) -> str:
    """One axis value of a sweep as a figure's caption says it ("GPU a100-80gb-sxm", "N = 4096")."""
    value = result.spec.values(axis)[i]
    if axis == "gpu":
        return f"GPU {result.hardware[i].name}"
    if axis == "causal":
        return "causal" if value else "non-causal"
    if value is None:
        return _NONE_TEXT.get(axis, f"{_AXIS_LABELS[axis]} auto")
    if axis == "sram_bytes":
        return f"SRAM {fmt_binary_bytes(value)}"
    label = _AXIS_LABELS[axis]
    return f"{label} {value}" if label else str(value)


def series_along(result: SweepResult, x_axis: str, *, max_series: int = 4
                 ) -> tuple[list[Series], str | None]:
    """One series per combination of the other varying axes (at most `max_series`; past that
    the others are held at their first value, and the note says so)."""
    others = [a for a in result.spec.varying if a != x_axis]
    sizes = [len(result.spec.values(a)) for a in others]
    combos = list(itertools.product(*(range(s) for s in sizes)))
    note = None
    if len(combos) > max_series:
        combos = [tuple(0 for _ in others)]
        note = ("other varying axes held at their first value: "
                + ", ".join(value_text(result, a, 0) for a in others))
    x_values = result.axis_values(x_axis) if x_axis != "gpu" else result.index["gpu"]
    out = []
    for combo in combos:
        mask = np.ones(result.points, dtype=bool)
        for axis, i in zip(others, combo, strict=True):
            mask &= result.index[axis] == i
        positions = np.flatnonzero(mask)
        order = np.argsort(_sortable(x_values[positions]), kind="stable")
        label = ", ".join(value_text(result, a, i) for a, i in zip(others, combo, strict=True))
        out.append(Series(label, positions[order]))
    return out, note


def _sortable(values: np.ndarray) -> np.ndarray:
    if values.dtype == object:
        return np.asarray([0 if v is None else v for v in values])
    return values


def fixed_text(result: SweepResult, skip: Sequence[str] = ()) -> str:
    """The workload part of a title: the axes that do not vary (GPU and SRAM left out)."""
    words = [w for w in result.describe_fixed()
             if not w.startswith(("GPU ", "SRAM", "M ", "B_r", "B_c"))
             and w not in ("kv heads = heads", "N_kv = N")]
    for s in skip:
        words = [w for w in words if not w.startswith(s)]
    return ", ".join(words)


def sram_text(result: SweepResult, positions: np.ndarray) -> str:
    """The SRAM per block (KiB) of the selected points, or its range."""
    values = sorted(set(result.sram_bytes[positions].tolist()))
    if len(values) == 1:
        return f"SRAM {fmt_binary_bytes(values[0])} per block"
    return "SRAM " + ", ".join(fmt_binary_bytes(v) for v in values)


def blocks_text(result: SweepResult, positions: np.ndarray) -> str:
    """The block sizes of the selected points, per tiled algorithm."""
    parts = []
    for a in result.algorithms:
        if not a.tiled:
            continue
        pairs = sorted(set(zip(a.block_q[positions].tolist(), a.block_kv[positions].tolist(),
                               strict=True)))
        if len(pairs) == 1:
            parts.append(f"{a.name} B_r×B_c {pairs[0][0]}×{pairs[0][1]}")
    return "; ".join(parts)


def gpu_text(result: SweepResult, positions: np.ndarray) -> str:
    """The display names of the GPUs of the selected points."""
    gpus = sorted(set(result.index["gpu"][positions].tolist()))
    return ", ".join(result.hardware[g].display_name for g in gpus)
