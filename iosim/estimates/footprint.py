"""The HBM an algorithm holds at its peak: inputs and outputs, the N×N matrices alive at once,
the statistics and workspaces it writes, and what the forward keeps for the backward."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms.base import Algorithm
from iosim.algorithms.loopnest import Access, Kernel, tensor_bytes
from iosim.estimates.training import IO_TENSORS, RNG_STATE_BYTES, saved_for_backward
from iosim.inputs.decoding import held_kv_rows
from iosim.inputs.hardware import Hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record


class Footprint(Record):
    """HBM an algorithm holds: inputs and outputs, plus what it adds on top of them."""

    io_bytes: int
    """Q, K, V (K and V sized by the KV heads) and O."""
    extra: tuple[tuple[str, int], ...]
    """(tensor, bytes) held beyond the inputs and outputs at the algorithm's peak."""
    capacity_bytes: float
    saved: tuple[tuple[str, int], ...] = ()
    """(tensor, bytes) the forward keeps in HBM for the backward pass (passes with a backward)."""

    @property
    def extra_bytes(self) -> int:
        """Bytes held beyond the inputs and outputs."""
        return sum(b for _, b in self.extra)

    @property
    def total_bytes(self) -> int:
        """Inputs, outputs and extra bytes."""
        return self.io_bytes + self.extra_bytes

    @property
    def fits(self) -> bool:
        """Whether the footprint fits the GPU's HBM capacity."""
        return self.total_bytes <= self.capacity_bytes


def footprint(kernels: Sequence[Kernel], workload: Workload, hardware: Hardware, *,
              saved: Sequence[Access] = (), tiling: Tiling | None = None,
              fixed: Sequence[tuple[str, int]] = ()) -> Footprint:
    """Inputs/outputs plus the N×N matrices alive at once and the statistics kept in HBM.

    N×N matrices: the most that any one kernel touches (standard's softmax reads S while it
    writes P, so both are alive), together with the tensors kept for the backward pass (`saved`)
    that exist by then (from their first write; from the start of a backward-only pass).
    Statistics: every per-row fp32 tensor the algorithm writes. Workspace: every other tensor
    it writes that is not an input or output (dQaccum, dK_expanded, the split-KV partials).
    `fixed`: small buffers outside the loop nests (the RNG state). With a backward pass the
    inputs and outputs include dO, dQ, dK and dV.
    """
    splits = tiling.splits if tiling else 1
    io, candidates, stats, workspace, saved_bytes = _held(kernels, workload, saved, splits)
    peak: dict[str, int] = {}
    for current in candidates:
        if sum(current.values()) > sum(peak.values()):
            peak = current
    extra = {**peak, **stats, **workspace, **dict(fixed)}
    kept = tuple(saved_bytes.items()) + tuple(fixed)
    return Footprint(io, tuple(extra.items()), hardware.hbm_capacity_bytes, kept)


def footprint_bytes(kernels: Sequence[Kernel], workload: Any, *, saved: Sequence[Access] = (),
                    splits: Any = 1, fixed: Sequence[tuple[str, int]] = ()) -> Any:
    """Footprint.total_bytes on numbers or numpy arrays alike (a sweep's workload holds arrays
    of n, n_kv, d, batch, heads, kv_heads, element_bytes): the same tensors as `footprint`, the
    N×N peak as the elementwise largest kernel."""
    io, candidates, stats, workspace, _ = _held(kernels, workload, saved, splits)
    peak: Any = 0
    for current in candidates:
        peak = np.maximum(peak, sum(current.values()))
    return io + peak + sum(stats.values()) + sum(workspace.values()) + sum(b for _, b in fixed)


def kept_for_backward(algorithm: Algorithm, workload: Workload
                      ) -> tuple[tuple[Access, ...], tuple[tuple[str, int], ...]]:
    """(tensors the forward keeps for the backward, fixed buffers outside the loop nests) of a
    pass with a backward; nothing for a forward pass."""
    if workload.pass_ == "fwd":
        return (), ()
    saved = saved_for_backward(algorithm.forward(workload), algorithm.backward(workload))
    fixed: tuple[tuple[str, int], ...] = ()
    if algorithm.tiled and "dropout" in workload.unfused:
        fixed = (("R", RNG_STATE_BYTES),)  # Alg. 2 line 1 / Alg. 4: the RNG state
    return saved, fixed


def _held(kernels: Sequence[Kernel], workload: Any, saved: Sequence[Access], splits: Any
          ) -> tuple[Any, list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(inputs+outputs, per kernel the N×N and saved tensors alive during it, statistics,
    workspace, saved tensors): the pieces of `footprint` (see its docstring)."""
    io_tensors = [Access("Q", "read", "prologue", "q", "d", ""),
                  Access("O", "read", "prologue", "q", "dv", "", element="out"),
                  Access("K", "read", "prologue", "kv", "d", ""),
                  Access("V", "read", "prologue", "kv", "dv", "")]
    if workload.pass_ != "fwd":
        io_tensors += [Access("dO", "read", "prologue", "q", "dv", ""),
                       Access("dQ", "read", "prologue", "q", "d", ""),
                       Access("dK", "read", "prologue", "kv", "d", ""),
                       Access("dV", "read", "prologue", "kv", "dv", "")]
    io = sum(tensor_bytes(a, workload) for a in io_tensors)
    prefix, suffixes = getattr(workload, "prefix_len", None), getattr(workload, "suffix_lens", None)
    if prefix is not None and suffixes:
        # a shared-prefix batch holds the prefix's K and V once and each request's own suffix
        # (decoding.held_kv_rows), not batch × n_kv rows: 8 requests of a 2^20-token prefix
        # hold 17 GB, not 137 GB
        rows = workload.batch * workload.n_kv
        held = held_kv_rows(workload.batch, workload.n_kv, prefix, suffixes)
        for a in io_tensors:
            if a.rows == "kv":
                whole = tensor_bytes(a, workload)
                io = io - whole + whole // rows * held
    saved_bytes = {a.tensor: tensor_bytes(a, workload, splits=splits) for a in saved}
    written = set(saved_bytes) if workload.pass_ == "bwd" else set()
    candidates = []
    for kernel in kernels:
        written |= {a.tensor for a in kernel.accesses if a.op == "write"}
        alive = {t: b for t, b in saved_bytes.items() if t in written}
        matrices = {a.tensor: tensor_bytes(a, workload) for a in kernel.accesses if a.cols == "kv"}
        candidates.append({**alive, **matrices})
    stats = {a.tensor: tensor_bytes(a, workload, splits=splits) for k in kernels for a in k.accesses
             if a.cols == "1" and a.op == "write"}
    workspace = {a.tensor: tensor_bytes(a, workload, splits=splits) for k in kernels for a in k.accesses
                 if a.cols in ("d", "dv") and a.op == "write" and a.tensor not in IO_TENSORS}
    return io, candidates, stats, workspace, saved_bytes
