"""L2-aware DRAM estimate: what a hardware counter reads, next to the paper's L2-oblivious count.

The loop-nest counts (loopnest.py) charge every tile load to HBM, as the FlashAttention papers
do. A GPU with tens of MB of L2 serves many of them from L2: the K/V tiles that the concurrently
running query blocks of one head all read, the S and P matrices of the standard path when they
are small enough to still be in L2 when the next kernel reads them. This module estimates the
bytes that reach DRAM, from the same loop nests, the L2 size and how many programs (CTAs) run
at once.

The model (one for both forms below)
  * L2 is one least-recently-used cache of `l2_bytes`, write-back: a read that misses costs its
    bytes in DRAM reads; every written tile is written back to DRAM once per stay in L2 (a tile
    written again while still dirty in L2 costs nothing more).
  * A tile that several programs read (K_j and V_j, shared by the query blocks of a head) is
    held twice: the L2 of these GPUs is two partitions that each keep a copy of what the SMs on
    their side read (NVIDIA A100 whitepaper: "each L2 partition localizes and caches data for
    memory accesses from SMs in the GPCs directly connected to the partition"). Measured on the
    H200 (reports/calibration-h200): a head's 32 MiB of K/V, re-read by the next wave of query
    blocks after 8 MiB of other traffic, came from DRAM again although 40 MiB < 60 MiB of L2.
  * Programs of a tiled kernel are launched in grid order (outer block fastest, then head, then
    batch), `concurrent_programs` at a time (SM count × programs per SM), each taking the next
    program when it finishes, and all advancing one inner-loop step per time unit. Programs of
    equal length (no mask) therefore run in lockstep waves; causal programs (lengths 1 … T)
    drift apart into a staggered stream.
  * A kernel whose inner loop rewrites the inner-axis tiles (Algorithm 1's O_i, l_i, m_i) cannot
    split its outer loop across programs: it runs one program per (batch, head).
  * Whole-tensor kernels (standard attention's steps) stream their tensors head by head in
    order; a tensor the previous kernels touched is still in L2 where the bytes touched since
    then fit in it.
  * Every algorithm starts with nothing in L2 (ncu is run that way: see calibrate/ncu.py).

Two forms
  * `simulate` drives an LRU cache with the tile walk's access stream (`walk`), scheduled as
    above. It is the definition of the model, and slow (a Python step per tile).
  * `dram_estimate` is its closed form: reuse distances of the access patterns above are linear
    in the position along a sweep, so the fraction of re-reads that hit is a clamped ratio.
    Its sums over waves and blocks are closed forms (l2_waves.py): the same time at any batch,
    heads or N. Tests hold it to `simulate`, and l2_waves to the loops it replaced.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import gcd
from typing import Literal

from iosim.algorithms.blocks import RowsPerKvBlock, VisitedKvBlocks, cdiv, visited_kv_blocks
from iosim.algorithms.loopnest import (
    KV_HEAD_TENSORS,
    Access,
    Kernel,
    closed_form,
    element_bytes,
    kernel_blocks,
    row_width,
)
from iosim.algorithms.tilewalk import TileAccess, walk
from iosim.algorithms.traffic import Op, ReadWriteTotals
from iosim.errors import IosimError
from iosim.estimates.l2_waves import Lengths, sum_where, wave_rereads
from iosim.inputs.hardware import Hardware
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload

SHARED_COPIES = 2
"""Copies of a tile that programs on both L2 partitions read (see the module docstring).
Re-derived on data the forward's choice did not use, the Triton backward's H200 record
(benchmarks/NOTES.md, issue 10): of its 161 kernels of ≥ 50 MB, 14 / 6 / 3 / 6 / 12 fall outside
±10 % of ncu with 1 / 1.5 / 2 / 2.5 / 3 copies."""

Model = Literal["closed form", "simulation"]


@dataclass(frozen=True, slots=True)
class DramTerm:
    """DRAM bytes of one (kernel, tensor, op), next to what the L2-oblivious count charges it."""

    kernel: str
    tensor: str
    op: Op
    bytes: int
    oblivious_bytes: int
    note: str


@dataclass(frozen=True, slots=True)
class DramEstimate(ReadWriteTotals):
    terms: tuple[DramTerm, ...]
    l2_bytes: float
    concurrent_programs: int
    model: Model

    @property
    def oblivious_bytes(self) -> int:
        """The L2-oblivious count of the same accesses, in bytes."""
        return sum(t.oblivious_bytes for t in self.terms)

    @property
    def unmodelled_kernels(self) -> tuple[str, ...]:
        """Kernels charged their L2-oblivious count because the closed form does not cover them."""
        return tuple(dict.fromkeys(t.kernel for t in self.terms if t.note.startswith("not modelled")))

    def of_kernel(self, kernel: str) -> DramEstimate:
        """The estimate's terms of one kernel."""
        return DramEstimate(tuple(t for t in self.terms if t.kernel == kernel), self.l2_bytes,
                            self.concurrent_programs, self.model)


