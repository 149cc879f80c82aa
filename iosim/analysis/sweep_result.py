"""A sweep's results: every algorithm's arrays over the grid, and the tidy table of them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from iosim._version import __version__
from iosim.analysis.grid import along
from iosim.analysis.sweep_spec import AXES, SCHEMA, SweepSpec, int_values
from iosim.estimates.roofline import mostly_memory_bound
from iosim.inputs.hardware import Hardware
from iosim.record import Record, field, field_names


class AlgorithmGrid(Record, eq=False):
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
    call_time_s: np.ndarray | None = None
    """One call as do_bench times it (analysis/comparison.py call_time_s): an --impl sweep's,
    whose measured profile adds the implementation's time per call and host-bound floor, and
    the measured vectorised sweep's of iosim's Triton backward (its launcher floor, a training
    step's two calls: sweep.py _launched_call_s); None for the other algorithms of a
    vectorised sweep, whose call is their kernels' time."""

    @property
    def hbm_bytes(self) -> np.ndarray:
        """HBM bytes read + written at each point."""
        return np.asarray(self.hbm_read_bytes + self.hbm_write_bytes)

    @property
    def flops(self) -> np.ndarray:
        """FLOPs (matmul + elementwise) at each point."""
        return np.asarray(self.matmul_flops + self.elementwise_flops)

    @property
    def memory_bound(self) -> np.ndarray:
        """Per point: memory-bound when the memory-bound kernels hold at least half the time."""
        return np.asarray(mostly_memory_bound(self.memory_bound_time_s, self.time_s))


def _cut(grid: AlgorithmGrid, cut: slice) -> AlgorithmGrid:
    """The grid's arrays at the points `cut` keeps (views, no copy)."""
    arrays: dict[str, Any] = {f: getattr(grid, f)[cut] for f in field_names(AlgorithmGrid)
                              if f not in ("name", "tiled") and getattr(grid, f) is not None}
    return AlgorithmGrid(name=grid.name, tiled=grid.tiled, **arrays)


class SweepResult(Record, eq=False):
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
        """Grid points."""
        return int(self.sram_bytes.shape[0])

    @property
    def index(self) -> _Index:
        """Per axis, each point's index into spec.values(axis) (built on first use)."""
        return _Index(self.spec, self._index)

    def algorithm(self, name: str) -> AlgorithmGrid:
        """The grid of the algorithm named `name` (NotInResultError, a KeyError, if it was not swept)."""
        for a in self.algorithms:
            if a.name == name:
                return a
        from iosim.errors import NotInResultError
        from iosim.inputs.excerpts import excerpt

        raise NotInResultError(f"no algorithm {excerpt(name)} was swept here; this result has "
                               f"{', '.join(a.name for a in self.algorithms)}")

    def axis_values(self, axis: str, cut: slice = slice(None)) -> np.ndarray:
        """Each point's value on an axis, defaults resolved (kv_heads = heads, n_kv = n, d_v = d); `cut`
        keeps those points only (a streamed chunk indexes its own points, not all)."""
        index = self.index[axis][cut]
        if axis == "gpu":
            return np.asarray(np.array([h.name for h in self.hardware], dtype=object)[index])
        if axis in ("kv_heads", "n_kv", "d_v"):
            own = int_values(self.spec.values(axis))[index]
            other = self.axis_values({"kv_heads": "heads", "n_kv": "n", "d_v": "d"}[axis], cut)
            return np.asarray(np.where(own > 0, own, other))
        values = self.spec.values(axis)
        if axis == "window" and self.spec.window_capped:  # 0 where it covers every key
            window = np.asarray(int_values(values)[index])
            return np.asarray(np.where(window >= self.axis_values("n_kv", cut), 0, window))
        if axis == "sparsity":
            return np.asarray(np.array(values, dtype=np.float64)[index])
        if axis in ("dtype", "pass_", "causal"):
            return np.asarray(np.array(values, dtype=object if axis != "causal" else bool)[index])
        return np.asarray(int_values(values)[index])

    def columns(self, algorithms: Sequence[str] | None = None, *,
                max_points: int | None = None, start: int = 0,
                coded: dict[str, tuple[Any, ...]] | None = None) -> dict[str, np.ndarray]:
        """The long table: one row per (point, algorithm), points in grid order.

        `start` and `max_points` keep the points start .. start + max_points (a table's first
        rows, or one chunk of a streamed file, without building all). Given `coded` (a dict),
        the name columns (NAME_COLUMNS) come as intp codes into the values that `coded` then
        holds under their names: a writer handles each distinct name once.
        """
        start, max_points, algorithms = self._checked_columns_arguments(start, max_points,
                                                                        algorithms)
        cut = slice(start, None if max_points is None else start + max_points)
        # every array cut to the chosen points first: a chunk costs its own size, not the grid's
        picked = [self.algorithm(a) for a in algorithms] if algorithms else list(self.algorithms)
        chosen = [_cut(a, cut) for a in picked]
        k = len(chosen)
        base = _cut(self.baseline, cut)

        def per_point(values: np.ndarray) -> np.ndarray:
            return np.repeat(values, k)

        def interleave(arrays: list[np.ndarray]) -> np.ndarray:
            return np.stack(arrays, axis=1).reshape(-1)

        def names(name: str, values: tuple[Any, ...], codes: np.ndarray) -> np.ndarray:
            if coded is None:
                return np.asarray(np.array(values, dtype=object)[codes])
            coded[name] = values
            return codes

        cols: dict[str, np.ndarray] = {}
        for axis in ("gpu", "dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "d_v",
                     "n", "n_kv", "sparsity"):
            if axis == "d_v" and self.spec.d_v == (None,):
                continue  # d_v = d everywhere: the d column says it (the columns stay as before)
            name = "pass" if axis == "pass_" else axis
            if name in NAME_COLUMNS:
                values = (tuple(h.name for h in self.hardware) if axis == "gpu"
                          else tuple(self.spec.values(axis)))
                cols[name] = names(name, values, per_point(self.index[axis][cut]))
            else:
                cols[name] = per_point(self.axis_values(axis, cut))
        cols["sram_bytes"] = per_point(self.sram_bytes[cut])
        if self.spec.window != (None,):  # only with a window, so other sweeps keep their columns
            cols["window"] = per_point(self.axis_values("window", cut))
        points = len(self.sram_bytes[cut])
        cols["algorithm"] = names("algorithm", tuple(a.name for a in chosen),
                                  np.tile(np.arange(k, dtype=np.intp), points))
        for name in ("block_q", "block_kv", "fits_sram", "fits_in_hbm", "bwd_block_q",
                     "bwd_block_kv", "splits",
                     "hbm_read_bytes", "hbm_write_bytes", "hbm_bytes", "flops", "matmul_flops",
                     "elementwise_flops", "time_s"):
            cols[name] = interleave([getattr(a, name) for a in chosen])
        if any(a.call_time_s is not None for a in chosen):  # its call's time too
            cols["call_time_s"] = interleave(
                [a.time_s if a.call_time_s is None else a.call_time_s for a in chosen])
        cols["bound"] = names("bound", ("compute", "memory"), interleave(
            [a.memory_bound for a in chosen]).astype(np.intp))
        cols["traffic_ratio_vs_standard"] = interleave(
            [base.hbm_bytes / a.hbm_bytes for a in chosen])
        cols["speedup_vs_standard"] = interleave([base.time_s / a.time_s for a in chosen])
        return cols

    def _checked_columns_arguments(self, start: object, max_points: object,
                                   algorithms: object) -> tuple[int, int | None, list[str]]:
        """columns()'s arguments as it slices with them: a negative start or count sliced from
        the end (a silently wrong table), a float or text was a TypeError, an algorithm not swept
        a KeyError, and one name given as a string was read letter by letter."""
        from iosim.errors import IosimError, arg
        from iosim.inputs.api_values import check_choice, check_int
        from iosim.inputs.excerpts import excerpt

        start = check_int("start", start, low=0, high=2**63 - 1)
        if start > self.points:
            raise IosimError(f"{arg('start', start)} is past the sweep's {self.points:,} points; "
                             f"use 0 … {self.points:,}")
        if max_points is not None:
            max_points = check_int("max_points", max_points, low=0, high=2**63 - 1)
        swept = tuple(a.name for a in self.algorithms)
        if algorithms is None:
            return start, max_points, []
        if isinstance(algorithms, str) or not isinstance(algorithms, (list, tuple)):
            raise IosimError(f"{arg('algorithms')} must be a list of swept algorithm names "
                             f"(e.g. [{swept[0]!r}]), got {excerpt(algorithms)}")
        return start, max_points, [check_choice("algorithms", a, swept, what="swept algorithm")
                                   for a in algorithms]

    def describe_fixed(self) -> list[str]:
        """'axis value' of the axes that do not vary, for headers and titles."""
        out = [] if self.spec.page_size is None else [
            f"paged KV ({self.spec.page_size} tokens/page)"]
        if self.spec.prefix_len is not None and self.spec.suffix_lens is not None:
            out.append(f"shared prefix {self.spec.prefix_len} + {len(self.spec.suffix_lens)} "
                       f"suffixes")
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
            elif axis in _SHOWN_WHEN_SET:
                if value is not None:
                    out.append(_SHOWN_WHEN_SET[axis].format(value) + (
                        f" (full attention where N_kv ≤ {value:,})"
                        if axis == "window" and self.spec.window_capped else ""))
            elif axis == "sram_bytes":
                if self.spec.sram_elements == (None,):
                    out.append("SRAM = the GPU's sram_per_block" if value is None
                               else f"SRAM {value:,} B")
            elif value is None and self.spec.impl is not None and axis in ("block_q", "block_kv"):
                if axis == "block_q":
                    out.append(f"blocks from {self.spec.impl}'s tile table")
            elif value is None:
                out.append({"kv_heads": "kv heads = heads", "n_kv": "N_kv = N",
                            "block_q": "B_r by Alg. 1 line 1",
                            "block_kv": "B_c by Alg. 1 line 1"}[axis])
            else:
                out.append(f"{_LABELS.get(axis, axis)} {value:,}")
        if self.spec.latent_kv:
            out.append("latent KV (V = K[:, :d_v])")
        if self.spec.fp8_scales:
            out.append(f"FP8 {self.spec.fp8_scales} scales")
        return out

    def metadata(self) -> dict[str, Any]:
        """The sweep's description for JSON and reports: schema, axes, GPUs, algorithms, notes."""
        spec = self.spec
        return {
            "schema": SCHEMA,
            "iosim_version": __version__,
            "points": self.points,
            "axes": {("pass" if a == "pass_" else a): list(spec.values(a)) for a in AXES
                     if (a != "d_v" or spec.d_v != (None,))
                     and (a != "window" or spec.window != (None,))},
            **({"seqlens": list(spec.seqlens), "packing": spec.packing}
               if spec.seqlens is not None else {}),
            "gpus": [h.name for h in self.hardware],
            "unfused": list(spec.unfused),
            **({"latent_kv": True} if spec.latent_kv else {}),
            **({"fp8_scales": spec.fp8_scales} if spec.fp8_scales else {}),
            **({"page_size": spec.page_size} if spec.page_size is not None else {}),
            **({"prefix_len": spec.prefix_len, "suffix_lens": list(spec.suffix_lens or ())}
               if spec.prefix_len is not None else {}),
            "algorithms": [a.name for a in self.algorithms],
            "profile": spec.profile,
            "notes": list(self.notes),
        }


NAME_COLUMNS = ("gpu", "dtype", "pass", "algorithm", "bound")
"""The columns of names (object arrays of str in `SweepResult.columns()`)."""

_SHOWN_WHEN_SET = {"splits": "splits {}", "d_v": "d_v {:,}", "window": "window {:,}",
                   "sram_elements": "M {:,} elements"}
"""Fixed axes shown only when set (None: the default, said nowhere), and how."""

_LABELS = {"n": "N", "n_kv": "N_kv", "kv_heads": "kv heads", "block_q": "B_r", "block_kv": "B_c",
           "sparsity": "s", "splits": "splits", "window": "window"}


class _Index(Mapping[str, np.ndarray]):
    """axis -> each point's index on that axis, broadcast from the grid's shape when asked."""

    def __init__(self, spec: SweepSpec, cache: dict[str, np.ndarray]) -> None:
        self._spec, self._cache = spec, cache

    def __getitem__(self, axis: str) -> np.ndarray:
        if axis not in self._cache:
            if axis not in AXES:
                raise KeyError(axis)
            count = len(self._spec.values(axis))
            self._cache[axis] = np.broadcast_to(along(axis, np.arange(count)),
                                                self._spec.shape).reshape(-1)
        return self._cache[axis]

    def __iter__(self) -> Iterator[str]:
        return iter(AXES)

    def __len__(self) -> int:
        return len(AXES)
