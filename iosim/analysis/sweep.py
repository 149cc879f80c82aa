"""Sweeps: every algorithm's exact closed-form counts and roofline time over a grid, vectorised.

A grid is the product of one list of values per axis (N, d, heads, batch, dtype, causal, pass,
GPU, SRAM, block sizes, ...). The counts are the same loop-nest closed forms that `compare` uses
(`access_elements`, `kernel_flops`, `kernel_sums` in algorithms/loopnest.py), evaluated on numpy
int64 arrays that hold every grid point at once: the only Python loops run over chunks of
points, groups of points that share a kernel list, algorithms, kernels and accesses — never over
points. Tests hold every column equal to `compare` on single workloads.

The kernel list of an algorithm comes from `Algorithm.kernels(workload, tiling)`, so kernels
added to an algorithm flow into sweeps by themselves. The list may depend on the workload and the
tiling (a backward with GQA adds kernels, split-KV's combine kernel runs only with several
splits): the sweep records which workload fields and tiling fields `kernels` reads, asks it once
per combination of the values of those axes, and runs the closed forms once per distinct kernel
list over all the points that have it. An algorithm's `finish_tiling` (flash2's backward blocks,
splitkv's split count) has a vectorised twin here, tested equal to it.

In a sweep, blocks that do not fit the SRAM are not an error (as they are in `compare`): the
point is marked `fits_sram = False` and its counts say what the blocks would cost if they did.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iosim._version import __version__
from iosim.algorithms import ALGORITHMS, DEFAULT_ALGORITHMS, Algorithm, get_algorithm
from iosim.algorithms.base import Algorithm as _Base
from iosim.algorithms.blocks import BlockSums, cdiv
from iosim.algorithms.flash2 import Flash2
from iosim.algorithms.loopnest import (
    Dims,
    Kernel,
    access_elements,
    element_bytes,
    kernel_flops,
    kernel_sums,
)
from iosim.algorithms.splitkv import MAX_SPLITS, SplitKV
from iosim.analysis.compare import footprint_bytes, kept_for_backward
from iosim.errors import IosimError
from iosim.estimates.roofline import Profile, roofline_time, roofs_for
from iosim.inputs.hardware import KERNEL_KINDS, Hardware, resolve_hardware
from iosim.inputs.units import DTYPE_BYTES
from iosim.inputs.workload import Tiling, Workload, tiling_arrays

SCHEMA = "iosim.sweep/1"

AXES: tuple[str, ...] = ("gpu", "dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "n",
                         "n_kv", "sparsity", "sram_bytes", "sram_elements", "block_q", "block_kv",
                         "splits")
"""Grid axes, slowest-varying first: points are enumerated in this (C) order."""

WORKLOAD_AXES = ("dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "n", "n_kv",
                 "sparsity")
DEFAULTABLE = ("kv_heads", "n_kv", "sram_bytes", "sram_elements", "block_q", "block_kv", "splits")
"""Axes whose value None means "the default": kv_heads = heads, n_kv = n, the GPU's SRAM,
Alg. 1 line 1's block sizes, FlashAttention-2's split heuristic. In the int64 grids None is 0."""

MAX_POINTS = 5_000_000
"""A larger grid is refused: its result arrays alone would take several GB."""

CHUNK_POINTS = 1 << 18
"""Points evaluated per step (bounds the temporaries; one progress tick each)."""

INT64_HEADROOM = 2**53
"""N·N_kv·d·batch·heads must stay below this, leaving a factor 1024 for bytes per element,
FLOP coefficients and summed terms before int64 (2^63) could overflow."""


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """One list of values per axis; the grid is their product. None = the axis's default."""

    n: tuple[int, ...]
    gpu: tuple[str, ...]
    n_kv: tuple[int | None, ...] = (None,)
    d: tuple[int, ...] = (64,)
    heads: tuple[int, ...] = (1,)
    kv_heads: tuple[int | None, ...] = (None,)
    batch: tuple[int, ...] = (1,)
    dtype: tuple[str, ...] = ("fp16",)
    causal: tuple[bool, ...] = (False,)
    pass_: tuple[str, ...] = ("fwd",)
    sram_bytes: tuple[int | None, ...] = (None,)
    sram_elements: tuple[int | None, ...] = (None,)
    block_q: tuple[int | None, ...] = (None,)
    block_kv: tuple[int | None, ...] = (None,)
    sparsity: tuple[float, ...] = (1.0,)
    """Block-sparse fraction s of non-zero blocks (Prop. 4); 1 = dense."""
    splits: tuple[int | None, ...] = (None,)
    """splitkv's KV splits (None: flash_api.cpp's heuristic); other algorithms ignore it."""
    unfused: tuple[str, ...] = ()
    """Not an axis: the same unfused standard pipeline at every point."""
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    profile: Profile = "spec"

    def values(self, axis: str) -> tuple[Any, ...]:
        return tuple(getattr(self, axis))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(self.values(a)) for a in AXES)

    @property
    def points(self) -> int:
        return math.prod(self.shape)

    @property
    def varying(self) -> tuple[str, ...]:
        """Axes with more than one value."""
        return tuple(a for a in AXES if len(self.values(a)) > 1)


