"""The tile walk: every tile load and store of an algorithm's kernels, in loop order.

The literal reading of the loop nests of loopnest.py, one TileAccess per tile; tests hold its
totals equal to `closed_form` term by term, and it feeds the L2 model (estimates/l2.py).
tilestream.walk_arrays builds the same stream as numpy columns, for long ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import accumulate

from iosim.algorithms.blockmask import kept
from iosim.algorithms.blocks import cdiv, visited_kv_blocks
from iosim.algorithms.closedform import check_loop_nest_arguments, kernel_blocks
from iosim.algorithms.loopnest import KV_HEAD_TENSORS, Access, Kernel, element_bytes, row_width
from iosim.algorithms.packing import packed_problem
from iosim.algorithms.paging import tile_pages
from iosim.algorithms.traffic import Op
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record, replace


class TileAccess(Record):
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
    split: int = 0
    """Which copy of a per-split tensor (split-KV partial outputs); 0 for every other tensor."""

    @property
    def elements(self) -> int:
        """Elements the access moves (rows × columns)."""
        return (self.row_stop - self.row_start) * self.cols

    @property
    def bytes(self) -> int:
        """Bytes the access moves."""
        return self.elements * self.element_bytes


def walk(
    kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None
) -> Iterator[TileAccess]:
    """Every tile load and store of the algorithm, kernel by kernel, head by head, in loop order."""
    check_loop_nest_arguments(kernels, workload, tiling)
    for kernel in kernels:
        if kernel.segments:
            yield from _walk_segments(kernel, workload, tiling)
        else:
            yield from _walk_kernel(kernel, workload, tiling)


def _walk_segments(kernel: Kernel, workload: Workload, tiling: Tiling | None
                   ) -> Iterator[TileAccess]:
    """A ragged launch, segment by segment: each walked as a workload of its own sizes, its
    accesses moved to the segment's batch entries and rows."""
    plain = replace(kernel, segments=())
    axis = {a.tensor: a.rows for a in kernel.accesses}
    for seg in kernel.segments:
        part = workload.with_(n=seg.n_q, n_kv=seg.n_kv, batch=seg.batch, causal=False,
                              prefix_len=None, suffix_lens=None)
        for a in _walk_kernel(plain, part, tiling):
            shift = seg.q_start if axis[a.tensor] == "q" else seg.kv_start
            yield replace(a, batch=a.batch + seg.batch_start, row_start=a.row_start + shift,
                          row_stop=a.row_stop + shift)


def walk_problem(kernel: Kernel, workload: Workload, tiling: Tiling | None
                 ) -> tuple[int, int, int, int, int, bool]:
    """(query rows, key rows, heads, B_r, B_c, causal) of the problem a kernel's loops walk:
    the packed problem for a kernel that packs heads (no mask, as kernel_dims), the block
    sizes of the kernel (its fixed tiles, or its pass's), whole tensors for an untiled
    algorithm."""
    packed = kernel.pack_heads
    n_q, heads = packed_problem(workload.n, workload.heads, workload.kv_heads, packed)
    n_kv = workload.n_kv
    block_q, block_kv = kernel_blocks(kernel, tiling, n_q, n_kv)
    return n_q, n_kv, heads, block_q, block_kv, workload.causal and not packed


def _walk_kernel(kernel: Kernel, workload: Workload, tiling: Tiling | None) -> Iterator[TileAccess]:
    if workload.masked and kernel.loop is not None:
        from iosim.algorithms.maskwalk import walk_masked_kernel  # a window or packed sequences

        yield from walk_masked_kernel(kernel, workload, tiling)
        return
    packed = kernel.pack_heads
    n_q, n_kv, heads, block_q, block_kv, causal = walk_problem(kernel, workload, tiling)
    splits = tiling.splits if tiling else 1
    t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
    n_i = visited_kv_blocks(n_q, n_kv, block_q, block_kv, causal)
    # row-major index of pair (i, 0) among the visited pairs: the block mask numbers pairs so
    start = [0, *accumulate(n_i)]
    num, den = workload.sparsity_fraction

    def nonzero(i: int, j: int) -> bool:
        return num == den or kept(start[i] + j, num, den)

    # rows visited with each key block j: row blocks i with n_i > j (n_i never decreases with i)
    first_row = [next(i for i in range(t_r) if n_i[i] > j) for j in range(t_c)]
    per_block = cdiv(t_c, splits) if kernel.split else t_c
    programs = splits if kernel.split else 1
    geometry = _WalkGeometry(workload, block_q, block_kv, packed)
    by_place = {where: [a for a in kernel.accesses if a.where == where]
                for where in ("prologue", "outer", "inner", "outer_end", "epilogue")}
    for b in range(workload.batch):
        for h in range(heads):
            for access in by_place["prologue"]:
                yield from geometry.whole(kernel, access, b, h, splits)
            if kernel.loop == "q":
                for o in range(t_r):
                    for k in range(programs):
                        lo, hi = k * per_block, min((k + 1) * per_block, n_i[o])
                        if not kernel.split or lo < hi:
                            for access in by_place["outer"]:
                                yield from geometry.emit(kernel, access, b, h, o, k)
                        for p in range(lo, hi):
                            if nonzero(o, p):
                                for access in by_place["inner"]:
                                    index = o if access.rows == "q" else p
                                    yield from geometry.emit(kernel, access, b, h, index, k)
                        for access in by_place["outer_end"]:
                            yield from geometry.emit(kernel, access, b, h, o, k)
            elif kernel.loop == "kv":
                for o in range(t_c):
                    for access in by_place["outer"]:
                        yield from geometry.emit(kernel, access, b, h, o, 0)
                    for p in range(first_row[o], t_r):
                        if nonzero(p, o):
                            for access in by_place["inner"]:
                                index = o if access.rows == "kv" else p
                                yield from geometry.emit(kernel, access, b, h, index, 0)
                    for access in by_place["outer_end"]:
                        yield from geometry.emit(kernel, access, b, h, o, 0)
            for access in by_place["epilogue"]:
                yield from geometry.whole(kernel, access, b, h, splits)


