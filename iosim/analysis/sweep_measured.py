"""The measured profile in a sweep: each point's L2-aware DRAM bytes per kernel, the fitted
schedule of iosim's Triton backward kernels and Algorithm 4's per-tile time of flash1's fused
backward, for the vectorised runner (sweep.py) to charge.

Everything else the measured profile changes is a roof or an efficiency per (GPU, dtype), which
the grid already holds (grid.py, roofs_for). What is per workload is the DRAM estimate
(estimates/l2.py: a closed form, but over Python objects), the list schedule
(estimates/schedule.py) and Algorithm 4's per-tile time (estimates/alg4_time.py); all are
computed here point by point, with the same functions `compare` calls on the same inputs (the
schedules of all points at once after the loop, by estimates/list_schedule.py: the same doubles
as compare's heap; split-KV's and standard attention's DRAM bytes on arrays, a chunk of points
at a time, sweep_split_dram.py; another DRAM estimate once per count of (batch, head) units,
units_key): the
point's Workload (sweep_spec.spec_workload), and a Tiling built from the blocks, split count and
programs per SM the sweep chose on arrays (the rules `compare` applies, so the same values;
tests/test_sweep_equals_compare.py holds the two equal).
The bytes charged are what `compare` charges: each kernel's DRAM terms, a paged cache's K/V reads
over the calibrated page efficiency (estimates/paged_dram.py). benchmarks/sweep_measured_speed.py
times it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms import Algorithm
from iosim.algorithms.closedform import Dims, kernel_programs
from iosim.algorithms.loopnest import Kernel
from iosim.analysis import sweep_split_dram as split_dram
from iosim.analysis.impl_backward import call_dram, timed_as_calls
from iosim.analysis.sweep_spec import (
    AXES,
    WORKLOAD_AXES,
    SweepSpec,
    counts_in_python_ints,
    spec_workload,
)
from iosim.errors import IosimError
from iosim.estimates.alg4_time import alg4_fused_time_s, alg4_kernel, alg4_note
from iosim.estimates.l2 import dram_estimate
from iosim.estimates.list_schedule import RepeatedLaunch, repeated_makespans
from iosim.estimates.mla_prefill_time import (
    mla_prefill_kernel,
    mla_prefill_note,
    mla_prefill_time_s,
)
from iosim.estimates.paged_dram import page_efficiency, paged_roof_bytes
from iosim.estimates.roofline import (
    Roofs,
    estimate_kernels,
    kernel_programs_per_sm,
    roofs_for,
    scheduled,
)
from iosim.estimates.schedule import scheduled_launch
from iosim.inputs.hardware import Hardware
from iosim.inputs.limits import check_scheduled_programs
from iosim.inputs.tiling import Tiles, Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record, field, field_names


class KernelColumns(Record, frozen=False):
    """One kernel's per-point figures over the whole grid (NaN where its list does not apply)."""

    memory_bytes: np.ndarray
    compute_s: np.ndarray | None = None
    """The scheduled compute time (s) where the kernel is timed by the Triton backward's fitted
    schedule (it then replaces the roofline's compute time and the utilisation); else None."""
    time_s: np.ndarray | None = None
    """The kernel's time (s) where Algorithm 4's per-tile latency model times it (flash1's
    fused backward on a GPU with measured.alg4_time: it replaces the roofline's time); NaN at
    the points where it does not apply; None for every other kernel."""


class MeasuredColumns(Record, frozen=False):
    """Per algorithm, per kernel list (sweep._KernelPlan's index), per kernel name."""

    lists: dict[str, list[dict[str, KernelColumns]]] = field(default_factory=dict)
    notes: dict[str, None] = field(default_factory=dict)
    """Lines to print once each (ordered): which GPUs timed flash1's backward by Alg. 4's model."""

    def of(self, algorithm: str, index: int, kernel: str) -> KernelColumns:
        """The columns of one kernel of one of the algorithm's kernel lists."""
        return self.lists[algorithm][index][kernel]


