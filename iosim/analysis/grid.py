"""A sweep's grid as numpy arrays that broadcast: each quantity over just the axes it depends on.

Every axis is one dimension of an ndim = len(AXES) grid. An axis's values live in an array of
shape (1, ..., len, ..., 1); a quantity that depends on a few axes (the block sizes on GPU,
dtype, d, SRAM and the given blocks; the roofs on GPU and dtype) is an array over just those
dimensions, so the closed forms compute each thing on the smallest sub-grid it depends on and
numpy broadcasts the products up to the full grid. Raveled in C order, the grid's points are
in AXES order (the last axis fastest).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from iosim.analysis.requests import sram_bytes_of
from iosim.analysis.sweep_spec import (
    AXES,
    SweepSpec,
    counts_in_python_ints,
    int_values,
    spec_workload,
)
from iosim.estimates.occupancy import compute_capability
from iosim.estimates.roofline import roofs_for
from iosim.inputs.hardware import KERNEL_KINDS, Hardware
from iosim.inputs.implementations import dtype_code
from iosim.inputs.tiling import TilingInputs
from iosim.inputs.units import DTYPE_BYTES, FP8_DTYPES, FP8_OUTPUT_DTYPE
from iosim.record import Record, field_names


def along(axis: str, values: Any) -> np.ndarray:
    """`values` laid along `axis`'s dimension of the grid."""
    shape = [1] * len(AXES)
    shape[AXES.index(axis)] = -1
    return np.asarray(values).reshape(shape)


def take(array: np.ndarray, where: tuple[slice, ...]) -> np.ndarray:
    """`array[where]` on the dimensions the array spans (its size-1 dimensions broadcast)."""
    return array[tuple(w if n > 1 else slice(None) for w, n in zip(where, array.shape,
                                                                      strict=True))]


class Grid(Record):
    """The per-point numbers as broadcastable arrays (each over the axes it depends on), or,
    after `subset`, as flat arrays of the points of a mask."""

    n: np.ndarray
    n_kv: np.ndarray
    d: np.ndarray
    d_v: np.ndarray
    """V's head dim (d where the axis says None)."""
    batch: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    element_bytes: np.ndarray
    out_bytes: np.ndarray
    """Bytes per element of O (bf16 for the FP8 dtypes, else the dtype's)."""
    sram_bytes: np.ndarray
    hbm_capacity: np.ndarray
    """Each GPU's HBM in bytes (over the GPU axis): what a point's footprint must fit."""
    sparsity_num: Any
    sparsity_den: Any
    """Python 1, 1 when every point is dense (block_sums' dense path), else arrays."""
    bandwidth: np.ndarray
    matmul_peak: np.ndarray
    vector_peak: np.ndarray
    efficiency: dict[str, np.ndarray]
    additive_compute: bool
    """The profile's compute rule (Roofs.additive_compute), the same for every point."""
    tiling: TilingInputs | None = None
    """What the tiling rules read, over the whole grid (not cut by `take` or `subset`)."""
    sm_count: Any = None
    """The GPU's SMs along the gpu axis (0: unknown), for the grids' utilisation."""
    window: Any = None
    """Sliding windows along the window axis (0: none), or None when no point has one."""
    seqlens: tuple[int, ...] | None = None
    """The packed sequences of every point (SweepSpec.seqlens)."""
    packing: str = "varlen"
    """How they are cut into blocks (SweepSpec.packing)."""
    page_size: int = 0
    """Tokens per page of a paged KV cache, the same at every point (0: contiguous)."""
    prefix_len: int | None = None
    suffix_lens: tuple[int, ...] | None = None
    """The shared-prefix batch of every point (SweepSpec.prefix_len, suffix_lens)."""

    def _map(self, cut: Callable[[np.ndarray], np.ndarray]) -> Grid:
        def apply(value: Any) -> Any:
            if isinstance(value, np.ndarray):
                return cut(value)
            if isinstance(value, dict):
                return {k: apply(v) for k, v in value.items()}
            return value

        return Grid(**{name: apply(getattr(self, name)) for name in field_names(self)
                       if name != "tiling"})

    def take(self, where: tuple[slice, ...]) -> Grid:
        """The grid of a slice of the points."""
        return self._map(lambda a: take(a, where))

    def subset(self, shape: tuple[int, ...], mask: np.ndarray) -> Grid:
        """The points of `mask` (over a slice of `shape`), as flat arrays."""
        return self._map(lambda a: np.broadcast_to(a, shape)[mask])


