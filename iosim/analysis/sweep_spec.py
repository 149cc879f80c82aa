"""What a sweep is asked for: one list of values per axis (SweepSpec), and its checks.

A grid is the product of the axes' values (N, d, heads, batch, dtype, causal, pass, GPU, SRAM,
block sizes, ...). `check_spec` refuses a spec that cannot be evaluated, naming the axis.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from iosim.algorithms import DEFAULT_ALGORITHMS, Algorithm
from iosim.analysis.requests import choose_algorithms, refuse_both_sram
from iosim.errors import IosimError, arg
from iosim.estimates.roofline import Profile, roofs_for
from iosim.inputs.api_values import as_names, as_real, as_whole, check_flag, check_int, check_path_text
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import check_count
from iosim.inputs.limits import (
    INT64_SCORE_PRODUCT,
    MAX_AUTO_SPLIT_POINTS,
    MAX_BLOCK,
    MAX_SPLITS,
    check_sram_bytes,
)
from iosim.inputs.units import DTYPE_BYTES, FP8_DTYPES
from iosim.inputs.workload import Workload, unfused_names
from iosim.record import Record, replace

SCHEMA = "iosim.sweep/1"

AXES: tuple[str, ...] = ("gpu", "dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d",
                         "d_v", "n", "n_kv", "sparsity", "sram_bytes", "sram_elements", "block_q",
                         "block_kv", "splits", "window")
"""Grid axes, slowest-varying first: points are enumerated in this (C) order."""

WORKLOAD_AXES = ("dtype", "pass_", "causal", "batch", "heads", "kv_heads", "d", "d_v", "n",
                 "n_kv", "sparsity", "window")
DEFAULTABLE = ("kv_heads", "n_kv", "d_v", "sram_bytes", "sram_elements", "block_q", "block_kv",
               "splits", "window")
"""Axes whose value None means "the default": kv_heads = heads, n_kv = n, d_v = d, the GPU's SRAM,
Alg. 1 line 1's block sizes, FlashAttention-2's split heuristic, no window. In the int64 grids
None is 0."""

MAX_POINTS = 5_000_000
"""A larger grid is refused: its result arrays alone would take several GB."""

CHUNK_POINTS = 1 << 18
"""Points evaluated per step (bounds the temporaries; one progress tick each)."""



SPLITS_AUTO = "auto"
"""A value of the splits axis: each point's fastest split count (SweepSpec.splits)."""

_INT64_BOUNDS = {"block_q": MAX_BLOCK, "block_kv": MAX_BLOCK, "splits": MAX_SPLITS}


class SweepSpec(Record):
    """One list of values per axis; the grid is their product. None = the axis's default."""

    n: tuple[int, ...]
    gpu: tuple[str, ...]
    n_kv: tuple[int | None, ...] = (None,)
    d: tuple[int, ...] = (64,)
    d_v: tuple[int | None, ...] = (None,)
    """V's head dim (None: d)."""
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
    splits: tuple[int | str | None, ...] = (None,)
    """splitkv's KV splits (None: flash_api.cpp's heuristic; SPLITS_AUTO, "auto": the count of
    least time under the decoding time model at each point, as compare's `--splits auto`
    picks it: analysis/split_choice.best_split_count); other algorithms ignore it."""
    window: tuple[int | None, ...] = (None,)
    """Sliding windows W (None: no window); algorithms/masks.py."""
    window_capped: bool = False
    """Not an axis: a window at least as long as a point's keys is no window at that point (a
    model preset's layer window, which compare treats so: model_presets._build_layer); False:
    such a window is refused, as compare refuses a --window longer than the keys."""
    unfused: tuple[str, ...] = ()
    """Not an axis: the same unfused standard pipeline at every point."""
    latent_kv: bool = False
    """Not an axis: MLA's latent cache (V inside K) at every point."""
    fp8_scales: str | None = None
    """Not an axis: the FP8 scale granularity of the points whose dtype is fp8_e4m3/fp8_e5m2
    (None: "tensor")."""
    seqlens: tuple[int, ...] | None = None
    """Not an axis: the same packed sequences at every point (so N takes one value)."""
    packing: str = "varlen"
    """Not an axis: how the packed sequences are cut into blocks (Workload.packing)."""
    page_size: int | None = None
    """Not an axis: the same paged KV cache (tokens per page) at every point (None: contiguous);
    its effect on the bytes is the block table's few entries (algorithms/paging.py)."""
    prefix_len: int | None = None
    suffix_lens: tuple[int, ...] | None = None
    """Not axes: one shared-prefix decoding batch at every point (inputs/decoding.py); then N is
    1, N_kv the longest request and the batch one request per suffix."""
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    profile: Profile = "spec"
    impl: str | None = None
    """Not an axis: an implementation (configs/impls) estimated at every point instead of the
    algorithms, beside standard attention (analysis/sweep_impl.py: compare per point)."""

    def values(self, axis: str) -> tuple[Any, ...]:
        """The axis's values (None: its default)."""
        return tuple(getattr(self, axis))

    @property
    def shape(self) -> tuple[int, ...]:
        """Values per axis, in AXES order."""
        return tuple(len(self.values(a)) for a in AXES)

    @property
    def points(self) -> int:
        """Grid points: the product of the axes' lengths."""
        return math.prod(self.shape)

    @property
    def varying(self) -> tuple[str, ...]:
        """Axes with more than one value."""
        return tuple(a for a in AXES if len(self.values(a)) > 1)


