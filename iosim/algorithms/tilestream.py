"""The tile walk as arrays: the same access stream as `tilewalk.walk`, built without a Python loop.

`walk` yields one `TileAccess` per tile load or store, in loop order; that is exact and simple, and
fast enough for one head at N = 16,384 (benchmarks/walk_speed.py). A model that consumes millions
of accesses (the L2 model, long sequences, many heads) wants them as columns instead. `walk_arrays`
builds that stream with numpy: one row per access, in exactly `walk`'s order, so that
`list(walk_arrays(...).records()) == list(walk(...))` (tests/test_walk.py holds them equal).

How it is built: for one program instance (batch, head) a kernel's accesses form a template —
prologue; for every outer block o (and, for a split-KV kernel, every split k of it): the "outer"
accesses, the "inner" accesses once per visited pair, the "outer_end" accesses; epilogue — laid
out with cumulative offsets per program and then repeated over batch × heads. Everything `walk`
does is reproduced: the causal skip, the block-sparse mask (pairs numbered row-major among the
visited ones, blockmask.py), split-KV programs (an empty split loads nothing; per-split tensors
carry their copy in `split`; a whole per-split tensor is moved copy by copy), head packing (a
program per KV head, its query tiles cut at the query heads' boundaries into one access per
piece), the backward's block sizes, and accesses done once per KV head (kept for the group's last
query head only).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from iosim.algorithms.blockmask import kept_between
from iosim.algorithms.blocks import cdiv, visited_kv_blocks
from iosim.algorithms.closedform import check_loop_nest_arguments
from iosim.algorithms.loopnest import KV_HEAD_TENSORS, Kernel, element_bytes, row_width
from iosim.algorithms.tilewalk import TileAccess, walk, walk_problem
from iosim.algorithms.traffic import Op
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record

IntArray = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]

_PLACES = ("prologue", "outer", "inner", "outer_end", "epilogue")


class TileStream(Record, eq=False):
    """Every tile load and store of an algorithm, one row per access, in loop order.

    `kernel` and `tensor` index into `kernel_names` and `tensor_names`; `write` is False for a
    read. `head` is the query head, or the KV head for K, V, dK, dV (as in `TileAccess`).
    """

    kernel_names: tuple[str, ...]
    tensor_names: tuple[str, ...]
    kernel: IntArray
    tensor: IntArray
    write: BoolArray
    batch: IntArray
    head: IntArray
    row_start: IntArray
    row_stop: IntArray
    cols: IntArray
    element_bytes: IntArray
    init: BoolArray
    split: IntArray
    """Which copy of a per-split tensor (split-KV partial outputs); 0 for every other tensor."""

    def __len__(self) -> int:
        return int(self.kernel.shape[0])

    @property
    def elements(self) -> IntArray:
        """Elements of every access, as an int64 array."""
        return (self.row_stop - self.row_start) * self.cols

    @property
    def bytes(self) -> IntArray:
        """Bytes of every access, as an int64 array."""
        return self.elements * self.element_bytes

    def records(self) -> Iterator[TileAccess]:
        """The stream as `TileAccess` records (what `walk` yields), for checks and small runs."""
        columns = zip(self.kernel.tolist(), self.tensor.tolist(), self.write.tolist(),
                      self.batch.tolist(), self.head.tolist(), self.row_start.tolist(),
                      self.row_stop.tolist(), self.cols.tolist(), self.element_bytes.tolist(),
                      self.init.tolist(), self.split.tolist(), strict=True)
        for k, t, w, b, h, start, stop, cols, elt, init, split in columns:
            op: Op = "write" if w else "read"
            yield TileAccess(self.kernel_names[k], self.tensor_names[t], op, b, h, start, stop,
                             cols, elt, init, split)

    def totals(self) -> dict[tuple[str, str, Op], int]:
        """Elements moved per (kernel, tensor, op), summed over the stream."""
        key = (self.kernel * len(self.tensor_names) + self.tensor) * 2 + self.write
        keys, inverse = np.unique(key, return_inverse=True)
        sums = np.zeros(keys.shape, dtype=np.int64)
        np.add.at(sums, inverse, self.elements)  # integer sums: exact at any size
        out: dict[tuple[str, str, Op], int] = {}
        for index, total in zip(keys.tolist(), sums.tolist(), strict=True):
            k, rest = divmod(index, 2 * len(self.tensor_names))
            t, w = divmod(rest, 2)
            out[(self.kernel_names[k], self.tensor_names[t], "write" if w else "read")] = total
        return out


def _exclusive_cumsum(counts: IntArray) -> IntArray:
    out = np.zeros(counts.shape, dtype=np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _ranges(counts: IntArray) -> tuple[IntArray, IntArray]:
    """(owner, position) of every item when owner k has counts[k] items: np.repeat's bookkeeping."""
    owner = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
    position = np.arange(owner.shape[0], dtype=np.int64) - np.repeat(_exclusive_cumsum(counts),
                                                                        counts)
    return owner, position