def refuse_unmodelled(hardware: Sequence[Hardware]) -> None:
    """The measured profile charges DRAM bytes, which need the L2 size and the SM count (as
    compare refuses it)."""
    for hw in hardware:
        if hw.l2_bytes is None or hw.sm_count is None:
            raise IosimError(f"the measured profile charges DRAM bytes, which need l2_size and "
                             f"sm_count in {hw.path}")


def measured_columns(spec: SweepSpec, hardware: Sequence[Hardware],
                     algorithms: Sequence[Algorithm], tiles: dict[str, Tiles],
                     plans: dict[str, Any]) -> MeasuredColumns:
    """Every point's DRAM bytes per kernel (and scheduled compute time where it applies), for
    every algorithm's kernel lists (see the module docstring)."""
    shape = spec.shape
    points = spec.points
    out = MeasuredColumns()
    flat_tiles = {a.name: _flat_tiles(tiles[a.name], shape) for a in algorithms}
    which = {a.name: np.broadcast_to(np.asarray(plans[a.name].which), shape).reshape(-1)
             for a in algorithms}
    for a in algorithms:
        out.lists[a.name] = [
            {k.name: KernelColumns(np.full(points, np.nan),
                                   np.full(points, np.nan) if _may_schedule(k) else None,
                                   np.full(points, np.nan) if alg4_kernel(k) or (
                                       a.name == "flash2" and k.name == "attn") else None)
             for k in kernels} for kernels in plans[a.name].lists]
    roofs: dict[tuple[int, str, bool], Roofs] = {}
    paging: dict[int, Any] = {}
    launches: list[RepeatedLaunch] = []  # the scheduled kernels', computed after the loop
    placed: list[tuple[np.ndarray, int]] = []  # where each launch's time goes
    # each kernel's charged DRAM bytes, shared by the points of one count of (batch, head)
    # units (units_key)
    charged_bytes: dict[tuple[Any, ...], list[int]] = {}
    gpu_axis, dtype_axis = AXES.index("gpu"), AXES.index("dtype")
    axis_values = [spec.values(axis) for axis in AXES]
    numbered = enumerate(itertools.product(*(range(n) for n in shape)))
    # a chunk of points at a time: their workloads once, split-KV's DRAM bytes on arrays for
    # all of them (sweep_split_dram.py), then the rest point by point
    while chunk := list(itertools.islice(numbered, MEASURED_CHUNK)):
        rows = []
        for flat, index in chunk:
            values = {axis: axis_values[k][index[k]] for k, axis in enumerate(AXES)}
            rows.append((flat, index, values,
                         spec_workload(spec, **{a: values[a] for a in WORKLOAD_AXES})))
        on_arrays = _split_bytes(spec, hardware, algorithms, plans, which, flat_tiles, rows,
                                 paging)
        for flat, index, values, workload in rows:
            g = index[gpu_axis]
            hw = hardware[g]
            dtype = spec.dtype[index[dtype_axis]]
            causal = bool(values["causal"])
            if (g, dtype, causal) not in roofs:
                roofs[(g, dtype, causal)] = roofs_for(hw, dtype, "measured", causal=causal)
            if spec.page_size and g not in paging:
                paging[g] = page_efficiency(hw, spec.page_size)
            for a in algorithms:
                li = int(which[a.name][flat])
                kernels: tuple[Kernel, ...] = plans[a.name].lists[li]
                tiling = _tiling(flat_tiles[a.name], flat, int(values_sram(spec, hw, dtype, values)))\
                    if a.tiled else None
                units = units_key(workload)
                key = None if units is None else (a.name, li, g, tiling, units)
                charged = on_arrays.get((a.name, flat)) or (
                    None if key is None else charged_bytes.get(key))
                if charged is None:  # a training step of two calls: each call's (impl_backward.py)
                    dram = (call_dram(kernels, workload, tiling, hw)
                            if timed_as_calls(None, a.name, workload.pass_, "measured")
                            else dram_estimate(kernels, workload, tiling, hw))
                    charged = [paged_roof_bytes(k, [(t.tensor, t.bytes)
                                                    for t in dram.of_kernel(k.name).terms],
                                                paging.get(g)) for k in kernels]
                    if key is not None:
                        charged_bytes[key] = charged
                columns = out.lists[a.name][li]
                for k, memory_bytes in zip(kernels, charged, strict=True):
                    columns[k.name].memory_bytes[flat] = memory_bytes
                    r = roofs[(g, dtype, causal)]
                    if scheduled(k, r):
                        assert r.schedule is not None and r.sm_count is not None
                        column = columns[k.name].compute_s
                        assert column is not None
                        launches.append(scheduled_launch(
                            k, workload, tiling, r.schedule, sm_count=r.sm_count,
                            matmul_peak=r.matmul_flops_per_s, vector_peak=r.vector_flops_per_s))
                        check_scheduled_programs(len(launches[-1].lengths) * launches[-1].repeats)
                        placed.append((column, flat))
                    if r.alg4 is not None and r.sm_count is not None and alg4_kernel(k):
                        # as roofline.estimate_kernels times it, on the bytes charged above
                        whole = columns[k.name].time_s
                        assert whole is not None
                        whole[flat] = alg4_fused_time_s(k, workload, tiling,
                                                        float(columns[k.name].memory_bytes[flat]),
                                                        r.sm_count, r.alg4)
                        out.notes[f"{hw.name}: {alg4_note(r.alg4)}"] = None
                    if r.mla_prefill is not None and hw.sm_count and mla_prefill_kernel(
                            a.name, k, workload, tiling):
                        # as compare times it: the kernel's roofline time on the bytes charged
                        # above, then the fitted rule (estimates/mla_prefill_time.py)
                        whole = columns[k.name].time_s
                        assert whole is not None
                        (roof,) = estimate_kernels((k,), workload, tiling, r,
                                                   dram_bytes={k.name: int(memory_bytes)},
                                                   sm_count=hw.sm_count)
                        whole[flat] = mla_prefill_time_s(
                            roof.time_s, int(kernel_programs(k, Dims.of(workload, tiling))),
                            kernel_programs_per_sm(k, tiling), hw.sm_count, r.mla_prefill)
                        out.notes[f"{hw.name}: {mla_prefill_note(r.mla_prefill)}"] = None
    # every point's schedule at once: the same doubles as scheduled_compute_s point by point
    for (column, flat), seconds in zip(placed, repeated_makespans(launches).tolist(),
                                       strict=True):
        column[flat] = seconds
    for lists in out.lists.values():
        for columns in lists:
            for c in columns.values():
                c.memory_bytes = c.memory_bytes.reshape(shape)
                if c.compute_s is not None:
                    c.compute_s = c.compute_s.reshape(shape)
                if c.time_s is not None:
                    c.time_s = c.time_s.reshape(shape)
    return out


