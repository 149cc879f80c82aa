"""The instrumented memories of the executor: an HBM that counts, an SRAM that refuses to overflow.

`InstrumentedHBM` holds named tensors, each shaped (batch, heads, rows, cols) — or (batch, heads,
rows) for a per-row statistic — and is the only way an executor reaches them. A tensor allocated
with `copies` (split-KV's per-split partial outputs) holds that many such tensors, addressed by
`split`. Every `read` and `write` names one tile (batch, head, a range of rows, all columns, and
the split copy) and is counted, per
(kernel, tensor, op), in elements; with `record=True` each one is also logged as a `TileAccess`,
the record the tile walk yields, so that the two streams can be compared access by access.
Placing the inputs (`place`) and reading the results back (`peek`) are the host's doing and are not
counted, as a profiler of the kernels would not count them either.

`SramBudget` is the on-chip memory of one program: tiles are `hold`-ed and `drop`-ped by name, and
holding more bytes than the budget raises `SramExceededError` naming every tile held.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from iosim.algorithms.tilewalk import TileAccess
from iosim.algorithms.traffic import Op
from iosim.errors import IosimError, arg

Array = np.ndarray[Any, Any]


class SramExceededError(IosimError):
    """The tiles a program holds at once do not fit in the SRAM budget."""


class ExecutorError(IosimError):
    """An executor run that cannot be done (too large, a pass with no executor, ...)."""


class InstrumentedHBM:
    """Named tensors in 'HBM'; every tile read or written by a kernel is counted in elements."""

    def __init__(self, *, record: bool = False) -> None:
        self._tensors: dict[str, Array] = {}
        self._copies: dict[str, int] = {}
        self._kernel: str | None = None
        self._counting = True
        self.counts: dict[tuple[str, str, Op], int] = {}
        """Elements moved per (kernel, tensor, op), in the order first touched."""
        self.itemsize: dict[str, int] = {}
        """Bytes per element of each tensor as stored."""
        self.log: list[TileAccess] | None = [] if record else None

    # -- the host side: not counted -------------------------------------------------------
    def place(self, name: str, array: Array, *, copies: int | None = None) -> None:
        """Put a tensor in HBM (the inputs, or a buffer the host allocates): not traffic.
        With `copies`, `array` is (copies, batch, heads, rows[, cols])."""
        lead = 0 if copies is None else 1
        if array.ndim - lead not in (3, 4) or (copies is not None and array.shape[0] != copies):
            raise ValueError(f"{name}: tensors are {'(copies, ' if lead else '('}batch, heads, "
                             f"rows[, cols]), got {array.shape}")
        self._tensors[name] = np.array(array, copy=True)
        self._copies[name] = 0 if copies is None else copies
        self.itemsize[name] = array.dtype.itemsize

    def allocate(self, name: str, shape: tuple[int, ...], dtype: Any, *,
                 copies: int | None = None) -> None:
        """An uninitialised buffer (cudaMalloc): allocating moves no data. Filled with NaN (or the
        largest integer) so that a kernel reading what nobody wrote shows up in the output."""
        kind = np.dtype(dtype)
        fill = np.nan if kind.kind == "f" else np.iinfo(kind).max
        full = shape if copies is None else (copies, *shape)
        self.place(name, np.full(full, fill, dtype=kind), copies=copies)

    def peek(self, name: str) -> Array:
        """The whole tensor, for the host to check results: not traffic."""
        return self._tensors[name].copy()

    def _tensor(self, name: str, split: int) -> Array:
        copies = self._copies[name]
        if copies == 0:
            if split:
                raise ValueError(f"{name} has no split copies (split {split} asked)")
            return self._tensors[name]
        if not 0 <= split < copies:
            raise ValueError(f"{name} has {copies} split copies (split {split} asked)")
        copy: Array = self._tensors[name][split]
        return copy

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    @contextmanager
    def kernel(self, name: str) -> Iterator[None]:
        """Accesses inside the block belong to kernel `name` (one launch over all heads)."""
        if self._kernel is not None:
            raise RuntimeError(f"kernel {name} launched inside kernel {self._kernel}")
        self._kernel = name
        try:
            yield
        finally:
            self._kernel = None

    @contextmanager
    def uncounted(self) -> Iterator[None]:
        """Run kernels without counting them (e.g. the forward pass that a backward run needs)."""
        before, self._counting = self._counting, False
        try:
            yield
        finally:
            self._counting = before

    # -- the kernels' side: counted --------------------------------------------------------
    def read(self, name: str, batch: int, head: int, start: int | None = None,
             stop: int | None = None, *, split: int = 0, cols: int | None = None) -> Array:
        """A copy of rows start..stop (default all) of tensor `name` for one (batch, head);
        with `cols`, only each row's first `cols` columns (MLA's V inside the latent K; a ragged
        batch's rows of an N×N_kv matrix)."""
        tile = self._tensor(name, split)[batch, head, start:stop]
        if cols is not None:
            tile = tile[..., :cols]
        self._count(name, "read", batch, head, start, stop, tile.shape, init=False, split=split)
        return tile.copy()

    def gather(self, name: str, batch: int, head: int, start: int, stop: int,
               rows: Array, cols: int | None = None) -> Array:
        """Rows `rows` of KV head `head` of a paged pool (held as batch 0; their first `cols`
        columns when given): logical rows start..stop of request `batch`, counted and logged as
        that logical tile (execute/paged.py)."""
        tile: Array = self._tensor(name, 0)[0, head, rows]
        if cols is not None:
            tile = tile[:, :cols]
        self._count(name, "read", batch, head, start, stop, tile.shape, init=False, split=0)
        return tile.copy()

    def write(self, name: str, batch: int, head: int, start: int | None, stop: int | None,
              value: Array | float, *, init: bool = False, split: int = 0,
              cols: int | None = None) -> None:
        """Store `value` (cast to the tensor's dtype) into rows start..stop of one (batch, head)
        (its first `cols` columns only, when given)."""
        target = self._tensor(name, split)[batch, head, start:stop]
        if cols is not None:
            target = target[..., :cols]
        target[...] = value
        self._count(name, "write", batch, head, start, stop, target.shape, init=init, split=split)

    def _count(self, name: str, op: Op, batch: int, head: int, start: int | None,
               stop: int | None, shape: tuple[int, ...], *, init: bool, split: int) -> None:
        if not self._counting:
            return
        if self._kernel is None:
            raise RuntimeError(f"{op} of {name} outside a kernel")
        elements = int(np.prod(shape))
        key = (self._kernel, name, op)
        self.counts[key] = self.counts.get(key, 0) + elements
        if self.log is not None:
            rows = self._tensor(name, split).shape[2]
            first = 0 if start is None else start
            last = rows if stop is None else min(stop, rows)
            cols = 1 if len(shape) == 1 else int(shape[1])
            self.log.append(TileAccess(self._kernel, name, op, batch, head, first, last, cols,
                                       self.itemsize[name], init, split))