_REAL_AXES = ("sparsity",)
_NAME_AXES = ("gpu", "dtype", "pass_")


def axes_as_tuples(spec: SweepSpec) -> SweepSpec:
    """The spec with every axis a tuple of plain values, as the CLI builds it: from Python, one
    value (n=4096, gpu="h100": one name, not its letters) is a one-value axis, a list or numpy
    array its values, numpy's ints and floats Python ones (so that JSON and the checks take
    them); `algorithms` and `unfused` may be one comma-separated string."""
    changes: dict[str, Any] = {}
    for axis in AXES:
        value = getattr(spec, axis)
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__") \
                or getattr(value, "ndim", None) == 0:  # a 0-d numpy array is one value too
            value = (value,)
        if axis == "causal":
            value = tuple(check_flag("causal", v) for v in value)
        else:
            plain = as_real if axis in _REAL_AXES else as_whole
            value = tuple(plain(v) for v in value)
        if axis in _NAME_AXES:
            value = tuple(check_path_text(axis, v) if axis == "gpu" else v for v in value)
        changes[axis] = value
    changes["algorithms"] = as_names("algorithms", spec.algorithms)
    changes["unfused"] = unfused_names(spec.unfused, error=IosimError)
    changes["window_capped"] = check_flag("window_capped", spec.window_capped)
    for name in ("seqlens", "suffix_lens"):
        value = getattr(spec, name)
        if type(value).__name__ == "ndarray":  # its entries; a 0-d array its one number, which
            entries = value.tolist()  # the Workload refuses as not a list
            changes[name] = tuple(entries) if isinstance(entries, list) else entries
    return replace(spec, **changes)


def int_values(values: Any) -> np.ndarray:
    """An axis's values as int64 (None, the default, as 0; SPLITS_AUTO as 0 too: the sweep puts
    each point's own count in its place, analysis/sweep_splits.py)."""
    return np.array([0 if v is None or v == SPLITS_AUTO else int(v) for v in values],
                    dtype=np.int64)


def counts_in_python_ints(spec: SweepSpec) -> bool:
    """Whether some count of the grid could leave int64: then the sweep counts in Python ints
    (numpy object arrays), exact at any size, as compare does; else in int64, ~100× faster.

    int64 holds every count while N·N_kv·d·batch·heads stays below INT64_SCORE_PRODUCT (2^53,
    2^10 spare for bytes per element, FLOP coefficients and summed terms) and, with a block
    sparsity, while N·N_kv times the fraction's denominator (the block mask's sums multiply
    pair counts by its numerator) stays below 2^60."""
    n = max(spec.n)
    n_kv = max(v or n for v in spec.n_kv)
    d = max([*spec.d, *(v for v in spec.d_v if v is not None)])
    if n * n_kv * d * max(spec.batch) * max(spec.heads) >= INT64_SCORE_PRODUCT:
        return True
    if all(v == 1 for v in spec.sparsity):
        return False
    den = max(spec_workload(spec, sparsity=v).sparsity_fraction[1] for v in spec.sparsity)
    return n * n_kv * den * 4 >= 1 << 62