class _Grid(Record):
    """The block grid one kernel loops over (the packed rows, the pass's blocks, the splits)."""

    t_r: int
    t_c: int
    n_i: IntArray
    """Key blocks row block i visits (causal skip), as blocks.visited_kv_blocks."""
    splits: int
    sparsity: tuple[int, int]


def _template(kernel: Kernel, grid: _Grid) -> tuple[IntArray, IntArray, IntArray]:
    """(access index, tile index or −1 for a whole tensor, split copy) of one program instance
    (batch, head), in loop order — `loopnest._walk_kernel`'s loops, laid out with offsets."""
    places = {p: [i for i, a in enumerate(kernel.accesses) if a.where == p] for p in _PLACES}
    parts: list[tuple[IntArray, IntArray, IntArray]] = []

    def whole(place: str) -> None:
        # a whole tensor with one copy per split is moved copy by copy
        copies = [grid.splits if kernel.accesses[a].per_split else 1 for a in places[place]]
        counts = np.asarray(copies, dtype=np.int64)
        owner, copy = _ranges(counts)
        access = np.asarray(places[place], dtype=np.int64)[owner]
        parts.append((access, np.full(access.shape, -1, dtype=np.int64), copy))

    whole("prologue")
    if kernel.loop is not None:
        parts.append(_loop(kernel, grid, places))
    whole("epilogue")
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]))


def _loop(kernel: Kernel, grid: _Grid,
          places: dict[str, list[int]]) -> tuple[IntArray, IntArray, IntArray]:
    t_r, t_c, n_i = grid.t_r, grid.t_c, grid.n_i
    # row-major number of pair (i, 0) among the visited pairs: the block mask numbers pairs so
    row_first_pair = _exclusive_cumsum(n_i)
    if kernel.loop == "q":
        # programs (row block o, split k); split k visits key blocks [k·nb, min((k+1)·nb, n_o))
        programs = grid.splits if kernel.split else 1
        per_split = cdiv(t_c, grid.splits) if kernel.split else t_c
        outer = np.repeat(np.arange(t_r, dtype=np.int64), programs)
        copy = np.tile(np.arange(programs, dtype=np.int64), t_r)
        lo = copy * per_split
        hi = np.minimum(lo + per_split, n_i[outer])
        count = np.maximum(0, hi - lo)
        # a split with no key block to visit loads nothing (FA2 exits early)
        emit_outer = count > 0 if kernel.split else np.ones(outer.shape, dtype=np.bool_)
        pair_prog, within = _ranges(count)
        pair_inner = lo[pair_prog] + within  # the key block
        pair_index = row_first_pair[outer[pair_prog]] + pair_inner
    else:
        # key block o is visited by the row blocks i with n_i > o (n_i never decreases with i)
        outer = np.arange(t_c, dtype=np.int64)
        copy = np.zeros(t_c, dtype=np.int64)
        first = np.searchsorted(n_i, outer, side="right").astype(np.int64)
        count = t_r - first
        emit_outer = np.ones(outer.shape, dtype=np.bool_)
        pair_prog, within = _ranges(count)
        pair_inner = first[pair_prog] + within  # the row block
        pair_index = row_first_pair[pair_inner] + outer[pair_prog]
    num, den = grid.sparsity
    if num != den:  # block-sparse: only the non-zero pairs of the mask (blockmask.py)
        nonzero = kept_between(pair_index, pair_index + 1, num, den) > 0
        pair_prog, pair_inner = pair_prog[nonzero], pair_inner[nonzero]
        count = np.bincount(pair_prog, minlength=outer.shape[0]).astype(np.int64)
        within = np.arange(pair_prog.shape[0], dtype=np.int64) - _exclusive_cumsum(count)[pair_prog]

    first_acc, inner_acc, end_acc = places["outer"], places["inner"], places["outer_end"]
    n_first = emit_outer.astype(np.int64) * len(first_acc)
    seg = n_first + count * len(inner_acc) + len(end_acc)
    offsets = _exclusive_cumsum(seg)
    size = int(seg.sum())
    access = np.empty(size, dtype=np.int64)
    tile = np.empty(size, dtype=np.int64)
    copies = np.empty(size, dtype=np.int64)

    def fill(at: IntArray, a: int, tiles: IntArray, split_copy: IntArray) -> None:
        access[at] = a
        tile[at] = tiles
        copies[at] = split_copy if kernel.accesses[a].per_split else 0

    emitting = np.flatnonzero(emit_outer)
    for k, a in enumerate(first_acc):
        fill(offsets[emitting] + k, a, outer[emitting], copy[emitting])
    if pair_prog.shape[0] and inner_acc:
        base = offsets[pair_prog] + n_first[pair_prog] + within * len(inner_acc)
        for k, a in enumerate(inner_acc):
            same_axis = kernel.accesses[a].rows == kernel.loop
            fill(base + k, a, outer[pair_prog] if same_axis else pair_inner, copy[pair_prog])
    end_base = offsets + n_first + count * len(inner_acc)
    for k, a in enumerate(end_acc):
        fill(end_base + k, a, outer, copy)
    return access, tile, copies


