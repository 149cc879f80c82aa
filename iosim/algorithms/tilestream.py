"""The tile walk as arrays: the same access stream as `loopnest.walk`, built without a Python loop.

`walk` yields one `TileAccess` per tile load or store, in loop order; that is exact and simple, and
fast enough for one head at N = 16,384 (benchmarks/walk_speed.py). A model that consumes millions
of accesses (the L2 model, long sequences, many heads) wants them as columns instead. `walk_arrays`
builds that stream with numpy: one row per access, in exactly `walk`'s order, so that
`list(walk_arrays(...).records()) == list(walk(...))` (tests/test_walk.py holds them equal).

How it is built: for one (batch, head) a kernel's accesses form a template (prologue; for every
outer block o: the "outer" accesses, then the "inner" accesses once per visited inner block, then
the "outer_end" accesses; epilogue), which is laid out with cumulative offsets per outer block and
then repeated over batch × heads. Accesses done once per KV head are dropped for the other heads
of each group, as `walk` does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iosim.algorithms.blocks import cdiv, visited_kv_blocks
from iosim.algorithms.loopnest import KV_HEAD_TENSORS, Kernel, TileAccess, element_bytes
from iosim.traffic import Op
from iosim.workload import Tiling, Workload

IntArray = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]

_PLACES = ("prologue", "outer", "inner", "outer_end", "epilogue")


@dataclass(frozen=True, slots=True, eq=False)
class TileStream:
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

    def __len__(self) -> int:
        return int(self.kernel.shape[0])

    @property
    def elements(self) -> IntArray:
        return (self.row_stop - self.row_start) * self.cols

    @property
    def bytes(self) -> IntArray:
        return self.elements * self.element_bytes

    def records(self) -> Iterator[TileAccess]:
        """The stream as `TileAccess` records (what `walk` yields), for checks and small runs."""
        columns = zip(self.kernel.tolist(), self.tensor.tolist(), self.write.tolist(),
                      self.batch.tolist(), self.head.tolist(), self.row_start.tolist(),
                      self.row_stop.tolist(), self.cols.tolist(), self.element_bytes.tolist(),
                      self.init.tolist(), strict=True)
        for k, t, w, b, h, start, stop, cols, elt, init in columns:
            op: Op = "write" if w else "read"
            yield TileAccess(self.kernel_names[k], self.tensor_names[t], op, b, h, start, stop,
                             cols, elt, init)

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


def _template(kernel: Kernel, t_r: int, t_c: int, n_i: Sequence[int]) -> tuple[IntArray, IntArray]:
    """(access index, tile index or −1 for a whole tensor) of one (batch, head), in loop order."""
    places = {p: [i for i, a in enumerate(kernel.accesses) if a.where == p] for p in _PLACES}
    parts_access: list[IntArray] = []
    parts_tile: list[IntArray] = []

    def whole(place: str) -> None:
        idx = np.array(places[place], dtype=np.int64)
        parts_access.append(idx)
        parts_tile.append(np.full(idx.shape, -1, dtype=np.int64))

    whole("prologue")
    if kernel.loop is not None:
        counts_i = np.asarray(n_i, dtype=np.int64)
        if kernel.loop == "q":
            outer_count = t_r
            inner_count = counts_i  # row block i visits key blocks 0 .. n_i − 1
            inner_first = np.zeros(t_r, dtype=np.int64)
        else:
            outer_count = t_c
            # key block j is visited by row blocks i with n_i > j; n_i never decreases with i
            inner_first = np.searchsorted(counts_i, np.arange(t_c), side="right").astype(np.int64)
            inner_count = t_r - inner_first
        outer, inner, end = places["outer"], places["inner"], places["outer_end"]
        seg = len(outer) + inner_count * len(inner) + len(end)
        offsets = np.concatenate(([0], np.cumsum(seg)[:-1])).astype(np.int64)
        size = int(seg.sum())
        access = np.empty(size, dtype=np.int64)
        tile = np.empty(size, dtype=np.int64)
        blocks = np.arange(outer_count, dtype=np.int64)
        for k, a in enumerate(outer):
            access[offsets + k] = a
            tile[offsets + k] = blocks
        pairs = int(inner_count.sum())
        if pairs and inner:
            pair_outer = np.repeat(blocks, inner_count)
            pair_start = np.repeat(np.concatenate(([0], np.cumsum(inner_count)[:-1])), inner_count)
            within = np.arange(pairs, dtype=np.int64) - pair_start
            pair_inner = inner_first[pair_outer] + within
            base = offsets[pair_outer] + len(outer) + within * len(inner)
            for k, a in enumerate(inner):
                access[base + k] = a
                same_axis = kernel.accesses[a].rows == kernel.loop
                tile[base + k] = pair_outer if same_axis else pair_inner
        end_base = offsets + len(outer) + inner_count * len(inner)
        for k, a in enumerate(end):
            access[end_base + k] = a
            tile[end_base + k] = blocks
        parts_access.append(access)
        parts_tile.append(tile)
    whole("epilogue")
    return np.concatenate(parts_access), np.concatenate(parts_tile)


def walk_arrays(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None) -> TileStream:
    """`walk(kernels, workload, tiling)` as one `TileStream` (same accesses, same order)."""
    n_q, n_kv = workload.n, workload.seq_kv
    block_q = tiling.block_q if tiling else n_q
    block_kv = tiling.block_kv if tiling else n_kv
    t_r, t_c = cdiv(n_q, block_q), cdiv(n_kv, block_kv)
    n_i = visited_kv_blocks(n_q, n_kv, block_q, block_kv, workload.causal)
    group, heads, batch = workload.group_size, workload.heads, workload.batch
    kernel_names = tuple(k.name for k in kernels)
    tensor_names = tuple(dict.fromkeys(a.tensor for k in kernels for a in k.accesses))
    tensor_id = {t: i for i, t in enumerate(tensor_names)}
    length = {"q": n_q, "kv": n_kv}
    block = {"q": block_q, "kv": block_kv}
    width = {"d": workload.d, "1": 1, "kv": n_kv}

    columns: dict[str, list[np.ndarray[Any, Any]]] = {c: [] for c in (
        "kernel", "tensor", "write", "batch", "head", "row_start", "row_stop", "cols",
        "element_bytes", "init")}
    for k, kernel in enumerate(kernels):
        access, tile = _template(kernel, t_r, t_c, n_i)
        per = len(access)
        if per == 0:
            continue
        acc = kernel.accesses

        def prop(values: list[Any], dtype: Any, at: IntArray = access) -> np.ndarray[Any, Any]:
            return np.asarray(values, dtype=dtype)[at]

        a_tensor = prop([tensor_id[a.tensor] for a in acc], np.int64)
        a_write = prop([a.op == "write" for a in acc], np.bool_)
        a_len = prop([length[a.rows] for a in acc], np.int64)
        a_block = prop([block[a.rows] for a in acc], np.int64)
        a_cols = prop([width[a.cols] for a in acc], np.int64)
        a_elt = prop([element_bytes(a.element, workload.element_bytes) for a in acc], np.int64)
        a_init = prop([a.init for a in acc], np.bool_)
        a_once = prop([a.per_kv_head for a in acc], np.bool_)
        a_kvhead = prop([a.per_kv_head or a.tensor in KV_HEAD_TENSORS for a in acc], np.bool_)
        start = np.where(tile < 0, 0, tile * a_block)
        stop = np.where(tile < 0, a_len, np.minimum(a_len, (tile + 1) * a_block))

        instances = batch * heads
        b_col = np.repeat(np.arange(batch, dtype=np.int64), heads * per)
        h_col = np.tile(np.repeat(np.arange(heads, dtype=np.int64), per), batch)
        keep = ~(np.tile(a_once, instances) & (h_col % group != 0))
        kv = np.tile(a_kvhead, instances)
        head = np.where(kv, h_col // group, h_col)
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

    def cat(name: str, dtype: Any) -> np.ndarray[Any, Any]:
        parts = columns[name]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    return TileStream(
        kernel_names, tensor_names,
        kernel=cat("kernel", np.int64), tensor=cat("tensor", np.int64),
        write=cat("write", np.bool_), batch=cat("batch", np.int64), head=cat("head", np.int64),
        row_start=cat("row_start", np.int64), row_stop=cat("row_stop", np.int64),
        cols=cat("cols", np.int64), element_bytes=cat("element_bytes", np.int64),
        init=cat("init", np.bool_),
    )