MEASURED_CHUNK = 4096
"""Points whose workloads are held at once (split-KV's DRAM bytes are counted on arrays per
chunk: sweep_split_dram.py)."""


def _split_bytes(spec: SweepSpec, hardware: Sequence[Hardware], algorithms: Sequence[Algorithm],
                 plans: dict[str, Any], which: dict[str, np.ndarray],
                 flat_tiles: dict[str, dict[str, np.ndarray | None]],
                 rows: Sequence[tuple[int, tuple[int, ...], dict[str, Any], Workload]],
                 paging: dict[int, Any]) -> dict[tuple[str, int], list[int]]:
    """The charged bytes per kernel of a chunk's points that sweep_split_dram counts on arrays,
    by (algorithm, flat index); the loop estimates the others one by one."""
    out: dict[tuple[str, int], list[int]] = {}
    if not split_dram.ENABLED or counts_in_python_ints(spec):  # the arrays are int64
        return out
    gpu_axis, dtype_axis = AXES.index("gpu"), AXES.index("dtype")
    for a in algorithms:
        groups: dict[tuple[Any, ...], list[split_dram.SplitPoint]] = {}
        for flat, index, values, workload in rows:
            li = int(which[a.name][flat])
            how = split_dram.kind(plans[a.name].lists[li], workload)
            if how is None or timed_as_calls(None, a.name, workload.pass_, "measured"):
                continue
            g = index[gpu_axis]
            hw = hardware[g]
            tiling = _tiling(flat_tiles[a.name], flat, int(values_sram(
                spec, hw, spec.dtype[index[dtype_axis]], values))) if a.tiled else None
            groups.setdefault(split_dram.group_key(how, li, g, workload), []).append(
                split_dram.SplitPoint(flat, workload, tiling))
            if spec.page_size and g not in paging:
                paging[g] = page_efficiency(hw, spec.page_size)
        for flat, charged in split_dram.charged_bytes(groups, plans[a.name].lists, hardware,
                                                      paging).items():
            out[(a.name, flat)] = charged
    return out