# ---------------------------------------------------------------------------------------------
# shared helpers


def programs_per_sm_estimate(workload: Workload, tiling: Tiling | None, hardware: Hardware) -> int:
    """Programs per SM of a tiled kernel whose shared memory holds Q_i and two stages of K_j, V_j.

    FlashAttention-2's kernels and Triton's pipeline K/V at least two deep; the calibration
    passes the count its compiled kernels really reach instead (registers and shared memory).
    """
    if tiling is None:
        return 1
    per_sm = hardware.sram_per_sm_bytes or hardware.sram_per_block_bytes
    shared = (tiling.block_q + 4 * tiling.block_kv) * workload.d * workload.element_bytes
    return max(1, int(per_sm // shared))


def _tensor_bytes(access: Access, workload: Workload, *, per_head: bool) -> int:
    """Bytes of the whole tensor an access touches (one head's, or all heads')."""
    length = workload.n if access.rows == "q" else workload.n_kv
    width = row_width(access.cols, workload.d, workload.n_kv)
    size = length * width * element_bytes(access.element, workload.element_bytes)
    if per_head:
        return int(size)
    kv = access.per_kv_head or access.tensor in KV_HEAD_TENSORS
    return int(size * workload.batch * (workload.kv_heads if kv else workload.heads))


def modelled(kernel: Kernel) -> bool:
    """Whether the closed form covers the kernel: whole-tensor kernels, the forward tiled
    kernels it was built for and checked against ncu (reports/calibration-h200), and backward
    tiled kernels whose parallel programs only read inside their loop (iosim's Triton dK/dV and
    dQ kernels: the forward's schedule with the axes swapped or not; checked against ncu in
    tests/data/backward-h200.json). FA1's and FA2's backward kernels (dQ read-modify-written
    from every key block's program: atomics), split-KV programs and packed heads follow other
    schedules; they keep their L2-oblivious count, and say so."""
    if kernel.segments:
        return False  # a ragged launch: its own sizes, not the workload's
    if kernel.loop is None:
        return True
    if kernel.split or kernel.pack_heads:
        return False
    if kernel.blocks == "forward" and kernel.tile is None:
        return True
    return not any(a.where == "inner" and a.op == "write" for a in kernel.accesses)


def _serial(kernel: Kernel) -> bool:
    """Whether the kernel rewrites inner-axis tiles (Alg. 1's O_i): one program per head."""
    return any(a.where == "inner" and a.rows != kernel.loop and a.op == "write"
               for a in kernel.accesses)


def _shared(kernel: Kernel, access: Access) -> bool:
    """An inner-loop tile on the other axis, read by every parallel program of a head."""
    return (kernel.loop is not None and not _serial(kernel) and access.where == "inner"
            and access.rows != kernel.loop)


def _hit_fraction(alpha: float, beta: float, capacity: float) -> float:
    """Fraction of x ∈ [0, 1] with alpha + beta·x ≤ capacity (a reuse distance linear in x)."""
    if beta == 0:
        return 1.0 if alpha <= capacity else 0.0
    root = (capacity - alpha) / beta
    inside = root if beta > 0 else 1.0 - root
    return min(1.0, max(0.0, inside))


# ---------------------------------------------------------------------------------------------
# closed form


@dataclass
class _Touch:
    kernel_index: int
    dirty: bool


class _ClosedForm:
    def __init__(self, kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                 l2_bytes: float, concurrent: int) -> None:
        self.kernels = kernels
        self.w = workload
        self.tiling = tiling
        self.capacity = l2_bytes
        self.concurrent = concurrent
        self.footprint = [self._footprint(k) for k in kernels]
        self.last: dict[str, _Touch] = {}

    def _footprint(self, kernel: Kernel) -> float:
        """Distinct bytes a kernel touches (shared tiles counted in both L2 copies)."""
        seen: dict[str, float] = {}
        for a in kernel.accesses:
            size = _tensor_bytes(a, self.w, per_head=False)
            seen[a.tensor] = max(seen.get(a.tensor, 0), size * (SHARED_COPIES if _shared(kernel, a)
                                                                 else 1))
        return sum(seen.values())

    def _carried(self, tensor: str, index: int) -> tuple[float, bool]:
        """(fraction of the tensor still in L2 when kernel `index` starts streaming it, dirty)."""
        touch = self.last.get(tensor)
        if touch is None:
            return 0.0, False
        between = sum(self.footprint[touch.kernel_index + 1:index])
        alpha = self.footprint[touch.kernel_index] + between
        beta = self._first_pass(index) - self.footprint[touch.kernel_index]
        return _hit_fraction(alpha, beta, self.capacity), touch.dirty

    def _first_pass(self, index: int) -> float:
        """Bytes kernel `index` touches while it reaches each of its tensors' elements a first
        time: all of it for a stream, taken proportionally; but when Alg. 1's kernel runs every
        head at once, its first outer block already walks all their Q_i, O_i, l_i, m_i."""
        kernel = self.kernels[index]
        heads = self.w.batch * self.w.heads
        if kernel.loop is None or not _serial(kernel) or heads > self.concurrent:
            return self.footprint[index]
        return float(sum({a.tensor: _tensor_bytes(a, self.w, per_head=False)
                          for a in kernel.accesses
                          if a.where == "inner" and a.rows != kernel.loop}.values()))

    def run(self) -> list[DramTerm]:
        oblivious = closed_form(self.kernels, self.w, self.tiling)
        terms: list[DramTerm] = []
        for index, kernel in enumerate(self.kernels):
            mine = oblivious.of_kernel(kernel.name)
            if not modelled(kernel):
                terms.extend(DramTerm(kernel.name, t.tensor, t.op, t.bytes, t.bytes,
                                      "not modelled: the L2-oblivious count") for t in mine)
                for access in kernel.accesses:
                    self.last[access.tensor] = _Touch(index, access.op == "write")
                continue
            carried = {a.tensor: self._carried(a.tensor, index) for a in kernel.accesses}
            shared = self._shared_passes(kernel)
            serial = self._serial_sweeps(kernel) if kernel.loop is not None and _serial(kernel) \
                else None
            written: set[str] = set()
            for access, term in zip(kernel.accesses, mine.terms, strict=True):
                size = _tensor_bytes(access, self.w, per_head=False)
                hit, dirty = carried[access.tensor]
                if serial is not None and access.where == "inner" and access.rows != kernel.loop:
                    again, why = serial  # fraction of the tensor re-fetched (or re-written)
                    if access.op == "read":
                        dram = round(size * (1 - hit + again))
                    elif access.tensor in written:
                        dram = 0
                    else:
                        dram = round(size * (1 - (hit if dirty else 0.0) + again))
                    note = why
                elif access.op == "write":
                    if access.tensor in written:
                        dram, note = 0, "written again while dirty in L2"
                    else:
                        merged = hit if dirty else 0.0
                        dram = round(size * (1 - merged))
                        note = "written back once" + (
                            f"; {merged:.0%} merges with dirty lines still in L2" if merged else "")
                elif shared is not None and _shared(kernel, access):
                    passes, note = shared
                    # the first pass finds what an earlier kernel left in L2 (the backward's
                    # dK/dV kernel reads the dO that the D pre-pass just read)
                    dram = round(size * max(0.0, passes - hit))
                    if hit:
                        note += f"; {hit:.0%} of the first pass still in L2 from an earlier kernel"
                else:
                    dram = round(size * (1 - hit))
                    note = "read once" + (f"; {hit:.0%} still in L2 from an earlier kernel"
                                          if hit else "")
                if access.op == "write":
                    written.add(access.tensor)
                terms.append(DramTerm(kernel.name, access.tensor, access.op,
                                      min(dram, term.bytes), term.bytes, note))
            for access in kernel.accesses:
                previous = self.last.get(access.tensor)
                stays_dirty = previous is not None and previous.dirty and carried[access.tensor][0] > 0
                self.last[access.tensor] = _Touch(index, access.op == "write" or stays_dirty)
        return terms

    # -- tiled kernels -------------------------------------------------------------------------

    def _geometry(self, kernel: Kernel) -> tuple[Lengths, int, int]:
        """(inner steps of each outer block, outer blocks per head, inner blocks per sweep),
        the first as a sequence computed on demand (blocks.VisitedKvBlocks), never a list."""
        w = self.w
        block_q, block_kv = kernel_blocks(kernel, self.tiling, w.n, w.n_kv)
        n_i = VisitedKvBlocks(w.n, w.n_kv, block_q, block_kv, w.causal)
        if kernel.loop == "q":
            return n_i, len(n_i), cdiv(w.n_kv, block_kv)
        # n_i never decreases with i: the rows that key block j sees are those after the last
        # n_i <= j
        rows = RowsPerKvBlock(n_i)
        return rows, len(rows), len(n_i)

    def _own_tile_bytes(self, kernel: Kernel) -> tuple[float, float]:
        """(bytes one program reads at its start, writes at its end): its own tiles Q_i, O_i, L_i."""
        block_q, block_kv = kernel_blocks(kernel, self.tiling, self.w.n, self.w.n_kv)
        block = block_q if kernel.loop == "q" else block_kv
        read = write = 0.0
        for a in kernel.accesses:
            if a.where in ("outer", "outer_end") or (a.where == "inner" and a.rows == kernel.loop):
                width = row_width(a.cols, self.w.d, self.w.n_kv)
                tile = block * width * element_bytes(a.element, self.w.element_bytes)
                if a.op == "read":
                    read += tile
                else:
                    write += tile
        return read, write

    def _shared_passes(self, kernel: Kernel) -> tuple[float, str] | None:
        """DRAM passes over the shared inner tensors (K, V), as a multiple of their size."""
        if kernel.loop is None or _serial(kernel):
            return None
        shared = [a for a in kernel.accesses if _shared(kernel, a)]
        if not shared:
            return None
        lengths, per_head, sweep = self._geometry(kernel)
        per_kv = any(a.per_kv_head or a.tensor in KV_HEAD_TENSORS for a in shared)
        group = self.w.group_size if per_kv else 1
        units = self.w.batch * self.w.heads // group
        unit_programs = per_head * group
        unit_bytes = SHARED_COPIES * sum(_tensor_bytes(a, self.w, per_head=True) for a in shared)
        own_read, own_write = self._own_tile_bytes(kernel)
        p = self.concurrent
        programs = units * unit_programs
        tile = unit_bytes / sweep
        step = min(p, programs) * (own_read + own_write + tile)
        total_steps = lengths.prefix(len(lengths))
        if step > self.capacity:
            # even programs that run side by side cannot share a tile: one step of theirs
            # (own tiles plus K_j, V_j) overflows the L2
            return total_steps * group / sweep, (
                f"re-read by every program: one step of {min(p, programs)} programs "
                f"({step / 2**20:.1f} MiB) > L2")
        if lengths[0] != lengths[len(lengths) - 1]:  # monotone: not all equal
            # staggered (causal): the running programs start at different times; between two
            # programs' reads of tile j the running ones advance by about one program's length,
            # i.e. touch about one sweep of K/V (the program's own with one slot, the mean sweep
            # with many) plus their own tiles
            running = min(p, programs)
            mean = total_steps / len(lengths)

            def evicted(length: int) -> bool:
                sweep_tiles = (length + (running - 1) * mean) / running
                distance = tile * sweep_tiles + running * (own_read + own_write)
                return distance > self.capacity

            again = sum_where(lengths, 1, len(lengths), evicted)
            passes = 1.0 + again * group / sweep
            if again == 0:
                return passes, "read once per head: staggered causal programs share it in L2"
            return passes, (f"{passes:.2f} reads per head: long causal programs find early "
                            "tiles evicted")
        def miss(units_now: int, units_next: int, programs_now: int, programs_next: int) -> float:
            # tile x·T of the unit u that straddles waves w and w+1, read by wave w at step x·T
            # and by wave w+1 at step x·T: in between, all of u's other tiles, the rest of the
            # sweeps of the other units of wave w, the start of those of wave w+1, O/L written
            # by wave w, Q read by w+1
            before, after = units_now - 1, units_next - 1
            alpha = (unit_bytes * (1 + before) + programs_now * own_write
                     + programs_next * own_read)
            beta = unit_bytes * (after - before)
            return 1.0 - _hit_fraction(alpha, beta, self.capacity)

        # every unit reads its tiles once; the boundaries it straddles add their misses
        # (l2_waves.wave_rereads: a closed form over all waves, no loop over units)
        extra, rereads = wave_rereads(units, unit_programs, p, miss)
        mean = (units + extra) / units
        if rereads == 0:
            return mean, "read once per head: the query blocks of a wave share it in L2"
        return mean, (f"{mean:.2f} reads per head: the next wave finds it evicted at "
                      f"{rereads} wave boundaries")

    def _serial_sweeps(self, kernel: Kernel) -> tuple[float, str]:
        """Alg. 1's inner tiles (Q_i, O_i, l_i, m_i): one program per head sweeps the rows that
        key block j sees, for every j. A tile comes back from L2 on the next sweep if the
        running programs' sweeps in between fit; returns the re-fetched fraction of the tensor
        (each miss also writes a dirty tile back)."""
        assert self.tiling is not None
        lengths, outer_count, rows_total = self._geometry(kernel)
        row_bytes = 0.0
        seen = set()
        for a in kernel.accesses:
            if a.where == "inner" and a.rows != kernel.loop and a.tensor not in seen:
                seen.add(a.tensor)
                width = row_width(a.cols, self.w.d, self.w.n_kv)
                row_bytes += width * element_bytes(a.element, self.w.element_bytes)
        tile = kernel_blocks(kernel, self.tiling, self.w.n, self.w.n_kv)[0] * row_bytes
        outer_tile = sum(_tensor_bytes(a, self.w, per_head=True) for a in kernel.accesses
                         if a.where == "outer") / max(1, outer_count)
        running = min(self.concurrent, self.w.batch * self.w.heads)
        # sweep o+1 is a suffix of sweep o (the rows that key block o+1 sees): between two
        # touches of a tile, the running programs finish sweep o after it and start sweep o+1
        # up to it, i.e. touch one sweep o+1 each (LRU: the same for every tile); summed over
        # o + 1 = 1 .. T_c − 1 where that overflows the L2 (l2_waves.sum_where)
        refetched = sum_where(lengths, 1, outer_count,
                              lambda later: running * (later * tile + outer_tile) > self.capacity)
        again = refetched / rows_total
        if again == 0:
            return 0.0, "stays in L2 from one key block's sweep to the next: DRAM sees it once"
        return again, (f"{again:.1f} extra passes: {running} programs' sweeps overflow L2 "
                       "between two uses of a tile")


def dram_estimate(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                  hardware: Hardware, *, programs_per_sm: int | None = None,
                  l2_bytes: float | None = None,
                  concurrent_programs: int | None = None) -> DramEstimate:
    """The closed-form L2-aware DRAM bytes of an algorithm's kernels (see the module docstring).

    Concurrency: `concurrent_programs` if given, else SM count × `programs_per_sm` (default
    `programs_per_sm_estimate`). `l2_bytes` overrides the YAML's L2 size.
    """
    capacity = l2_bytes if l2_bytes is not None else hardware.l2_bytes
    if capacity is None or hardware.sm_count is None:
        missing = "l2_size" if capacity is None else "sm_count"
        raise IosimError(f"{hardware.name} has no {missing} in its YAML ({hardware.path}); "
                         f"the DRAM estimate needs the L2 size and the SM count")
    per_sm = programs_per_sm or programs_per_sm_estimate(workload, tiling, hardware)
    concurrent = concurrent_programs or hardware.sm_count * per_sm
    terms = _ClosedForm(kernels, workload, tiling, capacity, concurrent).run()
    return DramEstimate(tuple(terms), capacity, concurrent, "closed form")


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


def _emits(access: Access, head: int, group: int) -> bool:
    return not (access.per_kv_head and head % group)


def _programs(kernel: Kernel, stream: Iterator[TileAccess], workload: Workload,
              tiling: Tiling | None) -> list[list[_Event]]:
    """Cut the walk's stream of one kernel into programs of events (one event per time step)."""
    group = workload.group_size
    places = {where: [a for a in kernel.accesses if a.where == where]
              for where in ("prologue", "outer", "inner", "outer_end", "epilogue")}

    def take(accesses: list[Access], head: int) -> list[tuple[TileAccess, Access]]:
        out = []
        for a in accesses:
            if _emits(a, head, group):
                tile = next(stream)
                if (tile.tensor, tile.op) != (a.tensor, a.op):
                    raise AssertionError(f"walk order: got {tile.tensor} {tile.op}, "
                                         f"expected {a.tensor} {a.op}")
                out.append((tile, a))
        return out

    def pieces(pairs: list[tuple[TileAccess, Access]]) -> _Event:
        return [(t, a, SHARED_COPIES if _shared(kernel, a) else 1) for t, a in pairs]

    programs: list[list[_Event]] = []
    if kernel.loop is None:
        for _b in range(workload.batch):
            for h in range(workload.heads):
                programs.append([pieces(take(places["prologue"], h))])
        return programs
    n_q, n_kv = workload.n, workload.n_kv
    block_q, block_kv = kernel_blocks(kernel, tiling, n_q, n_kv)
    n_i = visited_kv_blocks(n_q, n_kv, block_q, block_kv, workload.causal)
    t_r, t_c = len(n_i), cdiv(n_kv, block_kv)
    serial = _serial(kernel)
    for _b in range(workload.batch):
        for h in range(workload.heads):
            head_events: list[list[_Event]] = []
            prologue = pieces(take(places["prologue"], h))
            outer_count = t_r if kernel.loop == "q" else t_c
            for o in range(outer_count):
                events: list[_Event] = []
                current = pieces(take(places["outer"], h))
                inner = (range(n_i[o]) if kernel.loop == "q" else
                         [i for i in range(t_r) if n_i[i] > o])
                for _p in inner:
                    current += pieces(take(places["inner"], h))
                    events.append(current)
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