@dataclass(frozen=True, slots=True, eq=False)
class AlgorithmGrid:
    """One algorithm's results at every grid point (arrays of length `SweepResult.points`)."""

    name: str
    tiled: bool
    block_q: np.ndarray
    """B_r used at each point (0 for an untiled algorithm)."""
    block_kv: np.ndarray
    fits_sram: np.ndarray
    """Whether the tiles fit the SRAM (always True for an untiled algorithm)."""
    fits_in_hbm: np.ndarray
    """Whether what the algorithm holds (Footprint.total_bytes) fits the GPU's HBM."""
    hbm_read_bytes: np.ndarray
    hbm_write_bytes: np.ndarray
    matmul_flops: np.ndarray
    elementwise_flops: np.ndarray
    time_s: np.ndarray
    memory_time_s: np.ndarray
    """Σ over kernels of HBM bytes / bandwidth (each kernel's memory roof)."""
    compute_time_s: np.ndarray
    """Σ over kernels of max(matmul FLOPs / matmul peak, elementwise FLOPs / vector peak)."""
    memory_bound_time_s: np.ndarray
    """Time of the memory-bound kernels: the algorithm is memory-bound when it is ≥ half."""
    splits: np.ndarray
    """KV splits (splitkv; 1 for every other algorithm)."""
    bwd_block_q: np.ndarray
    """The backward pass's B_r where the pass has a backward (0 otherwise)."""
    bwd_block_kv: np.ndarray

    @property
    def hbm_bytes(self) -> np.ndarray:
        return np.asarray(self.hbm_read_bytes + self.hbm_write_bytes)

    @property
    def flops(self) -> np.ndarray:
        return np.asarray(self.matmul_flops + self.elementwise_flops)

    @property
    def memory_bound(self) -> np.ndarray:
        return np.asarray(self.memory_bound_time_s >= self.time_s - self.memory_bound_time_s)


@dataclass(frozen=True, slots=True, eq=False)
class SweepResult:
    """A sweep's grid and every algorithm's arrays over it; `columns()` is the tidy table."""

    spec: SweepSpec
    hardware: tuple[Hardware, ...]
    """The resolved GPU of each value of spec.gpu."""
    sram_bytes: np.ndarray
    """The SRAM M each point was tiled for, in bytes."""
    algorithms: tuple[AlgorithmGrid, ...]
    baseline: AlgorithmGrid
    """Standard attention, against which ratios are taken (computed even when not listed)."""
    notes: tuple[str, ...] = ()
    _index: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def points(self) -> int:
        return int(self.sram_bytes.shape[0])

    @property
    def index(self) -> _Index:
        """Per axis, each point's index into spec.values(axis) (built on first use)."""
        return _Index(self.spec, self._index)

    def algorithm(self, name: str) -> AlgorithmGrid:
        for a in self.algorithms:
            if a.name == name:
                return a
        raise KeyError(name)

    def axis_values(self, axis: str, cut: slice = slice(None)) -> np.ndarray:
        """Each point's value on an axis, defaults resolved (kv_heads = heads, n_kv = n); `cut`
        keeps those points only (a streamed chunk indexes its own points, not all)."""
        index = self.index[axis][cut]
        if axis == "gpu":
            return np.asarray(np.array([h.name for h in self.hardware], dtype=object)[index])
        if axis == "kv_heads" or axis == "n_kv":
            own = _int_values(self.spec.values(axis))[index]
            other = self.axis_values("heads" if axis == "kv_heads" else "n", cut)
            return np.asarray(np.where(own > 0, own, other))
        values = self.spec.values(axis)
        if axis == "sparsity":
            return np.asarray(np.array(values, dtype=np.float64)[index])
        if axis in ("dtype", "pass_", "causal"):
            return np.asarray(np.array(values, dtype=object if axis != "causal" else bool)[index])
        return np.asarray(_int_values(values)[index])

    def columns(self, algorithms: Sequence[str] | None = None, *,
                max_points: int | None = None, start: int = 0) -> dict[str, np.ndarray]:
        """The long table: one row per (point, algorithm), points in grid order.

        `start` and `max_points` keep the points start .. start + max_points (a table's first
        rows, or one chunk of a streamed file, without building all).
        """
        chosen = [self.algorithm(a) for a in algorithms] if algorithms else list(self.algorithms)
        k = len(chosen)
        cut = slice(start, None if max_points is None else start + max_points)
        base = self.baseline

        def per_point(values: np.ndarray) -> np.ndarray:
            return np.repeat(values, k)

        def interleave(arrays: list[np.ndarray]) -> np.ndarray:
            return np.stack(arrays, axis=1).reshape(-1)

        # every array cut to the chosen points first: a chunk costs its own size, not the grid's
        cut_grids = [_cut(a, cut) for a in chosen]
        base_cut = _cut(base, cut)
        cols: dict[str, np.ndarray] = {}
        for axis in ("gpu", "dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "n",
                     "n_kv", "sparsity"):
            cols["pass" if axis == "pass_" else axis] = per_point(self.axis_values(axis, cut))
        cols["sram_bytes"] = per_point(self.sram_bytes[cut])
        chosen = cut_grids
        base = base_cut
        points = len(self.sram_bytes[cut])
        cols["algorithm"] = np.tile(np.array([a.name for a in chosen], dtype=object), points)
        cols["block_q"] = interleave([a.block_q for a in chosen])
        cols["block_kv"] = interleave([a.block_kv for a in chosen])
        cols["fits_sram"] = interleave([a.fits_sram for a in chosen])
        cols["fits_in_hbm"] = interleave([a.fits_in_hbm for a in chosen])
        cols["bwd_block_q"] = interleave([a.bwd_block_q for a in chosen])
        cols["bwd_block_kv"] = interleave([a.bwd_block_kv for a in chosen])
        cols["splits"] = interleave([a.splits for a in chosen])
        cols["hbm_read_bytes"] = interleave([a.hbm_read_bytes for a in chosen])
        cols["hbm_write_bytes"] = interleave([a.hbm_write_bytes for a in chosen])
        cols["hbm_bytes"] = interleave([a.hbm_bytes for a in chosen])
        cols["flops"] = interleave([a.flops for a in chosen])
        cols["matmul_flops"] = interleave([a.matmul_flops for a in chosen])
        cols["elementwise_flops"] = interleave([a.elementwise_flops for a in chosen])
        cols["time_s"] = interleave([a.time_s for a in chosen])
        cols["bound"] = np.where(interleave([a.memory_bound for a in chosen]), "memory", "compute"
                                 ).astype(object)
        cols["traffic_ratio_vs_standard"] = interleave(
            [base.hbm_bytes / a.hbm_bytes for a in chosen])
        cols["speedup_vs_standard"] = interleave([base.time_s / a.time_s for a in chosen])
        return cols

    def describe_fixed(self) -> list[str]:
        """'axis value' of the axes that do not vary, for headers and titles."""
        out = []
        for axis in AXES:
            values = self.spec.values(axis)
            if len(values) != 1:
                continue
            value = values[0]
            if axis == "gpu":
                out.append(f"GPU {self.hardware[0].name}")
            elif axis == "causal":
                out.append("causal" if value else "non-causal")
            elif axis == "pass_":
                out.append({"fwd": "forward", "bwd": "backward"}.get(value, "forward+backward"))
            elif axis == "dtype":
                out.append(str(value))
            elif axis == "sparsity":
                if value != 1:
                    out.append(f"block-sparse s = {value:g}")
            elif axis == "splits":
                if value is not None:
                    out.append(f"splits {value}")
            elif axis == "sram_elements":
                if value is not None:
                    out.append(f"M {value:,} elements")
            elif axis == "sram_bytes":
                if self.spec.sram_elements == (None,):
                    out.append("SRAM = the GPU's sram_per_block" if value is None
                               else f"SRAM {value:,} B")
            elif value is None:
                out.append({"kv_heads": "kv heads = heads", "n_kv": "N_kv = N",
                            "block_q": "B_r by Alg. 1 line 1",
                            "block_kv": "B_c by Alg. 1 line 1"}[axis])
            else:
                out.append(f"{_LABELS.get(axis, axis)} {value:,}")
        return out

    def metadata(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "schema": SCHEMA,
            "iosim_version": __version__,
            "points": self.points,
            "axes": {("pass" if a == "pass_" else a): list(spec.values(a)) for a in AXES},
            "gpus": [h.name for h in self.hardware],
            "unfused": list(spec.unfused),
            "algorithms": [a.name for a in self.algorithms],
            "profile": spec.profile,
            "notes": list(self.notes),
        }


