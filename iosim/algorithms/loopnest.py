"""An algorithm written once as its loop nest, and the two counts derived from it.

Every kernel of every algorithm is one of two shapes:

    whole-tensor kernel (standard attention's steps, initialisations):
        every access reads or writes a whole tensor

    tiled kernel, outer loop over query blocks ("q") or key/value blocks ("kv"):
        prologue accesses                       (whole tensors)
        for each outer block o:
            "outer" accesses                    (tile o)
            for each inner block p visited with o (causal masks skip pairs):
                "inner" accesses                (tile p, or tile o again)
            "outer_end" accesses                (tile o)
        epilogue accesses                       (whole tensors)

From that one description come
  1. `closed_form`: exact element counts as sums over the loop (block sums in blocks.py),
     vectorised so that sweeps evaluate grids without a Python loop per point;
  2. `walk`: the literal tile-by-tile access stream (every load and store, in order),
     which tests hold equal to the closed form and which feeds the L2 model.
The numeric executor (execute.py) runs the same loops on real numbers through an instrumented HBM.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from iosim.algorithms.blocks import BlockSums, block_sums, cdiv, visited_kv_blocks
from iosim.traffic import Op, Term, Traffic
from iosim.units import STAT_BYTES
from iosim.workload import Tiling, Workload

Where = Literal["prologue", "outer", "inner", "outer_end", "epilogue"]
Axis = Literal["q", "kv"]
Cols = Literal["d", "1", "kv"]
ElementType = Literal["io", "fp32", "u8"]
KernelKind = Literal["elementwise", "matmul", "fused"]


@dataclass(frozen=True, slots=True)
class Access:
    """One read or write of a tensor (or of its tile) at one place in the loop nest."""

    tensor: str
    op: Op
    where: Where
    rows: Axis
    """The tile's rows run along the query (q) or the key/value (kv) sequence."""
    cols: Cols
    """Each row holds d elements, 1 (a per-row statistic) or n_kv (a row of an N×N matrix)."""
    cite: str
    element: ElementType = "io"
    """io: the workload's dtype; fp32: statistics and accumulators; u8: a dropout mask."""
    init: bool = False
    per_kv_head: bool = False
    """Done once per KV head instead of once per query head (GQA/MQA)."""


@dataclass(frozen=True, slots=True)
class FlopCount:
    """FLOPs of a kernel: coefficient × a count (scores, scores·d, n_q·d or n_q) per head."""

    kind: Literal["matmul", "elementwise"]
    per: Literal["score", "score_d", "q_d", "q"]
    coefficient: int
    cite: str


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel launch of an algorithm (over all batches and heads)."""

    name: str
    label: str
    kind: KernelKind
    accesses: tuple[Access, ...]
    flops: tuple[FlopCount, ...] = ()
    loop: Axis | None = None
    """Outer loop axis of a tiled kernel; None for a whole-tensor kernel."""

    def __post_init__(self) -> None:
        for access in self.accesses:
            if self.loop is None and access.where != "prologue":
                raise ValueError(f"{self.name}: whole-tensor kernels only have prologue accesses")
            if access.where in ("outer", "outer_end") and access.rows != self.loop:
                raise ValueError(f"{self.name}: outer tile {access.tensor} must run along {self.loop}")


def element_bytes(element: ElementType, workload_element_bytes: Any) -> Any:
    return {"io": workload_element_bytes, "fp32": STAT_BYTES, "u8": 1}[element]


# ---------------------------------------------------------------------------------------------
# 1. closed form


@dataclass(frozen=True, slots=True)
class Dims:
    """The numbers a count depends on; each a Python int or a numpy array (sweeps)."""

    n_q: Any
    n_kv: Any
    d: Any
    batch: Any
    heads: Any
    kv_heads: Any
    element_bytes: Any
    block_q: Any
    block_kv: Any
    causal: Any

    @classmethod
    def of(cls, workload: Workload, tiling: Tiling | None) -> Dims:
        return cls(workload.n, workload.seq_kv, workload.d, workload.batch, workload.heads,
                   workload.heads_kv, workload.element_bytes,
                   tiling.block_q if tiling else workload.n,
                   tiling.block_kv if tiling else workload.seq_kv, workload.causal)


def kernel_sums(kernel: Kernel, dims: Dims) -> BlockSums:
    if kernel.loop is None:
        return BlockSums(1, 1, 1, dims.n_q, dims.n_kv, dims.n_q * dims.n_kv)
    return block_sums(dims.n_q, dims.n_kv, dims.block_q, dims.block_kv, dims.causal)


def access_elements(access: Access, kernel: Kernel, dims: Dims, sums: BlockSums) -> Any:
    """Elements one access moves over the whole workload."""
    length = dims.n_q if access.rows == "q" else dims.n_kv
    if access.where == "inner":
        rows = sums.pair_q_rows if access.rows == "q" else sums.pair_kv_rows
    else:
        # whole tensors, or one tile per outer block: every outer block is visited once
        rows = length
    width = {"d": dims.d, "1": 1, "kv": dims.n_kv}[access.cols]
    instances = dims.batch * (dims.kv_heads if access.per_kv_head else dims.heads)
    return rows * width * instances


def kernel_flops(kernel: Kernel, dims: Dims, sums: BlockSums) -> tuple[Any, Any]:
    """(matmul FLOPs, elementwise FLOPs) of a kernel over the whole workload."""
    per = {"score": sums.scores, "score_d": sums.scores * dims.d,
           "q_d": dims.n_q * dims.d, "q": dims.n_q}
    totals = {"matmul": 0, "elementwise": 0}
    for flop in kernel.flops:
        totals[flop.kind] = totals[flop.kind] + flop.coefficient * per[flop.per]
    instances = dims.batch * dims.heads
    return totals["matmul"] * instances, totals["elementwise"] * instances


def closed_form(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None) -> Traffic:
    """The exact traffic of an algorithm's kernels for one workload, as named terms."""
    dims = Dims.of(workload, tiling)
    terms = []
    for kernel in kernels:
        sums = kernel_sums(kernel, dims)
        for access in kernel.accesses:
            terms.append(Term(
                kernel=kernel.name,
                tensor=access.tensor,
                op=access.op,
                elements=int(access_elements(access, kernel, dims, sums)),
                element_bytes=element_bytes(access.element, workload.element_bytes),
                cite=access.cite,
                init=access.init,
            ))
    return Traffic(tuple(terms))