class _WalkGeometry:
    """Turns (access, batch, head, tile index, split) into TileAccesses with their row ranges."""

    def __init__(self, workload: Workload, block_q: int, block_kv: int, packed: bool) -> None:
        self.group = workload.group_size
        self.packed = packed
        self.n_q = workload.n
        self.elt = workload.element_bytes
        self.out = workload.output_element_bytes
        length_q, _ = packed_problem(workload.n, workload.heads, workload.kv_heads, packed)
        self.axes = {"q": (length_q, block_q), "kv": (workload.n_kv, block_kv)}
        self.d, self.d_v, self.n_kv = workload.d, workload.d_v, workload.n_kv
        self.page_size = workload.page_size or 0

    def whole(self, kernel: Kernel, access: Access, b: int, h: int,
              splits: int) -> Iterator[TileAccess]:
        """A whole-tensor access (every split's copy of a per-split tensor)."""
        for k in range(splits if access.per_split else 1):
            yield from self.emit(kernel, access, b, h, None, k)

    def emit(self, kernel: Kernel, access: Access, b: int, h: int, index: int | None,
             split: int) -> Iterator[TileAccess]:
        """`h` is the program's head: a query head, or a KV head when the kernel packs heads."""
        if access.scale:
            yield self._scale(kernel, access, b, h, index)
            return
        if access.per_kv_head and (h + 1) % self.group and not self.packed:
            # once per KV head, by the group's last query head: a group sum (grads.py) writes
            # dK, dV after it has read every query head's share
            return
        length, block = self.axes[access.rows]
        start, stop = (0, length) if index is None else (
            index * block, min(length, (index + 1) * block))
        yield from self.emit_rows(kernel, access, b, h, start, stop, split)

    def emit_rows(self, kernel: Kernel, access: Access, b: int, h: int, start: int, stop: int,
                  split: int) -> Iterator[TileAccess]:
        """`emit` of the tile of rows start .. stop − 1 (packed sequences' tiles start at their
        sequence's offset, not at a multiple of the block)."""
        if access.per_kv_head and (h + 1) % self.group and not self.packed:
            return
        if access.once and (b or h):  # one pass for the whole launch, by its first head
            return
        copy = split if access.per_split else 0
        if access.per_page:
            # the block-table entries of the pages rows [start, stop) span (paging.py): one
            # table per request, read by every head's programs
            first = start // self.page_size
            yield TileAccess(kernel.name, access.tensor, access.op, b, 0, first,
                             first + tile_pages(start, stop, self.page_size), 1,
                             element_bytes(access.element, self.elt), access.init, 0)
            return
        width = row_width(access.cols, self.d, self.n_kv, self.d_v)
        elt = element_bytes(access.element, self.elt, self.out)
        if self.packed and access.rows == "q" and not access.per_kv_head:
            # packed row r of KV head h is row r mod n_q of query head h·g + r div n_q
            row = start
            while row < stop:
                head, offset = divmod(row, self.n_q)
                end = min(stop, (head + 1) * self.n_q)
                yield TileAccess(kernel.name, access.tensor, access.op, b, h * self.group + head,
                                 offset, offset + end - row, width, elt, access.init, copy)
                row = end
            return
        per_kv = access.tensor in KV_HEAD_TENSORS or access.per_kv_head
        head = h if self.packed else (h // self.group if per_kv else h)
        if access.broadcast or access.once:  # one copy, read by every (batch, head) or once
            b = head = 0
        yield TileAccess(kernel.name, access.tensor, access.op, b, head, start, stop, width, elt,
                         access.init, copy)

    def _scale(self, kernel: Kernel, access: Access, b: int, h: int,
               index: int | None) -> TileAccess:
        """An FP8 scale: one fp32 element, row 0 of a (batch, KV head) factor ("tensor") or the
        tile's own row ("block"); its head the KV head (Q's block scales: the program's head)."""
        row = 0 if access.scale == "tensor" or index is None else index
        per_kv = access.tensor in KV_HEAD_TENSORS
        head = h if self.packed or not per_kv else h // self.group
        return TileAccess(kernel.name, access.tensor, access.op, b, head, row, row + 1, 1,
                          element_bytes(access.element, self.elt))