def _cut(grid: AlgorithmGrid, cut: slice) -> AlgorithmGrid:
    """The grid's arrays at the points `cut` keeps (views, no copy)."""
    arrays: dict[str, Any] = {f: getattr(grid, f)[cut] for f in AlgorithmGrid.__dataclass_fields__
                              if f not in ("name", "tiled")}
    return AlgorithmGrid(name=grid.name, tiled=grid.tiled, **arrays)


_LABELS = {"n": "N", "n_kv": "N_kv", "kv_heads": "kv heads", "block_q": "B_r", "block_kv": "B_c",
           "sparsity": "s", "splits": "splits"}


class _Index(Mapping[str, np.ndarray]):
    """axis -> each point's index on that axis, broadcast from the grid's shape when asked."""

    def __init__(self, spec: SweepSpec, cache: dict[str, np.ndarray]) -> None:
        self._spec, self._cache = spec, cache

    def __getitem__(self, axis: str) -> np.ndarray:
        if axis not in self._cache:
            if axis not in AXES:
                raise KeyError(axis)
            count = len(self._spec.values(axis))
            self._cache[axis] = np.broadcast_to(_along(axis, np.arange(count)),
                                                self._spec.shape).reshape(-1)
        return self._cache[axis]

    def __iter__(self) -> Iterator[str]:
        return iter(AXES)

    def __len__(self) -> int:
        return len(AXES)


