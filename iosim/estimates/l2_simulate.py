"""The L2 model itself: the tile walk's access stream through a scheduled LRU cache.

Slow (a Python step per tile); tests hold the closed form (`dram_estimate`, l2.py) to it. The
model is described in l2.py's docstring.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from math import gcd

from iosim.algorithms.blocks import cdiv, visited_kv_blocks
from iosim.algorithms.closedform import closed_form, kernel_blocks
from iosim.algorithms.loopnest import Access, Kernel
from iosim.algorithms.masks import kv_blocks, row_blocks
from iosim.algorithms.tilewalk import TileAccess, walk
from iosim.estimates.l2_model import DramEstimate, DramTerm, copies_in_l2, runs_serially
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload

# ---------------------------------------------------------------------------------------------
# simulation: the tile walk's stream through an LRU cache, scheduled as described above

_Piece = tuple[TileAccess, Access, int]
"""One tile access, the loop-nest access it comes from, and its copies in L2."""
_Event = list[_Piece]


class _LRU:
    """A write-back LRU cache over row pieces of tensors; counts DRAM bytes per term."""

    def __init__(self, capacity: float, granularity: dict[str, int]) -> None:
        self.capacity = capacity
        self.granularity = granularity
        self.lines: OrderedDict[tuple[object, ...], tuple[int, bool]] = OrderedDict()
        self.used = 0
        self.dram: dict[tuple[str, str, str], int] = {}

    def access(self, tile: TileAccess, axis: str, copies: int) -> None:
        g = self.granularity[axis]
        row_bytes = tile.cols * tile.element_bytes
        for piece in range(tile.row_start // g, cdiv(tile.row_stop, g)):
            lo, hi = max(tile.row_start, piece * g), min(tile.row_stop, (piece + 1) * g)
            nbytes = (hi - lo) * row_bytes
            key = (tile.tensor, tile.batch, tile.head, piece)
            held = self.lines.pop(key, None)
            if held is not None:
                self.used -= held[0]
            cost = 0
            if tile.op == "read":
                dirty = held[1] if held is not None else False
                cost = 0 if held is not None else nbytes
            else:
                dirty = True
                cost = 0 if held is not None and held[1] else nbytes
            if cost:
                term = (tile.kernel, tile.tensor, tile.op)
                self.dram[term] = self.dram.get(term, 0) + cost
            size = nbytes * copies
            self.lines[key] = (size, dirty)
            self.used += size
            while self.used > self.capacity and self.lines:
                _, (evicted, _) = self.lines.popitem(last=False)
                self.used -= evicted


def _emits(access: Access, head: int, group: int, first: bool = True) -> bool:
    """Whether the walk issues the access for this head (`first`: of the launch's first batch):
    once per KV head, and an Access.once only by batch 0's head 0 (tilewalk's emit)."""
    if access.once:
        return first and head == 0
    return not (access.per_kv_head and head % group)


def _programs(kernel: Kernel, stream: Iterator[TileAccess], workload: Workload,
              tiling: Tiling | None) -> list[list[_Event]]:
    """Cut the walk's stream of one kernel into programs of events (one event per time step)."""
    group = workload.group_size
    places = {where: [a for a in kernel.accesses if a.where == where]
              for where in ("prologue", "outer", "inner", "outer_end", "epilogue")}

    def take(accesses: list[Access], head: int, b: int = 0) -> list[tuple[TileAccess, Access]]:
        out = []
        for a in accesses:
            if _emits(a, head, group, b == 0):
                tile = next(stream)
                if (tile.tensor, tile.op) != (a.tensor, a.op):
                    raise AssertionError(f"walk order: got {tile.tensor} {tile.op}, "
                                         f"expected {a.tensor} {a.op}")
                out.append((tile, a))
        return out

    def pieces(pairs: list[tuple[TileAccess, Access]]) -> _Event:
        return [(t, a, copies_in_l2(kernel, a)) for t, a in pairs]

    programs: list[list[_Event]] = []
    if kernel.loop is None:
        for b in range(workload.batch):
            for h in range(workload.heads):
                programs.append([pieces(take(places["prologue"], h, b))])
        return programs
    n_q, n_kv = workload.n, workload.n_kv
    block_q, block_kv = kernel_blocks(kernel, tiling, n_q, n_kv)
    if workload.masked:  # inner steps of each outer block under the mask (algorithms/masks.py)
        rb = row_blocks(n_q, n_kv, block_q, block_kv, workload.causal, workload.window,
                        workload.seqlens, workload.packing)
        kb = kv_blocks(rb, block_kv)
        counts = (rb.hi - rb.lo if kernel.loop == "q" else kb.last - kb.first).tolist()
    else:
        n_i = visited_kv_blocks(n_q, n_kv, block_q, block_kv, workload.causal)
        t_r = len(n_i)
        counts = (n_i if kernel.loop == "q" else
                  [sum(1 for i in range(t_r) if n_i[i] > o) for o in range(cdiv(n_kv, block_kv))])
    serial = runs_serially(kernel)
    for _b in range(workload.batch):
        for h in range(workload.heads):
            head_events: list[list[_Event]] = []
            prologue = pieces(take(places["prologue"], h))
            for o in range(len(counts)):
                events: list[_Event] = []
                first = pieces(take(places["outer"], h))
                steps = [pieces(take(places["inner"], h)) for _p in range(counts[o])]
                if kernel.inner_descending:  # the walk lists them ascending
                    steps.reverse()
                current = first
                for step in steps:
                    events.append(current + step)
                    current = []
                current += pieces(take(places["outer_end"], h))
                if current or not events:
                    if events:
                        events[-1] += current
                    else:
                        events.append(current)
                head_events.append(events)
            epilogue = pieces(take(places["epilogue"], h))
            head_events[0][0][:0] = prologue
            head_events[-1][-1] += epilogue
            if serial:
                programs.append([e for events in head_events for e in events])
            else:
                programs.extend(head_events)
    return programs


