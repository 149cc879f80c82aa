"""Sweeps: every algorithm's exact closed-form counts and roofline time over a grid, vectorised.

A grid is the product of one list of values per axis (N, d, heads, batch, dtype, causal, pass,
GPU, SRAM, block sizes, ...). The counts are the same loop-nest closed forms that `compare` uses
(`access_elements`, `kernel_flops`, `kernel_sums` in algorithms/loopnest.py), evaluated on numpy
int64 arrays that hold every grid point at once: the only Python loops run over chunks of
points, groups of points that share a kernel list, algorithms, kernels and accesses — never over
points. Tests hold every column equal to `compare` on single workloads.

The kernel list of an algorithm comes from `Algorithm.kernels(workload)`, so kernels added to an
algorithm flow into sweeps by themselves. The list may depend on the workload: the axes whose
values change it (found by asking `kernels` for each value of each axis) split the grid into
groups, each evaluated with its own list.

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
from iosim.algorithms import ALGORITHMS, Algorithm, get_algorithm
from iosim.algorithms.blocks import BlockSums
from iosim.algorithms.loopnest import (
    Dims,
    Kernel,
    access_elements,
    element_bytes,
    kernel_flops,
    kernel_sums,
)
from iosim.errors import IosimError
from iosim.hardware import KERNEL_KINDS, Hardware, resolve_hardware
from iosim.roofline import Profile, roofs_for
from iosim.units import DTYPE_BYTES
from iosim.workload import Workload, tiling_arrays

SCHEMA = "iosim.sweep/1"

AXES: tuple[str, ...] = ("gpu", "dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "n",
                         "n_kv", "sram_bytes", "sram_elements", "block_q", "block_kv")
"""Grid axes, slowest-varying first: points are enumerated in this (C) order."""

WORKLOAD_AXES = ("dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "n", "n_kv")
DEFAULTABLE = ("kv_heads", "n_kv", "sram_bytes", "sram_elements", "block_q", "block_kv")
"""Axes whose value None means "the default": kv_heads = heads, n_kv = n, the GPU's SRAM,
Alg. 1 line 1's block sizes. In the int64 grids None is 0."""

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
    unfused: tuple[str, ...] = ()
    """Not an axis: the same unfused standard pipeline at every point."""
    algorithms: tuple[str, ...] = tuple(ALGORITHMS)
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

    def axis_values(self, axis: str) -> np.ndarray:
        """Each point's value on an axis, defaults resolved (kv_heads = heads, n_kv = n)."""
        if axis == "gpu":
            return np.asarray(np.array([h.name for h in self.hardware], dtype=object)[self.index["gpu"]])
        if axis == "kv_heads" or axis == "n_kv":
            own = _int_values(self.spec.values(axis))[self.index[axis]]
            other = self.axis_values("heads" if axis == "kv_heads" else "n")
            return np.asarray(np.where(own > 0, own, other))
        values = self.spec.values(axis)
        if axis in ("dtype", "pass_", "causal"):
            return np.asarray(np.array(values, dtype=object if axis != "causal" else bool)[
                self.index[axis]])
        return np.asarray(_int_values(values)[self.index[axis]])

    def columns(self, algorithms: Sequence[str] | None = None, *,
                max_points: int | None = None) -> dict[str, np.ndarray]:
        """The long table: one row per (point, algorithm), points in grid order.

        `max_points` keeps only the first points (a table's first rows without building all).
        """
        chosen = [self.algorithm(a) for a in algorithms] if algorithms else list(self.algorithms)
        k = len(chosen)
        cut = slice(None) if max_points is None else slice(0, max_points)
        base = self.baseline

        def per_point(values: np.ndarray) -> np.ndarray:
            return np.repeat(values[cut], k)

        def interleave(arrays: list[np.ndarray]) -> np.ndarray:
            return np.stack([a[cut] for a in arrays], axis=1).reshape(-1)

        cols: dict[str, np.ndarray] = {}
        for axis in ("gpu", "dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "n",
                     "n_kv"):
            cols["pass" if axis == "pass_" else axis] = per_point(self.axis_values(axis))
        cols["sram_bytes"] = per_point(self.sram_bytes)
        points = len(self.sram_bytes[cut])
        cols["algorithm"] = np.tile(np.array([a.name for a in chosen], dtype=object), points)
        cols["block_q"] = interleave([a.block_q for a in chosen])
        cols["block_kv"] = interleave([a.block_kv for a in chosen])
        cols["fits_sram"] = interleave([a.fits_sram for a in chosen])
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