def check_splits_auto(spec: SweepSpec) -> None:
    """SPLITS_AUTO among the split counts needs what compare's `--splits auto` needs: splitkv
    among the algorithms and not cascade (which splits by its own rule), forward passes only,
    no implementation; any other value of the axis is a number or None."""
    if SPLITS_AUTO not in spec.splits:
        for v in spec.splits:
            if isinstance(v, str):
                raise IosimError(f"{arg('splits', v)} is neither a whole number nor "
                                 f"'{SPLITS_AUTO}'", param="splits")
        return
    for v in spec.splits:
        if isinstance(v, str) and v != SPLITS_AUTO:
            raise IosimError(f"{arg('splits', v)} is neither a whole number nor "
                             f"'{SPLITS_AUTO}'", param="splits")
    if any(p != "fwd" for p in spec.pass_):  # first: without --algo, bwd has no splitkv
        raise IosimError(f"{arg('splits', SPLITS_AUTO)} chooses splitkv's KV splits, a forward "
                         f"(decoding) kernel; use {arg('pass_', 'fwd')}", param="splits")
    choices = math.prod(len(spec.values(a)) for a in AXES if a != "splits")
    if choices > MAX_AUTO_SPLIT_POINTS:
        raise IosimError(f"{arg('splits', SPLITS_AUTO)} chooses each point's count as compare "
                         f"does, before the first row (a few milliseconds a point under a "
                         f"window, packed sequences or a shared prefix): {choices:,} points; "
                         f"sweep at most {MAX_AUTO_SPLIT_POINTS:,} points with it, or give "
                         f"{arg('splits')} numbers", param="splits")
    names = [a.strip().lower() for a in spec.algorithms]
    if "splitkv" not in names:
        raise IosimError(f"{arg('splits', SPLITS_AUTO)} applies to splitkv; add it to "
                         f"{arg('algorithms')} (e.g. {arg('algorithms', 'flash2,splitkv')})",
                         param="splits")
    if "cascade" in names:
        raise IosimError(f"{arg('splits', SPLITS_AUTO)} picks splitkv's split count, and "
                         f"cascade splits by its own rule here; give {arg('algorithms')} "
                         f"without cascade, or {arg('splits')} a number", param="splits")


def check_spec(spec: SweepSpec) -> tuple[tuple[Algorithm, ...], tuple[Hardware, ...], list[str]]:
    """The spec's algorithms and GPUs, or the first reason it cannot be swept (one line each),
    with the notes resolving the GPU names gave."""
    for axis in AXES:
        if not spec.values(axis):
            raise IosimError(f"{arg(axis)} has no values; give at least one")
    if spec.fp8_scales is not None and not set(spec.dtype) & set(FP8_DTYPES):
        raise IosimError(f"{arg('fp8_scales', spec.fp8_scales)} needs an FP8 dtype among "
                         f"{arg('dtype')}; add {FP8_DTYPES[0]} or drop {arg('fp8_scales')}",
                         param="fp8_scales")
    points = spec.points
    if points > MAX_POINTS:
        raise IosimError(
            f"the sweep has {points:,} grid points ({' × '.join(map(str, spec.shape))}); at most "
            f"{MAX_POINTS:,} are evaluated at once: narrow a range or split the sweep")
    refuse_both_sram(any(v is not None for v in spec.sram_bytes),
                     any(v is not None for v in spec.sram_elements), sram_name="sram_bytes")
    check_splits_auto(spec)
    for axis in ("sram_bytes", "sram_elements", "block_q", "block_kv", "splits"):
        for v in spec.values(axis):
            if axis == "splits" and v == SPLITS_AUTO:
                continue
            if v is not None:
                check_count(axis, v)
            # the int64 grids must not wrap (iosim/inputs/limits.py): bounded as compare bounds them
            if v is not None and axis == "sram_bytes":
                check_sram_bytes("sram", v)
            elif v is not None and axis != "sram_elements":
                check_int(axis, v, high=_INT64_BOUNDS[axis])
    for elements, dtype in itertools.product(spec.sram_elements, spec.dtype):
        if elements is not None and dtype in DTYPE_BYTES:
            check_sram_bytes("sram_elements", elements * DTYPE_BYTES[dtype])
    for axis in ("dtype", "pass_", "causal", "batch", "d", "n", "sparsity"):
        for v in spec.values(axis):
            spec_workload(spec, **{axis: v})
    for v in spec.n_kv:
        if v is not None:
            spec_workload(spec, n_kv=v)
    for d, d_v in itertools.product(spec.d, spec.d_v):
        spec_workload(spec, d=d, d_v=d_v)
    for n, n_kv, window in itertools.product(spec.n, spec.n_kv, spec.window):
        if window is not None:  # a window longer than the keys is refused, as compare does
            spec_workload(spec, n=n, n_kv=n_kv, window=window)
    for h, kv in itertools.product(spec.heads, spec.kv_heads):
        spec_workload(spec, heads=h, kv_heads=kv)
    algorithms = choose_algorithms(spec.algorithms, splits_given=spec.splits != (None,))
    resolved = [resolve_hardware(g) for g in spec.gpu]
    hardware = tuple(r.hardware for r in resolved)
    seen: dict[str, str] = {}
    for r in resolved:
        if r.hardware.name in seen:
            raise IosimError(f"{arg('gpu')} lists {r.hardware.name} twice ('{seen[r.hardware.name]}' and "
                             f"'{r.requested}'); list each GPU once")
        seen[r.hardware.name] = r.requested
    for hw, dtype in itertools.product(hardware, spec.dtype):
        roofs_for(hw, dtype, spec.profile)  # raises when the YAML lacks that dtype's peak
    notes = [r.note for r in resolved if r.note]
    return algorithms, hardware, [*notes, *sram_beyond_the_gpus(spec, hardware)]