# ---------------------------------------------------------------------------------------------
# 2. tile walk


@dataclass(frozen=True, slots=True)
class TileAccess:
    """One load or store of one tile, in the order the algorithm issues it."""

    kernel: str
    tensor: str
    op: Op
    batch: int
    head: int
    """Query head, or KV head for tensors that only exist per KV head (K, V and their grads)."""
    row_start: int
    row_stop: int
    cols: int
    element_bytes: int
    init: bool = False

    @property
    def elements(self) -> int:
        return (self.row_stop - self.row_start) * self.cols

    @property
    def bytes(self) -> int:
        return self.elements * self.element_bytes


KV_HEAD_TENSORS = frozenset({"K", "V", "dK", "dV"})


def walk(
    kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None
) -> Iterator[TileAccess]:
    """Every tile load and store of the algorithm, kernel by kernel, head by head, in loop order."""
    n_q, n_kv = workload.n, workload.seq_kv
    block_q = tiling.block_q if tiling else n_q
    block_kv = tiling.block_kv if tiling else n_kv
    t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
    n_i = visited_kv_blocks(n_q, n_kv, block_q, block_kv, workload.causal)
    # rows visited with each key block j: row blocks i with n_i > j (n_i never decreases with i)
    first_row = [next(i for i in range(t_r) if n_i[i] > j) for j in range(t_c)]
    geometry = _WalkGeometry(workload, block_q, block_kv)
    for kernel in kernels:
        by_place = {where: [a for a in kernel.accesses if a.where == where]
                    for where in ("prologue", "outer", "inner", "outer_end", "epilogue")}
        for b in range(workload.batch):
            for h in range(workload.heads):
                for access in by_place["prologue"]:
                    yield from geometry.emit(kernel, access, b, h, None)
                if kernel.loop is not None:
                    outer_count = t_r if kernel.loop == "q" else t_c
                    for o in range(outer_count):
                        for access in by_place["outer"]:
                            yield from geometry.emit(kernel, access, b, h, o)
                        inner = range(n_i[o]) if kernel.loop == "q" else range(first_row[o], t_r)
                        for p in inner:
                            for access in by_place["inner"]:
                                index = o if access.rows == kernel.loop else p
                                yield from geometry.emit(kernel, access, b, h, index)
                        for access in by_place["outer_end"]:
                            yield from geometry.emit(kernel, access, b, h, o)
                for access in by_place["epilogue"]:
                    yield from geometry.emit(kernel, access, b, h, None)


class _WalkGeometry:
    """Turns (access, batch, head, tile index) into a TileAccess with its row range."""

    def __init__(self, workload: Workload, block_q: int, block_kv: int) -> None:
        self.group = workload.group_size
        self.elt = workload.element_bytes
        self.axes = {"q": (workload.n, block_q), "kv": (workload.seq_kv, block_kv)}
        self.widths = {"d": workload.d, "1": 1, "kv": workload.seq_kv}

    def emit(self, kernel: Kernel, access: Access, b: int, h: int,
             index: int | None) -> Iterator[TileAccess]:
        if access.per_kv_head and h % self.group:
            return  # once per KV head: the group's first query head does it
        length, block = self.axes[access.rows]
        start, stop = (0, length) if index is None else (
            index * block, min(length, (index + 1) * block))
        per_kv = access.tensor in KV_HEAD_TENSORS or access.per_kv_head
        yield TileAccess(kernel.name, access.tensor, access.op, b, h // self.group if per_kv else h,
                         start, stop, self.widths[access.cols],
                         element_bytes(access.element, self.elt), access.init)