_LABELS = {"n": "N", "n_kv": "N_kv", "kv_heads": "kv heads", "block_q": "B_r", "block_kv": "B_c"}


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
    for axis in ("sram_bytes", "sram_elements", "block_q", "block_kv"):
        for v in spec.values(axis):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise IosimError(f"--{_flag(axis)} values must be whole numbers of at least 1, "
                                 f"got {v!r}")
    for axis in ("dtype", "pass_", "causal", "batch", "d", "n"):
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


def _structural_axes(spec: SweepSpec, algorithm: Algorithm) -> list[str]:
    """Workload axes whose values change the algorithm's kernel list (tried one at a time)."""
    base = algorithm.kernels(_workload(spec))
    changing = []
    for axis in WORKLOAD_AXES:
        values = spec.values(axis)
        if len(values) < 2:
            continue
        if any(algorithm.kernels(_workload(spec, **{axis: v})) != base for v in values[1:]):
            changing.append(axis)
    return changing


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
    """The per-point numbers as broadcastable arrays (each over the axes it depends on)."""

    n: np.ndarray
    n_kv: np.ndarray
    d: np.ndarray
    batch: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    element_bytes: np.ndarray
    sram_bytes: np.ndarray
    blocks: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    """outer loop axis ("kv" or "q") -> (B_r, B_c, fits) by `tiling_arrays`."""
    bandwidth: np.ndarray
    matmul_peak: np.ndarray
    vector_peak: np.ndarray
    efficiency: dict[str, np.ndarray]

    def take(self, where: tuple[slice, ...]) -> _Grid:
        def cut(value: Any) -> Any:
            if isinstance(value, np.ndarray):
                return _take(value, where)
            if isinstance(value, dict):
                return {k: cut(v) for k, v in value.items()}
            return tuple(cut(v) for v in value)

        return _Grid(**{name: cut(getattr(self, name)) for name in self.__dataclass_fields__})


def _grid(spec: SweepSpec, hardware: Sequence[Hardware], outers: set[str]
          ) -> tuple[_Grid, list[str]]:
    def ints(axis: str) -> np.ndarray:
        return _along(axis, _int_values(spec.values(axis)))

    n, n_kv_given = ints("n"), ints("n_kv")
    heads, kv_given = ints("heads"), ints("kv_heads")
    elt = _along("dtype", [DTYPE_BYTES[t] for t in spec.dtype]).astype(np.int64)
    d = ints("d")
    gpu_sram = _along("gpu", [int(hw.sram_per_block_bytes) for hw in hardware]).astype(np.int64)
    sram_given, elements_given = ints("sram_bytes"), ints("sram_elements")
    sram = np.where(sram_given > 0, sram_given,
                    np.where(elements_given > 0, elements_given * elt, gpu_sram))
    block_q, block_kv = ints("block_q"), ints("block_kv")
    blocks = {outer: tiling_arrays(sram, d, elt, outer=outer, block_q=block_q, block_kv=block_kv)
              for outer in sorted(outers)}

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
    grid = _Grid(n=n, n_kv=np.where(n_kv_given > 0, n_kv_given, n), d=d, batch=ints("batch"),
                 heads=heads, kv_heads=np.where(kv_given > 0, kv_given, heads),
                 element_bytes=elt, sram_bytes=sram, blocks=blocks, bandwidth=bandwidth,
                 matmul_peak=matmul, vector_peak=vector, efficiency=efficiency)
    return grid, list(dict.fromkeys(notes))


def _roof_index(gpu: int, dtype: int) -> tuple[int, ...]:
    at = [0] * len(AXES)
    at[AXES.index("gpu")] = gpu
    at[AXES.index("dtype")] = dtype
    return tuple(at)