def _int_values(values: Sequence[Any]) -> np.ndarray:
    return np.array([0 if v is None else int(v) for v in values], dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# validation


def _check(spec: SweepSpec) -> tuple[list[Algorithm], tuple[Hardware, ...], list[str]]:
    if spec.profile == "measured":
        # that profile's memory roof is the L2-aware DRAM estimate (l2.py), a per-workload model
        # with no vectorised form; a sweep over L2-oblivious bytes would differ from compare's
        raise IosimError("sweeps and reports use the spec profile only: the measured profile "
                         "charges the L2-aware DRAM estimate, which is per workload; use "
                         "`iosim compare --profile measured` (or `iosim roofline`) per point")
    for axis in AXES:
        if not spec.values(axis):
            raise IosimError(f"--{_flag(axis)} has no values; give at least one")
    points = spec.points
    if points > MAX_POINTS:
        raise IosimError(
            f"the sweep has {points:,} grid points ({' × '.join(map(str, spec.shape))}); at most "
            f"{MAX_POINTS:,} are evaluated at once: narrow a range or split the sweep")
    sram_given = [v for v in spec.sram_bytes if v is not None]
    elements_given = [v for v in spec.sram_elements if v is not None]
    if sram_given and elements_given:
        raise IosimError("give --sram or --sram-elements, not both")
    for axis in ("sram_bytes", "sram_elements", "block_q", "block_kv", "splits"):
        for v in spec.values(axis):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise IosimError(f"--{_flag(axis)} values must be whole numbers of at least 1, "
                                 f"got {v!r}")
    for axis in ("dtype", "pass_", "causal", "batch", "d", "n", "sparsity"):
        for v in spec.values(axis):
            _workload(spec, **{axis: v})
    for v in spec.n_kv:
        if v is not None:
            _workload(spec, n_kv=v)
    for h, kv in itertools.product(spec.heads, spec.kv_heads):
        _workload(spec, heads=h, kv_heads=kv)
    names = list(dict.fromkeys(a.strip().lower() for a in spec.algorithms))
    if not names or not all(names):
        raise IosimError(f"--algo needs a comma-separated list of {', '.join(ALGORITHMS)}")
    algorithms = [get_algorithm(n) for n in names]
    if spec.splits != (None,) and "splitkv" not in names:
        raise IosimError("--splits applies to splitkv; add it to --algo "
                         "(e.g. --algo standard,flash2,splitkv)")
    resolved = [resolve_hardware(g) for g in spec.gpu]
    hardware = tuple(r.hardware for r in resolved)
    seen: dict[str, str] = {}
    for r in resolved:
        if r.hardware.name in seen:
            raise IosimError(f"--gpu lists {r.hardware.name} twice ('{seen[r.hardware.name]}' and "
                             f"'{r.requested}'); list each GPU once")
        seen[r.hardware.name] = r.requested
    for hw, dtype in itertools.product(hardware, spec.dtype):
        roofs_for(hw, dtype, spec.profile)  # raises when the YAML lacks that dtype's peak
    biggest = (float(max(spec.n)) * max(v or max(spec.n) for v in spec.n_kv) * max(spec.d)
               * max(spec.batch) * max(spec.heads))
    if biggest >= INT64_HEADROOM:
        raise IosimError(
            f"N·N_kv·d·batch·heads reaches {biggest:.3g}, beyond the {INT64_HEADROOM:.3g} that "
            f"exact 64-bit counts allow; lower the largest --n, --d, --batch or --heads "
            f"(or run `iosim compare` on that one point: it counts with unbounded integers)")
    if any(v != 1 for v in spec.sparsity):
        # the block mask's sums multiply pair counts by the fraction's numerator (≤ 10^6)
        pairs = float(max(spec.n)) * max(v or max(spec.n) for v in spec.n_kv)
        den = max(_workload(spec, sparsity=v).sparsity_fraction[1] for v in spec.sparsity)
        if pairs * den * 4 >= 2**62:
            raise IosimError(
                f"with --sparsity, N·N_kv·{den} (the fraction's denominator) leaves 64-bit "
                f"integers; lower the largest --n or use a simpler fraction (e.g. 0.25)")
    notes = [r.note for r in resolved if r.note]
    return algorithms, hardware, notes


def _flag(axis: str) -> str:
    return {"pass_": "pass", "sram_bytes": "sram"}.get(axis, axis).replace("_", "-")


def _workload(spec: SweepSpec, **values: Any) -> Workload:
    """The workload of the first value on every axis, with `values` changed.

    A changed n or heads carries its default n_kv or kv_heads along (they default to them).
    """
    first = {a: spec.values(a)[0] for a in WORKLOAD_AXES}
    first.update(values)
    if "n" in values and "n_kv" not in values and spec.n_kv == (None,):
        first["n_kv"] = None
    if "heads" in values and "kv_heads" not in values and spec.kv_heads == (None,):
        first["kv_heads"] = None
    pass_ = first.pop("pass_")
    return Workload(first.pop("n"), pass_=pass_, unfused=spec.unfused, **first)


# ---------------------------------------------------------------------------------------------
# evaluation: numpy broadcasting over the grid's axes
#
# Every axis is one dimension of an ndim = len(AXES) grid. An axis's values live in an array of
# shape (1, ..., len, ..., 1); a quantity that depends on a few axes (the block sizes on GPU,
# dtype, d, SRAM and the given blocks; the roofs on GPU and dtype) is an array over just those
# dimensions, so the closed forms compute each thing on the smallest sub-grid it depends on and
# numpy broadcasts the products up to the full grid. Raveled in C order, the grid's points are
# in AXES order (the last axis fastest).


def _along(axis: str, values: Any) -> np.ndarray:
    """`values` laid along `axis`'s dimension of the grid."""
    shape = [1] * len(AXES)
    shape[AXES.index(axis)] = -1
    return np.asarray(values).reshape(shape)


def _take(array: np.ndarray, where: tuple[slice, ...]) -> np.ndarray:
    """`array[where]` on the dimensions the array spans (its size-1 dimensions broadcast)."""
    return array[tuple(w if n > 1 else slice(None) for w, n in zip(where, array.shape,
                                                                      strict=True))]


@dataclass(frozen=True, slots=True)
class _Grid:
    """The per-point numbers as broadcastable arrays (each over the axes it depends on), or,
    after `subset`, as flat arrays of the points of a mask."""

    n: np.ndarray
    n_kv: np.ndarray
    d: np.ndarray
    batch: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    element_bytes: np.ndarray
    sram_bytes: np.ndarray
    hbm_capacity: np.ndarray
    sparsity_num: Any
    sparsity_den: Any
    """Python 1, 1 when every point is dense (block_sums' dense path), else arrays."""
    bandwidth: np.ndarray
    matmul_peak: np.ndarray
    vector_peak: np.ndarray
    efficiency: dict[str, np.ndarray]
    additive_compute: bool
    """The profile's compute rule (Roofs.additive_compute), the same for every point."""

    def _map(self, cut: Callable[[np.ndarray], np.ndarray]) -> _Grid:
        def apply(value: Any) -> Any:
            if isinstance(value, np.ndarray):
                return cut(value)
            if isinstance(value, dict):
                return {k: apply(v) for k, v in value.items()}
            return value

        return _Grid(**{name: apply(getattr(self, name)) for name in self.__dataclass_fields__})

    def take(self, where: tuple[slice, ...]) -> _Grid:
        return self._map(lambda a: _take(a, where))

    def subset(self, shape: tuple[int, ...], mask: np.ndarray) -> _Grid:
        return self._map(lambda a: np.broadcast_to(a, shape)[mask])


def _grid(spec: SweepSpec, hardware: Sequence[Hardware]) -> tuple[_Grid, list[str]]:
    def ints(axis: str) -> np.ndarray:
        return _along(axis, _int_values(spec.values(axis)))

    n, n_kv_given = ints("n"), ints("n_kv")
    heads, kv_given = ints("heads"), ints("kv_heads")
    elt = _along("dtype", [DTYPE_BYTES[t] for t in spec.dtype]).astype(np.int64)
    gpu_sram = _along("gpu", [int(hw.sram_per_block_bytes) for hw in hardware]).astype(np.int64)
    sram_given, elements_given = ints("sram_bytes"), ints("sram_elements")
    sram = np.where(sram_given > 0, sram_given,
                    np.where(elements_given > 0, elements_given * elt, gpu_sram))
    if all(v == 1 for v in spec.sparsity):
        num: Any = 1
        den: Any = 1
    else:
        fractions = [_workload(spec, sparsity=v).sparsity_fraction for v in spec.sparsity]
        num = _along("sparsity", np.array([f[0] for f in fractions], dtype=np.int64))
        den = _along("sparsity", np.array([f[1] for f in fractions], dtype=np.int64))

    roof_shape = [1] * len(AXES)
    roof_shape[AXES.index("gpu")] = len(hardware)
    roof_shape[AXES.index("dtype")] = len(spec.dtype)
    bandwidth, matmul, vector = (np.zeros(roof_shape) for _ in range(3))
    efficiency = {kind: np.ones(roof_shape) for kind in KERNEL_KINDS}
    notes: list[str] = []
    for (g, hw), (t, dtype) in itertools.product(enumerate(hardware), enumerate(spec.dtype)):
        roofs = roofs_for(hw, dtype, spec.profile)
        at = _roof_index(g, t)
        bandwidth[at] = roofs.hbm_bandwidth_bytes_per_s
        matmul[at] = roofs.matmul_flops_per_s
        vector[at] = roofs.vector_flops_per_s
        for kind in KERNEL_KINDS:
            efficiency[kind][at] = roofs.efficiency.get(kind, 1.0)
        notes.extend(f"{hw.name}, {dtype}: {n}" for n in roofs.notes)
    grid = _Grid(n=n, n_kv=np.where(n_kv_given > 0, n_kv_given, n), d=ints("d"),
                 batch=ints("batch"), heads=heads,
                 kv_heads=np.where(kv_given > 0, kv_given, heads), element_bytes=elt,
                 sram_bytes=sram,
                 hbm_capacity=_along("gpu", [float(hw.hbm_capacity_bytes) for hw in hardware]),
                 sparsity_num=num, sparsity_den=den, bandwidth=bandwidth,
                 matmul_peak=matmul, vector_peak=vector, efficiency=efficiency,
                 additive_compute=roofs.additive_compute)
    return grid, list(dict.fromkeys(notes))


def _roof_index(gpu: int, dtype: int) -> tuple[int, ...]:
    at = [0] * len(AXES)
    at[AXES.index("gpu")] = gpu
    at[AXES.index("dtype")] = dtype
    return tuple(at)


# ---------------------------------------------------------------------------------------------
# tiling: Alg. 1 line 1 on arrays, then each algorithm's finish_tiling (vectorised twins)


@dataclass(frozen=True, slots=True)
class _Tiles:
    """An algorithm's blocks at every point (broadcastable arrays; all 0 for an untiled one)."""

    block_q: Any
    block_kv: Any
    fits: Any
    bwd_block_q: Any = None
    """The backward's blocks where they differ from the forward's by rule (flash2), else None."""
    bwd_block_kv: Any = None
    splits: Any = 1


def _tiles(spec: SweepSpec, algorithm: Algorithm, g: _Grid,
           hardware: Sequence[Hardware]) -> _Tiles:
    if not algorithm.tiled:
        return _Tiles(0, 0, True)
    block_q, block_kv = _along("block_q", _int_values(spec.block_q)), _along(
        "block_kv", _int_values(spec.block_kv))
    q, kv, fits = tiling_arrays(g.sram_bytes, g.d, g.element_bytes, outer=algorithm.outer,
                                block_q=block_q, block_kv=block_kv)
    tiles = _Tiles(q, kv, fits)
    finish = type(algorithm).finish_tiling
    if finish is _Base.finish_tiling:
        return tiles
    twin = _FINISH_TILING.get(finish)
    if twin is None:
        raise IosimError(f"{algorithm.name} chooses its tiling in finish_tiling, which iosim "
                         f"sweep cannot vectorise yet; use `iosim compare` for it")
    return twin(spec, g, tiles, block_q, block_kv, hardware)


def _flash2_finish(spec: SweepSpec, g: _Grid, tiles: _Tiles, block_q: np.ndarray,
                   block_kv: np.ndarray, hardware: Sequence[Hardware]) -> _Tiles:
    """Flash2.finish_tiling on arrays: a pass with a backward, no block given → the backward's
    blocks by Alg. 1 line 1 for its K/V-outer loop."""
    bwd_q, bwd_kv, _ = tiling_arrays(g.sram_bytes, g.d, g.element_bytes, outer="kv")
    keep = (block_q > 0) | (block_kv > 0) | _along("pass_", np.array(
        [p == "fwd" for p in spec.pass_]))
    return _Tiles(tiles.block_q, tiles.block_kv, tiles.fits, np.where(keep, tiles.block_q, bwd_q),
                  np.where(keep, tiles.block_kv, bwd_kv))


def _splitkv_finish(spec: SweepSpec, g: _Grid, tiles: _Tiles, block_q: np.ndarray,
                    block_kv: np.ndarray, hardware: Sequence[Hardware]) -> _Tiles:
    """SplitKV.finish_tiling on arrays: --splits (checked), else flash_api.cpp's heuristic."""
    group = g.heads // g.kv_heads
    packs = (g.n == 1) & (group > 1)  # splitkv.packs_heads
    rows = g.n * np.where(packs, group, 1)
    heads = np.where(packs, g.kv_heads, g.heads)
    m_blocks = cdiv(rows, tiles.block_q)
    n_blocks = cdiv(g.n_kv, tiles.block_kv)
    given = _along("splits", _int_values(spec.splits))
    too_many = np.broadcast_to((given > 0) & (given > n_blocks),
                               np.broadcast_shapes(given.shape, n_blocks.shape))
    if too_many.any():
        at = np.unravel_index(int(np.flatnonzero(too_many)[0]), too_many.shape)
        value = int(np.broadcast_to(given, too_many.shape)[at])
        blocks = int(np.broadcast_to(n_blocks, too_many.shape)[at])
        raise IosimError(f"--splits {value} is more than the {blocks} key blocks of some points "
                         f"(N_kv {int(np.broadcast_to(g.n_kv, too_many.shape)[at])}); use at "
                         f"most {blocks}, or auto")
    if any(v is None for v in spec.splits):
        missing = [hw.name for hw in hardware if hw.sm_count is None]
        if missing:
            raise IosimError(f"{missing[0]}'s YAML has no sm_count, which the split heuristic "
                             f"needs; give --splits")
        sms = _along("gpu", np.array([hw.sm_count or 1 for hw in hardware], dtype=np.int64))
        auto = num_splits_heuristic_array(g.batch * heads * m_blocks, 2 * sms, n_blocks,
                                          MAX_SPLITS)
        splits = np.where(given > 0, given, auto)
    else:
        splits = given
    return _Tiles(tiles.block_q, tiles.block_kv, tiles.fits, splits=splits)


_FINISH_TILING: dict[Any, Callable[..., _Tiles]] = {
    Flash2.finish_tiling: _flash2_finish,
    SplitKV.finish_tiling: _splitkv_finish,
}


def num_splits_heuristic_array(batch_nheads_mblocks: Any, num_sms: Any, num_n_blocks: Any,
                               max_splits: int) -> np.ndarray:
    """splitkv.num_splits_heuristic element-wise (a loop over the candidate split counts)."""
    grid, sms, blocks = (np.asarray(v, dtype=np.int64) for v in np.broadcast_arrays(
        batch_nheads_mblocks, num_sms, num_n_blocks))
    limit = np.minimum(np.minimum(max_splits, sms), blocks)
    efficiency = np.zeros((max_splits, *grid.shape))
    for splits in range(1, max_splits + 1):
        eligible = (splits <= limit) & (
            (splits == 1) | (cdiv(blocks, splits) != cdiv(blocks, max(splits - 1, 1))))
        n_waves = grid * splits / sms
        efficiency[splits - 1] = np.where(eligible, n_waves / np.ceil(n_waves), 0.0)
    best = efficiency.max(axis=0)
    chosen = np.ones(grid.shape, dtype=np.int64)
    found = np.zeros(grid.shape, dtype=bool)
    for splits in range(1, max_splits + 1):
        eligible = (splits <= limit) & (
            (splits == 1) | (cdiv(blocks, splits) != cdiv(blocks, max(splits - 1, 1))))
        hit = ~found & eligible & (efficiency[splits - 1] >= 0.85 * best)
        chosen = np.where(hit, splits, chosen)
        found |= hit
    return np.asarray(np.where(grid >= 0.8 * sms, 1, chosen))


# ---------------------------------------------------------------------------------------------
# kernel lists: which fields `kernels` reads, and one list per combination of their values

_READS: list[set[str]] = []


class _RecordingWorkload(Workload):
    """A Workload that notes every field `Algorithm.kernels` reads (properties read fields)."""

    def __getattribute__(self, name: str) -> Any:
        if _READS and not name.startswith("__"):
            _READS[-1].add(name)
        return object.__getattribute__(self, name)


class _RecordingTiling(Tiling):
    def __getattribute__(self, name: str) -> Any:
        if _READS and not name.startswith("__"):
            _READS[-1].add("tiling." + name)
        return object.__getattribute__(self, name)


_FIELD_AXES = {"n": "n", "n_kv": "n_kv", "d": "d", "heads": "heads", "kv_heads": "kv_heads",
               "batch": "batch", "dtype": "dtype", "causal": "causal", "pass_": "pass_",
               "sparsity": "sparsity"}


@dataclass(frozen=True, slots=True)
class _KernelPlan:
    """An algorithm's distinct kernel lists and, per point, which one applies."""

    lists: tuple[tuple[Kernel, ...], ...]
    which: Any
    """Index into `lists`: an int (one list everywhere) or a broadcastable array."""
    kept: tuple[tuple[Any, Any, str], ...] = ()
    """Per list: (saved accesses, fixed buffers, pass) of compare.kept_for_backward, for the
    HBM footprint (the pass decides the kernel list, so one pass per list)."""


def _probe_workload(spec: SweepSpec, values: dict[str, Any]) -> Workload:
    w = _workload(spec, **values)
    fields = {f: getattr(w, f) for f in Workload.__dataclass_fields__}
    return _RecordingWorkload(**fields)


def _probe_tiling(splits: int) -> Tiling:
    return _RecordingTiling(1, 1, 1, "sweep probe", "sweep probe", splits=splits)


def _kernels(algorithm: Algorithm, w: Workload, splits: int, reads: set[str]
             ) -> tuple[Kernel, ...]:
    tiling = _probe_tiling(splits) if algorithm.tiled else None
    _READS.append(set())
    try:
        kernels = algorithm.kernels(w, tiling)
    finally:
        reads |= _READS.pop()
    return kernels


def _kernel_plan(spec: SweepSpec, algorithm: Algorithm, tiles: _Tiles) -> _KernelPlan:
    # 1. what kernels() reads: the base point and every single-axis change (with 1 and 2 splits)
    reads: set[str] = set()
    for splits in (1, 2):
        _kernels(algorithm, _probe_workload(spec, {}), splits, reads)
    for axis in WORKLOAD_AXES:
        for v in spec.values(axis)[1:]:
            _kernels(algorithm, _probe_workload(spec, {axis: v}), 1, reads)
    axes = {_FIELD_AXES[f] for f in reads if f in _FIELD_AXES}
    if "n_kv" in axes and spec.n_kv == (None,):
        axes.add("n")
    if "kv_heads" in axes and spec.kv_heads == (None,):
        axes.add("heads")
    read_axes = [a for a in WORKLOAD_AXES if a in axes and len(spec.values(a)) > 1]
    tiling_reads = {f.removeprefix("tiling.") for f in reads if f.startswith("tiling.")}
    unknown = tiling_reads - {"splits", "backward_blocks", "bwd_block_q", "bwd_block_kv"}
    if unknown:
        raise IosimError(f"{algorithm.name}'s kernel list depends on its tiling "
                         f"({', '.join(sorted(unknown))}), which iosim sweep cannot group by "
                         f"yet; use `iosim compare` for it")
    split_values: list[int] = [1]
    split_index: Any = 0
    # one probe per class of split counts, not per count: a product of every N with every
    # count made a sweep including N = 1 (which adds splitkv) ~30× slower (issue 13 item 5)
    classes = algorithm.split_class(tiles.splits)
    if "splits" in tiling_reads and isinstance(classes, np.ndarray):
        unique, inverse = np.unique(classes, return_inverse=True)
        split_values = [int(v) for v in unique]
        split_index = inverse.reshape(classes.shape)
    elif "splits" in tiling_reads:
        split_values = [int(classes)]
    # 2. one kernels() call per combination of those axes' values and split counts
    lists: dict[tuple[Kernel, ...], int] = {}
    kept: list[tuple[Any, Any, str]] = []
    sizes = [len(spec.values(a)) for a in read_axes] + [len(split_values)]
    table = np.zeros(sizes, dtype=np.int64)
    for combo in itertools.product(*(range(k) for k in sizes)):
        values = {a: spec.values(a)[i] for a, i in zip(read_axes, combo, strict=False)}
        probe = _probe_workload(spec, values)
        kernels = _kernels(algorithm, probe, split_values[combo[-1]], set())
        if kernels not in lists:
            kept.append((*kept_for_backward(algorithm, _workload(spec, **values)), probe.pass_))
        table[combo] = lists.setdefault(kernels, len(lists))
    if len(lists) == 1:
        return _KernelPlan(tuple(lists), 0, tuple(kept))
    index = tuple(_along(a, np.arange(len(spec.values(a)))) for a in read_axes)
    which = table[(*index, split_index)]
    return _KernelPlan(tuple(lists), which, tuple(kept))


# ---------------------------------------------------------------------------------------------
# the sweep


_OUTPUTS_INT = ("block_q", "block_kv", "hbm_read_bytes", "hbm_write_bytes", "matmul_flops",
                "elementwise_flops", "splits", "bwd_block_q", "bwd_block_kv")
_OUTPUTS_FLOAT = ("time_s", "memory_time_s", "compute_time_s", "memory_bound_time_s")


def sweep(
    spec: SweepSpec, *, on_progress: Callable[[int, int], None] | None = None
) -> SweepResult:
    """Evaluate every algorithm over the grid of `spec`, vectorised (see the module docstring).

    `on_progress(done, total)` is called after each chunk of points (for a progress bar).
    """
    algorithms, hardware, notes = _check(spec)
    standard = ALGORITHMS["standard"]
    everyone = list(dict.fromkeys([standard, *algorithms]))
    shape = spec.shape
    grid, roof_notes = _grid(spec, hardware)
    tiles = {a.name: _tiles(spec, a, grid, hardware) for a in everyone}
    plans = {a.name: _kernel_plan(spec, a, tiles[a.name]) for a in everyone}
    has_backward = _along("pass_", np.array([p != "fwd" for p in spec.pass_]))
    outputs = {}
    for a in everyone:
        t = tiles[a.name]
        out = {**{k: np.zeros(shape, dtype=np.int64) for k in _OUTPUTS_INT},
               **{k: np.zeros(shape, dtype=np.float64) for k in _OUTPUTS_FLOAT},
               "fits_sram": np.ones(shape, dtype=bool), "fits_in_hbm": np.ones(shape, dtype=bool)}
        if a.tiled:
            out["block_q"][...] = t.block_q
            out["block_kv"][...] = t.block_kv
            out["fits_sram"][...] = t.fits
            out["bwd_block_q"][...] = np.where(
                has_backward, t.block_q if t.bwd_block_q is None else t.bwd_block_q, 0)
            out["bwd_block_kv"][...] = np.where(
                has_backward, t.block_kv if t.bwd_block_kv is None else t.bwd_block_kv, 0)
        out["splits"][...] = t.splits
        outputs[a.name] = out
    # causal is evaluated one value at a time: block_sums takes it as a Python bool and computes
    # the causal sums only where they are needed
    for done, chunk in _chunks(spec, {"causal"}):
        for c, causal in enumerate(spec.causal):
            where = list(chunk)
            where[AXES.index("causal")] = slice(c, c + 1)
            part = tuple(where)
            g = grid.take(part)
            for algorithm in everyone:
                _evaluate_plan(algorithm, plans[algorithm.name], tiles[algorithm.name], g, causal,
                               outputs[algorithm.name], part, shape)
        if on_progress is not None:
            on_progress(done, spec.points)

    grids = {a.name: AlgorithmGrid(name=a.name, tiled=a.tiled,
                                   **{k: v.reshape(-1) for k, v in outputs[a.name].items()})
             for a in everyone}
    sram = np.broadcast_to(grid.sram_bytes, shape).reshape(-1)
    return SweepResult(spec, hardware, sram, tuple(grids[a.name] for a in algorithms),
                       grids["standard"], tuple(dict.fromkeys([*notes, *roof_notes])))


def _chunks(spec: SweepSpec, group_axes: set[str]) -> list[tuple[int, tuple[slice, ...]]]:
    """Slices of the grid of about CHUNK_POINTS points each, cut along the longest axis that is
    not evaluated value by value; with the points done after each."""
    shape = spec.shape
    candidates = [a for a in AXES if a not in group_axes and len(spec.values(a)) > 1]
    if not candidates:
        return [(spec.points, tuple(slice(None) for _ in AXES))]
    axis = max(candidates, key=lambda a: len(spec.values(a)))
    k = AXES.index(axis)
    length = shape[k]
    per_value = spec.points // length
    step = max(1, CHUNK_POINTS // per_value)
    out = []
    for start in range(0, length, step):
        stop = min(length, start + step)
        where = [slice(None)] * len(AXES)
        where[k] = slice(start, stop)
        out.append((stop * per_value, tuple(where)))
    return out


def _part_shape(shape: tuple[int, ...], where: tuple[slice, ...]) -> tuple[int, ...]:
    return tuple(len(range(*w.indices(n))) for w, n in zip(where, shape, strict=True))


def _evaluate_plan(algorithm: Algorithm, plan: _KernelPlan, tiles: _Tiles, g: _Grid,
                   causal: bool, out: dict[str, np.ndarray], where: tuple[slice, ...],
                   shape: tuple[int, ...]) -> None:
    """Each distinct kernel list over the points of this slice that have it."""
    t = _Tiles(*(_take(v, where) if isinstance(v, np.ndarray) else v for v in (
        tiles.block_q, tiles.block_kv, tiles.fits, tiles.bwd_block_q, tiles.bwd_block_kv,
        tiles.splits)))
    if len(plan.lists) == 1:
        _evaluate(algorithm, plan.lists[0], g, t, causal, lambda key, value: out[key].__setitem__(
            where, value), plan.kept[0])
        return
    part_shape = _part_shape(shape, where)
    which = np.broadcast_to(_take(plan.which, where), part_shape)
    for index, kernels in enumerate(plan.lists):
        mask = which == index
        if not mask.any():
            continue
        sub_t = _Tiles(*(np.broadcast_to(v, part_shape)[mask] if isinstance(v, np.ndarray)
                         else v for v in (t.block_q, t.block_kv, t.fits, t.bwd_block_q,
                                          t.bwd_block_kv, t.splits)))

        def put(key: str, value: Any, mask: np.ndarray = mask) -> None:
            out[key][where][mask] = value

        _evaluate(algorithm, kernels, g.subset(part_shape, mask), sub_t, causal, put,
                  plan.kept[index])


@dataclass(frozen=True, slots=True)
class _ArrayWorkload:
    """The Workload fields that compare.footprint_bytes reads, as a sweep's arrays."""

    n: Any
    seq_kv: Any
    d: Any
    batch: Any
    heads: Any
    heads_kv: Any
    element_bytes: Any
    pass_: str


def _evaluate(algorithm: Algorithm, kernels: Sequence[Kernel], g: _Grid, t: _Tiles,
              causal: bool, put: Callable[[str, Any], None],
              kept: tuple[Any, Any, str]) -> None:
    """One kernel list over a slice (or a masked subset) of the grid."""
    saved, fixed, pass_ = kept
    held = footprint_bytes(kernels, _ArrayWorkload(g.n, g.n_kv, g.d, g.batch, g.heads,
                                                   g.kv_heads, g.element_bytes, pass_),
                           saved=saved, splits=t.splits, fixed=fixed)
    put("fits_in_hbm", held <= g.hbm_capacity)
    if algorithm.tiled:
        block_q, block_kv = t.block_q, t.block_kv
    else:
        block_q, block_kv = g.n, g.n_kv  # as Dims.of does for an untiled algorithm
    dims = Dims(n_q=g.n, n_kv=g.n_kv, d=g.d, batch=g.batch, heads=g.heads, kv_heads=g.kv_heads,
                element_bytes=g.element_bytes, block_q=block_q, block_kv=block_kv, causal=causal,
                splits=t.splits, sparsity_num=g.sparsity_num, sparsity_den=g.sparsity_den,
                bwd_block_q=t.bwd_block_q, bwd_block_kv=t.bwd_block_kv)
    sums_cache: dict[tuple[bool, str, bool], BlockSums] = {}
    read: Any = 0
    write: Any = 0
    matmul_total: Any = 0
    elementwise_total: Any = 0
    time_total: Any = 0.0
    memory_time_total: Any = 0.0
    compute_time_total: Any = 0.0
    memory_bound_time: Any = 0.0
    for kernel in kernels:
        key = (kernel.loop is not None, kernel.blocks, kernel.pack_heads)
        if key not in sums_cache:
            sums_cache[key] = kernel_sums(kernel, dims)
        sums = sums_cache[key]
        kernel_read: Any = 0
        kernel_write: Any = 0
        for access in kernel.accesses:
            moved = access_elements(access, kernel, dims, sums) * element_bytes(
                access.element, g.element_bytes)
            if access.op == "read":
                kernel_read = kernel_read + moved
            else:
                kernel_write = kernel_write + moved
        matmul, elementwise = kernel_flops(kernel, dims, sums)
        memory_time, compute_time, time = roofline_time(
            kernel_read + kernel_write, matmul, elementwise, bandwidth=g.bandwidth,
            matmul_peak=g.matmul_peak, vector_peak=g.vector_peak,
            efficiency=g.efficiency[kernel.kind], additive=g.additive_compute)
        read = read + kernel_read
        write = write + kernel_write
        matmul_total = matmul_total + matmul
        elementwise_total = elementwise_total + elementwise
        time_total = time_total + time
        memory_time_total = memory_time_total + memory_time
        compute_time_total = compute_time_total + compute_time
        memory_bound_time = memory_bound_time + np.where(memory_time >= compute_time, time, 0.0)
    for key_name, value in (("hbm_read_bytes", read), ("hbm_write_bytes", write),
                            ("matmul_flops", matmul_total),
                            ("elementwise_flops", elementwise_total), ("time_s", time_total),
                            ("memory_time_s", memory_time_total),
                            ("compute_time_s", compute_time_total),
                            ("memory_bound_time_s", memory_bound_time)):
        put(key_name, value)