class SramBudget:
    """The SRAM one program may use: tiles are held and dropped by name; overflow raises."""

    def __init__(self, capacity_bytes: int, *, source: str = "budget", owner: str = "") -> None:
        self.capacity_bytes = capacity_bytes
        self.source = source
        self.owner = owner
        self.held: dict[str, int] = {}
        self.peak_bytes = 0

    @property
    def held_bytes(self) -> int:
        """Bytes held on chip now."""
        return sum(self.held.values())

    def hold(self, name: str, elements: int, element_bytes: int) -> None:
        """Keep a tile of `elements` elements of `element_bytes` each on chip (replacing a tile of
        the same name, as a kernel reuses its buffer)."""
        self.held[name] = elements * element_bytes
        total = self.held_bytes
        if total > self.capacity_bytes:
            parts = ", ".join(f"{n} {b:,} B" for n, b in self.held.items())
            owner = f"{self.owner} " if self.owner else ""
            raise SramExceededError(
                f"{owner}tiles do not fit in the SRAM: {parts} = {total:,} bytes held at once, "
                f"the budget ({self.source}) is {self.capacity_bytes:,}; raise {arg('sram')} or "
                f"use smaller {arg('block_q')}/{arg('block_kv')}"
            )
        self.peak_bytes = max(self.peak_bytes, total)

    def drop(self, *names: str) -> None:
        """Release the named tiles (a name not held is ignored)."""
        for name in names:
            self.held.pop(name, None)


class ScoreMeter:
    """The most attention scores (entries of S or P) one (batch, head) holds at once."""

    def __init__(self) -> None:
        self.peak = 0

    def hold(self, rows: int, cols: int) -> None:
        """Note a rows × cols score tile held at once (keeps the peak, in elements)."""
        self.peak = max(self.peak, rows * cols)