_UNIT_FIELDS = tuple(f for f in field_names(Workload) if f not in ("batch", "heads", "kv_heads"))


def units_key(workload: Workload) -> tuple[Any, ...] | None:
    """What the DRAM estimate of a workload without GQA depends on: the number of (batch,
    head) units and every other field, not how the units split into batch and heads. Each such
    unit reads and writes its own Q, K, V and O tiles, the L2 model (estimates/l2.py) launches
    and counts units (batch · heads programs per outer block), and every count is per unit
    times batch · heads, so points that differ only in how batch · heads factors (batch 4 ×
    16 heads, 64 × 1) share their estimate (tests/test_sweep_equals_compare.py holds each
    such point to compare). None where batch and heads are told apart: GQA (a KV head's
    query heads share its tiles), packed sequences, a shared prefix, a paged cache."""
    if (workload.kv_heads != workload.heads or workload.seqlens is not None
            or workload.prefix_len is not None or workload.page_size is not None):
        return None
    return (workload.batch * workload.heads, *(getattr(workload, f) for f in _UNIT_FIELDS))


def _may_schedule(kernel: Kernel) -> bool:
    """Whether a kernel can be timed by the Triton backward's schedule (roofline.scheduled,
    whose other condition, a fitted schedule, is per GPU)."""
    return kernel.tile is not None and kernel.kind == "fused" and kernel.name.startswith("bwd_")


def values_sram(spec: SweepSpec, hw: Hardware, dtype: str, values: dict[str, Any]) -> int:
    """The point's SRAM budget in bytes (the Tiling's `sram_bytes`; the blocks are already
    chosen, so it only labels the Tiling)."""
    if values["sram_bytes"] is not None:
        return int(values["sram_bytes"])
    return int(hw.sram_per_block_bytes)


_FIELDS = ("block_q", "block_kv", "bwd_block_q", "bwd_block_kv", "splits", "per_sm",
           "bwd_per_sm")


def _flat_tiles(t: Tiles, shape: tuple[int, ...]) -> dict[str, np.ndarray | None]:
    out: dict[str, np.ndarray | None] = {}
    for name in _FIELDS:
        value = getattr(t, name)
        out[name] = None if value is None else np.broadcast_to(
            np.asarray(value), shape).reshape(-1)
    return out


def _tiling(t: dict[str, np.ndarray | None], flat: int, sram_bytes: int) -> Tiling:
    """The Tiling `compare` would build at this point, from the sweep's chosen blocks."""
    def at(name: str) -> int | None:
        column = t[name]
        return None if column is None else int(column[flat])

    block_q, block_kv = at("block_q"), at("block_kv")
    assert block_q is not None and block_kv is not None
    return Tiling(block_q, block_kv, sram_bytes, "sweep", "sweep", bwd_block_q=at("bwd_block_q"),
                  bwd_block_kv=at("bwd_block_kv"), splits=at("splits") or 1,
                  programs_per_sm=at("per_sm") or 1, bwd_programs_per_sm=at("bwd_per_sm") or 1)