_OUTPUTS_INT = ("block_q", "block_kv", "hbm_read_bytes", "hbm_write_bytes", "matmul_flops",
                "elementwise_flops")
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
    grid, roof_notes = _grid(spec, hardware, {a.outer for a in everyone if a.tiled})
    outputs = {a.name: {**{k: np.zeros(shape, dtype=np.int64) for k in _OUTPUTS_INT},
                        **{k: np.zeros(shape, dtype=np.float64) for k in _OUTPUTS_FLOAT},
                        "fits_sram": np.ones(shape, dtype=bool)} for a in everyone}
    # Axes that change an algorithm's kernel list are evaluated one value at a time; causal is
    # too (block_sums takes it as a Python bool: the causal sums only where they are needed).
    group_axes = {a.name: sorted({"causal", "pass_", *_structural_axes(spec, a)},
                                 key=AXES.index) for a in everyone}
    for done, chunk in _chunks(spec, {ax for axes in group_axes.values() for ax in axes}):
        for algorithm in everyone:
            axes = group_axes[algorithm.name]
            for combo in itertools.product(*(range(len(spec.values(a))) for a in axes)):
                where = list(chunk)
                for axis, i in zip(axes, combo, strict=True):
                    where[AXES.index(axis)] = slice(i, i + 1)
                chosen = {a: spec.values(a)[i] for a, i in zip(axes, combo, strict=True)}
                kernels = algorithm.kernels(_workload(spec, **chosen))
                _evaluate(algorithm, kernels, grid.take(tuple(where)), bool(chosen["causal"]),
                          outputs[algorithm.name], tuple(where))
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


def _evaluate(algorithm: Algorithm, kernels: Sequence[Kernel], g: _Grid, causal: bool,
              out: dict[str, np.ndarray], where: tuple[slice, ...]) -> None:
    """One algorithm over one slice of the grid whose points share a kernel list and mask."""
    if algorithm.tiled:
        block_q, block_kv, fits = g.blocks[algorithm.outer]
        out["block_q"][where] = block_q
        out["block_kv"][where] = block_kv
        out["fits_sram"][where] = fits
    else:
        block_q, block_kv = g.n, g.n_kv  # as Dims.of does for an untiled algorithm
    dims = Dims(n_q=g.n, n_kv=g.n_kv, d=g.d, batch=g.batch, heads=g.heads, kv_heads=g.kv_heads,
                element_bytes=g.element_bytes, block_q=block_q, block_kv=block_kv, causal=causal)
    sums_cache: dict[bool, BlockSums] = {}
    read: Any = 0
    write: Any = 0
    matmul_total: Any = 0
    elementwise_total: Any = 0
    time_total: Any = 0.0
    memory_time_total: Any = 0.0
    compute_time_total: Any = 0.0
    memory_bound_time: Any = 0.0
    for kernel in kernels:
        tiled = kernel.loop is not None
        if tiled not in sums_cache:
            sums_cache[tiled] = kernel_sums(kernel, dims)
        sums = sums_cache[tiled]
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
        # the roofline of roofline.estimate_kernels, element-wise, in the same order
        memory_time = (kernel_read + kernel_write) / g.bandwidth
        compute_time = np.maximum(matmul / g.matmul_peak, elementwise / g.vector_peak)
        time = np.maximum(memory_time, compute_time) / g.efficiency[kernel.kind]
        read = read + kernel_read
        write = write + kernel_write
        matmul_total = matmul_total + matmul
        elementwise_total = elementwise_total + elementwise
        time_total = time_total + time
        memory_time_total = memory_time_total + memory_time
        compute_time_total = compute_time_total + compute_time
        memory_bound_time = memory_bound_time + np.where(memory_time >= compute_time, time, 0.0)
    for key, value in (("hbm_read_bytes", read), ("hbm_write_bytes", write),
                       ("matmul_flops", matmul_total), ("elementwise_flops", elementwise_total),
                       ("time_s", time_total), ("memory_time_s", memory_time_total),
                       ("compute_time_s", compute_time_total),
                       ("memory_bound_time_s", memory_bound_time)):
        out[key][where] = value