def sram_beyond_the_gpus(spec: SweepSpec, hardware: tuple[Hardware, ...]) -> list[str]:
    """One note per GPU whose per-block shared memory some swept SRAM size exceeds (issue 13
    item 11): compare refuses such a size unless forced; a sweep, which may span GPUs that
    have it and GPUs that do not, counts it and says so."""
    sizes = {v for v in spec.sram_bytes if v is not None}
    sizes |= {e * DTYPE_BYTES[t] for e in spec.sram_elements if e is not None
              for t in spec.dtype if t in DTYPE_BYTES}
    notes = []
    for hw in hardware:
        beyond = sorted(v for v in sizes if v > hw.sram_per_block_bytes)
        if beyond:
            listed = ", ".join(f"{v:,} B" for v in beyond)
            notes.append(f"SRAM M = {listed} is more than the {int(hw.sram_per_block_bytes):,} B "
                         f"of shared memory a block may use on {hw.name}: no kernel could launch "
                         f"with it; those rows count what the blocks would cost if one could")
    return notes


def spec_workload(spec: SweepSpec, **values: Any) -> Workload:
    """The workload of the first value on every axis, with `values` changed.

    A changed n or heads carries its default n_kv or kv_heads along (they default to them).
    The workloads of the last spec asked are kept (up to KEPT_WORKLOADS): `--splits auto`
    (sweep_splits.py) and the measured columns (sweep_measured.py) ask for the same points.
    """
    if _KEPT.get("spec") is not spec or len(_KEPT) > KEPT_WORKLOADS:
        _KEPT.clear()
        _KEPT["spec"] = spec
    key = tuple(values.items())
    try:
        kept = _KEPT.get(key)
    except TypeError:  # a value that is not hashable (a list from the Python API): not kept
        return _spec_workload(spec, values)
    if kept is None:
        kept = _KEPT[key] = _spec_workload(spec, values)
    return kept


KEPT_WORKLOADS = 100_000
"""Workloads spec_workload keeps (a few hundred bytes each)."""
_KEPT: dict[Any, Any] = {}


def _spec_workload(spec: SweepSpec, values: dict[str, Any]) -> Workload:
    first = {a: spec.values(a)[0] for a in WORKLOAD_AXES}
    first.update(values)
    if "n" in values and "n_kv" not in values and spec.n_kv == (None,):
        first["n_kv"] = None
    if "heads" in values and "kv_heads" not in values and spec.kv_heads == (None,):
        first["kv_heads"] = None
    if "d" in values and "d_v" not in values and spec.d_v == (None,):
        first["d_v"] = None
    if spec.window_capped and first["window"] is not None:
        keys = first["n_kv"] if first["n_kv"] is not None else first["n"]
        if isinstance(keys, int) and first["window"] >= keys:
            first["window"] = None  # the window covers every key: full attention
    pass_ = first.pop("pass_")
    scales = spec.fp8_scales if first["dtype"] in FP8_DTYPES else None
    return Workload(first.pop("n"), pass_=pass_, unfused=spec.unfused, latent_kv=spec.latent_kv,
                    fp8_scales=scales, seqlens=spec.seqlens, packing=spec.packing,
                    page_size=spec.page_size, prefix_len=spec.prefix_len,
                    suffix_lens=spec.suffix_lens, **first)