def build_grid(spec: SweepSpec, hardware: Sequence[Hardware]) -> tuple[Grid, list[str]]:
    """The spec's grid (each axis along its dimension, the roofs over GPU × dtype) and the
    notes the roofs gave."""
    exact = counts_in_python_ints(spec)  # then Python ints: every product of them stays exact

    def ints(axis: str) -> np.ndarray:
        values = int_values(spec.values(axis))
        return along(axis, values.astype(object) if exact else values)

    n, n_kv_given = ints("n"), ints("n_kv")
    heads, kv_given = ints("heads"), ints("kv_heads")
    elt = along("dtype", [DTYPE_BYTES[t] for t in spec.dtype]).astype(np.int64)
    out = along("dtype", [DTYPE_BYTES[FP8_OUTPUT_DTYPE if t in FP8_DTYPES else t]
                          for t in spec.dtype]).astype(np.int64)
    gpu_sram = along("gpu", [int(hw.sram_per_block_bytes) for hw in hardware]).astype(np.int64)
    sram_given, elements_given = ints("sram_bytes"), ints("sram_elements")
    sram = sram_bytes_of(gpu_sram, elt, sram_given, elements_given)
    if all(v == 1 for v in spec.sparsity):
        num: Any = 1
        den: Any = 1
    else:
        fractions = [spec_workload(spec, sparsity=v).sparsity_fraction for v in spec.sparsity]
        num = along("sparsity", np.array([f[0] for f in fractions], dtype=np.int64))
        den = along("sparsity", np.array([f[1] for f in fractions], dtype=np.int64))

    roof_shape = [1] * len(AXES)
    roof_shape[AXES.index("gpu")] = len(hardware)
    roof_shape[AXES.index("dtype")] = len(spec.dtype)
    roof_shape[AXES.index("causal")] = len(spec.causal)  # the FP8 matmul rate's mask (roofs_for)
    bandwidth, matmul, vector = (np.zeros(roof_shape) for _ in range(3))
    efficiency = {kind: np.ones(roof_shape) for kind in KERNEL_KINDS}
    notes: list[str] = []
    for (g, hw), (t, dtype), (c, causal) in itertools.product(
            enumerate(hardware), enumerate(spec.dtype), enumerate(spec.causal)):
        roofs = roofs_for(hw, dtype, spec.profile, causal=bool(causal))
        at = roof_index(g, t, c)
        bandwidth[at] = roofs.hbm_bandwidth_bytes_per_s
        matmul[at] = roofs.matmul_flops_per_s
        vector[at] = roofs.vector_flops_per_s
        for kind in KERNEL_KINDS:
            efficiency[kind][at] = roofs.efficiency.get(kind, 1.0)
        notes.extend(f"{hw.name}, {dtype}: {n}" for n in roofs.notes
                     if f"{hw.name}, {dtype}: {n}" not in notes)
    n_kv = np.where(n_kv_given > 0, n_kv_given, n)
    kv_heads = np.where(kv_given > 0, kv_given, heads)
    d, d_v_given = ints("d"), ints("d_v")
    d_v = np.where(d_v_given > 0, d_v_given, d)
    window = ints("window")
    if spec.window_capped:  # a layer's window covering a point's every key: no window there
        window = np.where(window >= n_kv, 0, window)
    sms = along("gpu", np.array([hw.sm_count or 0 for hw in hardware], dtype=np.int64))
    tiling = TilingInputs(n, n_kv, d, heads, kv_heads, ints("batch"), elt, sram,
                          along("pass_", np.array([p != "fwd" for p in spec.pass_])),
                          ints("block_q"), ints("block_kv"), ints("splits"), sms,
                          causal=along("causal", np.array(spec.causal, dtype=bool)),
                          dtype=along("dtype", np.array([dtype_code(t) for t in spec.dtype])),
                          cc=along("gpu", np.array([compute_capability(hw.architecture)
                                                    for hw in hardware], dtype=np.int64)),
                          sram_per_sm=along("gpu", np.array(
                              [int(hw.sram_per_sm_bytes or 0) for hw in hardware],
                              dtype=np.int64)), d_v=d_v, latent_kv=spec.latent_kv,
                          masked=True if spec.seqlens is not None else window > 0,
                          varlen=spec.seqlens if spec.packing == "varlen" else None,
                          prefix_len=spec.prefix_len or 0)
    grid = Grid(n=n, n_kv=n_kv, d=d, d_v=d_v, batch=ints("batch"), heads=heads,
                kv_heads=kv_heads, element_bytes=elt, out_bytes=out, sram_bytes=sram,
                hbm_capacity=along("gpu", [float(hw.hbm_capacity_bytes) for hw in hardware]),
                sparsity_num=num,
                sparsity_den=den, bandwidth=bandwidth, matmul_peak=matmul, vector_peak=vector,
                efficiency=efficiency, additive_compute=roofs.additive_compute, tiling=tiling,
                sm_count=sms, window=None if spec.window == (None,) else window,
                seqlens=spec.seqlens, packing=spec.packing, page_size=spec.page_size or 0,
                prefix_len=spec.prefix_len, suffix_lens=spec.suffix_lens)
    return grid, list(dict.fromkeys(notes))


def roof_index(gpu: int, dtype: int, causal: int) -> tuple[int, ...]:
    """An index into the grid's broadcast arrays that selects one (GPU, dtype, mask) triple (the
    axes the roofs depend on: the mask through the FP8 matmul rate) and 0 on every other axis."""
    at = [0] * len(AXES)
    at[AXES.index("gpu")] = gpu
    at[AXES.index("dtype")] = dtype
    at[AXES.index("causal")] = causal
    return tuple(at)