def _schedule(programs: list[list[_Event]], slots: int) -> Iterator[_Event]:
    """Events in time order: `slots` programs run at once, each taking the next when done."""
    running: list[tuple[int, int] | None] = [None] * slots
    upcoming = 0
    while True:
        busy = False
        for s in range(slots):
            if running[s] is None and upcoming < len(programs):
                running[s] = (upcoming, 0)
                upcoming += 1
            state = running[s]
            if state is None:
                continue
            busy = True
            program, step = state
            yield programs[program][step]
            running[s] = (program, step + 1) if step + 1 < len(programs[program]) else None
        if not busy:
            return


def simulate(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None, *,
             l2_bytes: float, concurrent_programs: int, pieces: int = 16) -> DramEstimate:
    """The model itself: every tile of the walk through a scheduled LRU cache (slow; for tests).

    Whole-tensor accesses are cut into `pieces` row ranges and streamed head by head, pieces of
    a kernel's tensors interleaved; tiled kernels are cached at their block granularity (the
    greatest common divisor of every kernel's blocks, where kernels tile differently).
    """
    blocks = [kernel_blocks(k, tiling, workload.n, workload.n_kv) for k in kernels
              if k.loop is not None]
    if tiling is not None:
        blocks.append((tiling.block_q, tiling.block_kv))
    if blocks:
        granularity = {"q": gcd(*(b[0] for b in blocks)), "kv": gcd(*(b[1] for b in blocks))}
    else:
        granularity = {"q": cdiv(workload.n, pieces), "kv": cdiv(workload.n_kv, pieces)}
    cache = _LRU(l2_bytes, granularity)
    for kernel in kernels:
        stream = walk([kernel], workload, tiling)
        programs = _programs(kernel, stream, workload, tiling)
        if kernel.loop is None:
            programs = [_interleave(p[0], granularity) for p in programs]
            slots = 1
        else:
            slots = concurrent_programs
        for event in _schedule(programs, slots):
            for tile, access, copies in event:
                cache.access(tile, access.rows, copies)
    oblivious = closed_form(kernels, workload, tiling)
    terms = []
    for term in oblivious:
        dram = cache.dram.pop((term.kernel, term.tensor, term.op), 0)
        terms.append(DramTerm(term.kernel, term.tensor, term.op, dram, term.bytes, "simulated"))
    return DramEstimate(tuple(terms), l2_bytes, concurrent_programs, "simulation")


def _interleave(event: _Event, granularity: dict[str, int]) -> list[_Event]:
    """A whole-tensor event as a stream: piece k of every tensor of the head, k = 0, 1, ..."""
    split: list[list[_Piece]] = []
    for tile, access, copies in event:
        g = granularity[access.rows]
        parts = []
        for start in range(tile.row_start, tile.row_stop, g):
            parts.append((TileAccess(tile.kernel, tile.tensor, tile.op, tile.batch, tile.head,
                                     start, min(tile.row_stop, start + g), tile.cols,
                                     tile.element_bytes, tile.init), access, copies))
        split.append(parts)
    longest = max((len(p) for p in split), default=0)
    out: list[_Event] = []
    for k in range(longest):
        out.append([parts[k * len(parts) // longest] for parts in split
                    if (k * len(parts)) // longest != ((k - 1) * len(parts)) // longest or k == 0])
    return out