def walk_arrays(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None) -> TileStream:
    """`walk(kernels, workload, tiling)` as one `TileStream` (same accesses, same order)."""
    check_loop_nest_arguments(kernels, workload, tiling)
    if workload.masked or any(a.scale for k in kernels for a in k.accesses):
        # FP8 scales (one element per program or tile) and masks (bands of blocks, packed
        # sequences' own tiles) have no row template here: the stream is the walk's own,
        # gathered into columns (exact; as slow as the walk)
        return _from_walk(kernels, workload, tiling)
    group, batch = workload.group_size, workload.batch
    splits = tiling.splits if tiling else 1
    sparsity = workload.sparsity_fraction
    kernel_names = tuple(k.name for k in kernels)
    tensor_names = tuple(dict.fromkeys(a.tensor for k in kernels for a in k.accesses))
    tensor_id = {t: i for i, t in enumerate(tensor_names)}
    names = ("kernel", "tensor", "write", "batch", "head", "row_start", "row_stop", "cols",
             "element_bytes", "init", "split")
    columns: dict[str, list[np.ndarray[Any, Any]]] = {c: [] for c in names}
    for k, kernel in enumerate(kernels):
        if kernel.segments:
            raise ValueError(f"{kernel.name}: a ragged launch (segments) has no array walk; "
                             f"use tilewalk.walk")
        packed = kernel.pack_heads
        n_q, n_kv, heads, block_q, block_kv, causal = walk_problem(kernel, workload, tiling)
        t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
        n_i = np.asarray(visited_kv_blocks(n_q, n_kv, block_q, block_kv, causal), dtype=np.int64)
        access, tile, copy = _template(kernel, _Grid(t_r, t_c, n_i, splits, sparsity))
        if access.shape[0] == 0:
            continue
        acc = kernel.accesses

        def prop(values: list[Any], dtype: Any, at: IntArray) -> np.ndarray[Any, Any]:
            return np.asarray(values, dtype=dtype)[at]

        length = {"q": n_q, "kv": n_kv}
        block = {"q": block_q, "kv": block_kv}
        a_len = prop([length[a.rows] for a in acc], np.int64, access)
        a_block = prop([block[a.rows] for a in acc], np.int64, access)
        start = np.where(tile < 0, 0, tile * a_block)
        stop = np.where(tile < 0, a_len, np.minimum(a_len, (tile + 1) * a_block))
        # packing: a tile of packed query rows is cut at the query heads' boundaries (packed row
        # r of KV head h is row r mod n of query head h·g + r div n), one access per piece
        pieces = np.ones(access.shape, dtype=np.int64)
        split_rows = prop([packed and a.rows == "q" and not a.per_kv_head for a in acc], np.bool_,
                          access)
        n = workload.n
        if split_rows.any():
            pieces = np.where(split_rows, (stop - 1) // n - start // n + 1, 1)
        owner, piece = _ranges(pieces)
        access, tile, copy, start, stop, split_rows = (
            x[owner] for x in (access, tile, copy, start, stop, split_rows))
        sub_head = np.where(split_rows, start // n + piece, 0)
        start = np.where(split_rows, np.maximum(start, sub_head * n) - sub_head * n, start)
        stop = np.where(split_rows, np.minimum(stop, (sub_head + 1) * n) - sub_head * n, stop)

        # a block table: the entries of the pages the tile's rows span (paging.py), head 0
        paged = prop([a.per_page for a in acc], np.bool_, access)
        if paged.any():
            page = workload.page_size or 1
            first_page = start // page
            start, stop = (np.where(paged, first_page, start),
                           np.where(paged, (stop - 1) // page + 1, stop))
        a_tensor = prop([tensor_id[a.tensor] for a in acc], np.int64, access)
        a_write = prop([a.op == "write" for a in acc], np.bool_, access)
        a_cols = prop([row_width(a.cols, workload.d, n_kv, workload.d_v) for a in acc], np.int64, access)
        a_elt = prop([element_bytes(a.element, workload.element_bytes,
                                    workload.output_element_bytes) for a in acc], np.int64,
                     access)
        a_init = prop([a.init for a in acc], np.bool_, access)
        a_once = prop([a.per_kv_head and not packed for a in acc], np.bool_, access)
        a_kvhead = prop([a.per_kv_head or a.tensor in KV_HEAD_TENSORS for a in acc], np.bool_,
                        access)

        per = access.shape[0]
        instances = batch * heads
        b_col = np.repeat(np.arange(batch, dtype=np.int64), heads * per)
        h_col = np.tile(np.repeat(np.arange(heads, dtype=np.int64), per), batch)
        # once per KV head: done by the group's last query head (tilewalk._WalkGeometry.emit)
        keep = ~(np.tile(a_once, instances) & ((h_col + 1) % group != 0))
        # once for the whole launch (Access.once): by batch 0, head 0 only
        a_launch = prop([a.once for a in acc], np.bool_, access)
        keep &= ~(np.tile(a_launch, instances) & ((b_col != 0) | (h_col != 0)))
        if packed:
            head = np.where(np.tile(split_rows, instances), h_col * group
                            + np.tile(sub_head, instances), h_col)
        else:
            head = np.where(np.tile(a_kvhead, instances), h_col // group, h_col)
        head = np.where(np.tile(paged, instances), 0, head)
        # one copy in HBM (Access.broadcast, Access.once): batch 0, head 0 (tilewalk's emit)
        single = np.tile(prop([a.broadcast or a.once for a in acc], np.bool_, access),
                         instances)
        head = np.where(single, 0, head)
        b_col = np.where(single, 0, b_col)
        rows = int(keep.sum())
        columns["kernel"].append(np.full(rows, k, dtype=np.int64))
        columns["tensor"].append(np.tile(a_tensor, instances)[keep])
        columns["write"].append(np.tile(a_write, instances)[keep])
        columns["batch"].append(b_col[keep])
        columns["head"].append(head[keep])
        columns["row_start"].append(np.tile(start, instances)[keep])
        columns["row_stop"].append(np.tile(stop, instances)[keep])
        columns["cols"].append(np.tile(a_cols, instances)[keep])
        columns["element_bytes"].append(np.tile(a_elt, instances)[keep])
        columns["init"].append(np.tile(a_init, instances)[keep])
        columns["split"].append(np.tile(copy, instances)[keep])

    return _stream(kernel_names, tensor_names, columns)


def _from_walk(kernels: Sequence[Kernel], workload: Workload,
               tiling: Tiling | None) -> TileStream:
    kernel_names = tuple(k.name for k in kernels)
    tensor_names = tuple(dict.fromkeys(a.tensor for k in kernels for a in k.accesses))
    kernel_id = {t: i for i, t in enumerate(kernel_names)}
    tensor_id = {t: i for i, t in enumerate(tensor_names)}
    rows = [(kernel_id[a.kernel], tensor_id[a.tensor], a.op == "write", a.batch, a.head,
             a.row_start, a.row_stop, a.cols, a.element_bytes, a.init, a.split)
            for a in walk(kernels, workload, tiling)]
    names = ("kernel", "tensor", "write", "batch", "head", "row_start", "row_stop", "cols",
             "element_bytes", "init", "split")
    columns = {n: [np.asarray([r[i] for r in rows])] if rows else []
               for i, n in enumerate(names)}
    return _stream(kernel_names, tensor_names, columns)


def _stream(kernel_names: tuple[str, ...], tensor_names: tuple[str, ...],
            columns: dict[str, list[np.ndarray[Any, Any]]]) -> TileStream:
    def cat(name: str, dtype: Any) -> np.ndarray[Any, Any]:
        parts = columns[name]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    return TileStream(
        kernel_names, tensor_names,
        kernel=cat("kernel", np.int64), tensor=cat("tensor", np.int64),
        write=cat("write", np.bool_), batch=cat("batch", np.int64), head=cat("head", np.int64),
        row_start=cat("row_start", np.int64), row_stop=cat("row_stop", np.int64),
        cols=cat("cols", np.int64), element_bytes=cat("element_bytes", np.int64),
        init=cat("init", np.bool_), split=cat("split", np.int64),
    )
