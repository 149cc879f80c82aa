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
  * A kernel whose inner loop rewrites the inner-axis tiles (Algorithm 1's O_i, l_i, m_i,
    Algorithm 4's dQ_i) and runs one program per (batch, head) sweeps them serially. One whose
    parallel programs update them with atomics (FA2's backward dQaccum, `accumulator`) shares
    them like K_j, V_j, held once (ACCUMULATOR_COPIES) and written back once per stay.
  * A backward kernel runs at its own occupancy (Tiling.bwd_programs_per_sm); a kernel whose
    inner loop walks from the last block down (FA2's backward, Kernel.inner_descending) starts
    its causal programs on the same tiles, and a head's stream restarts on the last block when
    a program starts long after its predecessor (l2_restarts.py).
  * A broadcast tensor (Access.broadcast: one copy read by every (batch, head)) stays in L2
    from head to head of a whole-tensor kernel while one head's stream fits.
  * Whole-tensor kernels (standard attention's steps) stream their tensors head by head in
    order; a tensor the previous kernels touched is still in L2 where the bytes touched since
    then fit in it.
  * Every algorithm starts with nothing in L2 (ncu is run that way: see calibrate/ncu.py).

Two forms
  * `simulate` (l2_simulate.py) drives an LRU cache with the tile walk's access stream
    (`walk`), scheduled as above. It is the definition of the model, and slow (a Python step
    per tile).
  * `dram_estimate` is its closed form: reuse distances of the access patterns above are linear
    in the position along a sweep, so the fraction of re-reads that hit is a clamped ratio.
    Its sums over waves and blocks are closed forms (l2_waves.py): the same time at any batch,
    heads or N. Tests hold it to `simulate`, and l2_waves to the loops it replaced.
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms.blocks import RowsPerKvBlock, VisitedKvBlocks, cdiv
from iosim.algorithms.closedform import check_loop_nest_arguments, closed_form, kernel_blocks
from iosim.algorithms.loopnest import KV_HEAD_TENSORS, Access, Kernel, element_bytes, row_width, tensor_bytes
from iosim.errors import IosimError, arg
from iosim.estimates import l2_launch_walk
from iosim.estimates.l2_cutoff import miss_probability
from iosim.estimates.l2_handover import gemm_hit_fraction, gemm_reads_carried
from iosim.estimates.l2_launch_walk import launch_walk_misses, walk_fits
from iosim.estimates.l2_masks import masked_shared_passes
from iosim.estimates.l2_model import (
    DramEstimate,
    DramTerm,
    accumulator,
    copies_in_l2,
    hit_fraction,
    modelled,
    programs_per_sm_estimate,
    runs_serially,
    shared_tile,
)
from iosim.estimates.l2_restarts import programs_within, restart_misses
from iosim.estimates.l2_waves import Lengths, sum_weighted, sum_where, wave_rereads
from iosim.estimates.launch_order_dram import query_once, state_writer_grids
from iosim.estimates.prefix_waves import prefix_rereads
from iosim.estimates.shared_prefix_dram import (
    broadcast_rereads,
    prefix_once,
    row_blocks_once,
    split_reads_once,
    split_terms,
    states_from_l2,
)
from iosim.inputs.api_values import as_real, check_instance, check_int
from iosim.inputs.excerpts import excerpt
from iosim.inputs.hardware import Hardware
from iosim.inputs.limits import MAX_FIGURE, MAX_SCHEDULED_PROGRAMS
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record

# ---------------------------------------------------------------------------------------------
# closed form


class _Touch(Record, frozen=False):
    kernel_index: int
    dirty: bool


class _ClosedForm:
    def __init__(self, kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                 l2_bytes: float, concurrent: int, backward_concurrent: int | None = None
                 ) -> None:
        self.kernels = kernels
        self.w = workload
        self.tiling = tiling
        self.capacity = l2_bytes
        self.concurrent = concurrent
        self.backward_concurrent = backward_concurrent or concurrent
        self.footprint = [self._footprint(k) for k in kernels]
        self.last: dict[str, _Touch] = {}

    def _footprint(self, kernel: Kernel) -> float:
        """Distinct bytes a kernel touches (shared tiles counted in both L2 copies)."""
        seen: dict[str, float] = {}
        for a in kernel.accesses:
            size = tensor_bytes(a, self.w, per_head=False)
            seen[a.tensor] = max(seen.get(a.tensor, 0), size * copies_in_l2(kernel, a))
        return sum(seen.values())

    def _carried(self, tensor: str, index: int) -> tuple[float, bool]:
        """(fraction of the tensor still in L2 when kernel `index` starts streaming it, dirty)."""
        touch = self.last.get(tensor)
        if touch is None:
            return 0.0, False
        between = sum(self.footprint[touch.kernel_index + 1:index])
        alpha = self.footprint[touch.kernel_index] + between
        beta = self._first_pass(index) - self.footprint[touch.kernel_index]
        kernel = self.kernels[index]
        if gemm_reads_carried(kernel, self.kernels[touch.kernel_index]):
            return gemm_hit_fraction(alpha, beta, self.capacity), touch.dirty
        return hit_fraction(alpha, beta, self.capacity), touch.dirty

    def _first_pass(self, index: int) -> float:
        """Bytes kernel `index` touches while it reaches each of its tensors' elements a first
        time: all of it for a stream, taken proportionally; but when Alg. 1's kernel runs every
        head at once, its first outer block already walks all their Q_i, O_i, l_i, m_i."""
        kernel = self.kernels[index]
        heads = self.w.batch * self.w.heads
        if kernel.loop is None or not runs_serially(kernel) or heads > self._slots(kernel):
            return self.footprint[index]
        return float(sum({a.tensor: tensor_bytes(a, self.w, per_head=False)
                          for a in kernel.accesses
                          if a.where == "inner" and a.rows != kernel.loop}.values()))

    def run(self) -> list[DramTerm]:
        oblivious = closed_form(self.kernels, self.w, self.tiling)
        terms: list[DramTerm] = []
        for index, kernel in enumerate(self.kernels):
            mine = oblivious.of_kernel(kernel.name)
            masked = self.w.masked and kernel.loop is not None
            if split_reads_once(kernel, self.w):
                terms.extend(split_terms(kernel, mine.terms, self.w, self.capacity))
                for access in kernel.accesses:
                    self.last[access.tensor] = _Touch(index, access.op == "write")
                continue
            if not modelled(kernel) or (masked and runs_serially(kernel)):
                # Alg. 1's serial sweeps under a window or packed sequences are bands of rows, not
                # the suffixes _serial_sweeps assumes: their visited tiles keep the oblivious count
                why = ("not modelled under a window or packed sequences: the L2-oblivious count "
                       "of the visited tiles" if masked else "not modelled: the L2-oblivious count")
                terms.extend(DramTerm(kernel.name, t.tensor, t.op, t.bytes, t.bytes, why)
                             for t in mine)
                for access in kernel.accesses:
                    self.last[access.tensor] = _Touch(index, access.op == "write")
                continue
            carried = {a.tensor: self._carried(a.tensor, index) for a in kernel.accesses}
            shared = self._shared_passes(kernel) if not masked else masked_shared_passes(
                kernel, self.w, self.tiling, self.capacity, self.concurrent,
                sum(self._own_tile_bytes(kernel)))
            serial = self._serial_sweeps(kernel) if kernel.loop is not None and runs_serially(kernel) \
                else None
            written: set[str] = set()
            for access, term in zip(kernel.accesses, mine.terms, strict=True):
                if access.scale:
                    terms.append(DramTerm(kernel.name, access.tensor, access.op, term.bytes,
                                          term.bytes, "FP8 scales: the L2-oblivious count"))
                    continue
                size = tensor_bytes(access, self.w, per_head=False)
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
                elif shared is not None and access.op == "write" and accumulator(kernel, access):
                    # every stay of an accumulator line in L2 ends in one write-back; the first
                    # may merge with the zeroed lines an earlier kernel left dirty there
                    passes, note = shared
                    merged = hit if dirty else 0.0
                    dram = round(size * max(0.0, passes - merged))
                    note = "atomics in L2, written back once per stay: " + note
                elif access.op == "write":
                    if access.tensor in written:
                        dram, note = 0, "written again while dirty in L2"
                    else:
                        merged = hit if dirty else 0.0
                        dram = round(size * (1 - merged))
                        note = "written back once" + (
                            f"; {merged:.0%} merges with dirty lines still in L2" if merged else "")
                elif shared is not None and shared_tile(kernel, access):
                    passes, note = shared
                    # the first pass finds what an earlier kernel left in L2 (the backward's
                    # dK/dV kernel reads the dO that the D pre-pass just read)
                    dram = round(size * max(0.0, passes - hit))
                    if hit:
                        note += f"; {hit:.0%} of the first pass still in L2 from an earlier kernel"
                elif access.broadcast and kernel.loop is None:
                    again = broadcast_rereads(kernel, self.w, self.capacity)
                    dram = round(size * (1 - hit + again))
                    note = ("one copy, read once: a head's stream keeps it in L2" if not again
                            else "one copy, re-read by every (batch, head): a head's stream "
                            "overflows the L2")
                elif (again := self._group_rereads(kernel, access)) > 0:
                    dram = round(size * (1 - hit + again))
                    note = (f"{1 + again:.2f} reads per KV head: each query head's programs "
                            "re-read it after the L2 lost it")
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

    def _slots(self, kernel: Kernel) -> int:
        """Programs of the kernel that run at once (a backward kernel's own occupancy)."""
        return self.backward_concurrent if kernel.blocks == "backward" else self.concurrent

    def _own_tile_bytes(self, kernel: Kernel) -> tuple[float, float]:
        """(bytes one program reads at its start, writes at its end): its own tiles Q_i, O_i, L_i."""
        block_q, block_kv = kernel_blocks(kernel, self.tiling, self.w.n, self.w.n_kv)
        block = block_q if kernel.loop == "q" else block_kv
        read = write = 0.0
        for a in kernel.accesses:
            if a.scale:
                continue
            if a.where in ("outer", "outer_end") or (a.where == "inner" and a.rows == kernel.loop):
                width = row_width(a.cols, self.w.d, self.w.n_kv, self.w.d_v)
                tile = block * width * element_bytes(a.element, self.w.element_bytes,
                                                     self.w.output_element_bytes)
                if a.op == "read":
                    read += tile
                else:
                    write += tile
        return read, write

    def _group_rereads(self, kernel: Kernel, access: Access) -> float:
        """Re-reads (as a multiple of its size) of a KV head's outer tile (K_j, V_j of a K/V-outer
        kernel, FA2's backward) that every query head of a GQA group loads in its own program.
        Programs run key block fastest, then head: query head h+1's program j starts one
        head's programs after head h's, and in between those programs walked their head's
        shared stream (Q, dO, dQaccum: one pass) and their own tiles. That reuse distance
        against the L2 (l2_cutoff.miss_probability) says whether K_j is still there; a
        kernel whose group's heads run together (few programs per head) hits."""
        group = self.w.group_size
        if (group <= 1 or kernel.loop != "kv" or kernel.grid != "blocks" or access.op != "read"
                or access.where != "outer" or access.per_kv_head
                or access.tensor not in KV_HEAD_TENSORS):
            return 0.0
        _, per_head, _ = self._geometry(kernel)
        head_stream = sum(copies_in_l2(kernel, a) * tensor_bytes(a, self.w, per_head=True)
                          for a in {a.tensor: a for a in kernel.accesses
                                    if shared_tile(kernel, a)}.values())
        own_read, own_write = self._own_tile_bytes(kernel)
        reuse = head_stream + per_head * (own_read + own_write)
        return (group - 1) * miss_probability(reuse, self.capacity)

    def _shared_passes(self, kernel: Kernel) -> tuple[float, str] | None:
        """DRAM passes over the shared inner tensors (K, V), as a multiple of their size."""
        if kernel.loop is None or runs_serially(kernel):
            return None
        shared = [a for a in kernel.accesses if shared_tile(kernel, a)]
        if not shared:
            return None
        lengths, per_head, sweep = self._geometry(kernel)
        per_kv = any(a.per_kv_head or a.tensor in KV_HEAD_TENSORS for a in shared)
        group = self.w.group_size if per_kv else 1
        units = self.w.batch * self.w.heads // group
        unit_programs = per_head * group
        unit_bytes = sum(copies_in_l2(kernel, a) * tensor_bytes(a, self.w, per_head=True)
                         for a in {a.tensor: a for a in shared}.values())
        own_read, own_write = self._own_tile_bytes(kernel)
        p = self._slots(kernel)
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
            # with many) plus their own tiles. Programs that walk from the last block down
            # (FA2's backward) start on the same tiles; once the first ones end, each new one
            # starts about mean/running steps after the one before it, and in between the
            # running ones touch that one sweep, but few start or end: no own tiles.
            if kernel.inner_descending and kernel.loop == "q" and walk_fits(lengths, p):
                # FA2's forward: each program walks its key blocks (a prefix) from the last
                # down; the launch's programs walked step by step through an LRU
                # (l2_launch_walk.py)
                kv_once = sum(tensor_bytes(a, self.w, per_head=True)
                              for a in {a.tensor: a for a in shared}.values()) / sweep
                # each tile at the copies of the sequences live beside it (walk_copies)
                copies = l2_launch_walk.walk_copies(
                    l2_launch_walk.live_sequences(lengths, self.w.batch, self.w.heads, p))
                missed = launch_walk_misses(lengths, self.w.batch, self.w.heads, group, p,
                                            kv_once * copies, own_read, own_write,
                                            self.capacity)
                passes = 1.0 + missed / (units * sweep)
                if missed == 0:
                    return passes, "read once per head: causal programs walking down share it"
                return passes, (f"{passes:.2f} reads per head: programs walking down meet "
                                "each tile after the L2 lost it")
            walks_suffix_down = kernel.inner_descending and kernel.loop == "kv"
            if walks_suffix_down and group == 1 and programs_within(units, len(lengths), p):
                # FA2's backward: the head's stream restarts on the last block whenever a
                # program starts long after its predecessor (l2_restarts.py)
                missed = restart_misses(lengths, units, p, tile, own_read, own_write,
                                        self.capacity)
                passes = 1.0 + missed / (units * sweep)
                if missed == 0:
                    return passes, "read once per head: causal programs walking down share it"
                return passes, (f"{passes:.2f} reads per head: the head's stream restarts on "
                                "the last block after the L2 lost it")
            running = min(p, programs)
            mean = total_steps / len(lengths)
            own = 0.0 if walks_suffix_down else running * (own_read + own_write)

            def evicted(length: int) -> bool:
                sweep_tiles = (length + (running - 1) * mean) / running
                return bool(tile * sweep_tiles + own > self.capacity)

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
            return 1.0 - float(hit_fraction(alpha, beta, self.capacity))

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
            if a.where == "inner" and a.rows != kernel.loop and a.tensor not in seen \
                    and not a.scale:
                seen.add(a.tensor)
                width = row_width(a.cols, self.w.d, self.w.n_kv, self.w.d_v)
                row_bytes += width * element_bytes(a.element, self.w.element_bytes,
                                                   self.w.output_element_bytes)
        tile = kernel_blocks(kernel, self.tiling, self.w.n, self.w.n_kv)[0] * row_bytes
        outer_tile = sum(tensor_bytes(a, self.w, per_head=True) for a in kernel.accesses
                         if a.where == "outer") / max(1, outer_count)
        running = min(self._slots(kernel), self.w.batch * self.w.heads)
        # sweep o+1 is a suffix of sweep o (the rows that key block o+1 sees): between two
        # touches of a tile, the running programs finish sweep o after it and start sweep o+1
        # up to it, i.e. touch one sweep o+1 each (LRU: the same for every tile); summed over
        # o + 1 = 1 .. T_c − 1, each weighted by the chance that a re-read after that reuse
        # distance misses (l2_cutoff.py: gradual as the sweeps approach the L2)
        refetched = sum_weighted(
            lengths, 1, outer_count,
            lambda later: miss_probability(running * (later * tile + outer_tile), self.capacity))
        again = refetched / rows_total
        if again == 0:
            return 0.0, "stays in L2 from one key block's sweep to the next: DRAM sees it once"
        return again, (f"{again:.1f} extra passes: {running} programs' sweeps fill the L2 "
                       "between two uses of a tile")


def dram_estimate(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                  hardware: Hardware, *, programs_per_sm: int | None = None,
                  l2_bytes: float | None = None,
                  concurrent_programs: int | None = None) -> DramEstimate:
    """The closed-form L2-aware DRAM bytes of an algorithm's kernels (see the module docstring).

    Concurrency: `concurrent_programs` if given, else SM count × `programs_per_sm`; without
    one, the tiling's own occupancy (Tiling.programs_per_sm: the implementation's registers,
    shared memory and warps, estimates/occupancy.py, the count the time model uses too), and
    with no tiling `programs_per_sm_estimate`. `l2_bytes` overrides the YAML's L2 size.
    """
    check_loop_nest_arguments(kernels, workload, tiling)
    check_instance("hardware", hardware, Hardware, "iosim.resolve_hardware('h100').hardware")
    for name, value in (("programs_per_sm", programs_per_sm),
                        ("concurrent_programs", concurrent_programs)):
        if value is not None:
            check_int(name, value, high=MAX_SCHEDULED_PROGRAMS)
    if l2_bytes is not None:
        size = as_real(l2_bytes)
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size != size \
                or not 1 <= size <= MAX_FIGURE:  # size != size: NaN
            raise IosimError(f"{arg('l2_bytes')} must be a number of bytes from 1 to "
                             f"{MAX_FIGURE:.0e}, got {excerpt(l2_bytes)}", param="l2_bytes")
    capacity = l2_bytes if l2_bytes is not None else hardware.l2_bytes
    if capacity is None or hardware.sm_count is None:
        missing = "l2_size" if capacity is None else "sm_count"
        raise IosimError(f"{hardware.name} has no {missing} in its YAML ({hardware.path}); "
                         f"the DRAM estimate needs the L2 size and the SM count")
    # the occupancy the tiling declares: FA2's d = 256 forward runs 2 programs per SM (98,304 B
    # of shared memory, 254 registers: tests/data/h200-impl-launches.csv), where the two-stage
    # shared-memory estimate left one
    per_sm = programs_per_sm or (tiling.programs_per_sm if tiling is not None else
                                 programs_per_sm_estimate(workload, tiling, hardware))
    concurrent = concurrent_programs or hardware.sm_count * per_sm
    # a backward kernel's occupancy is its own (FA2's backward: one 64 × 128 program of 144 KiB
    # shared memory per SM at d = 128), when the tiling says it and no count is forced
    backward = concurrent
    if concurrent_programs is None and programs_per_sm is None and tiling is not None:
        backward = hardware.sm_count * tiling.bwd_programs_per_sm
    terms = _ClosedForm(kernels, workload, tiling, capacity, concurrent, backward).run()
    # shared_prefix_dram.py: reads that hit in L2 because neighbouring programs made them
    # the split kernels' own occupancy (the tiling's programs per SM) unless a count is forced
    split_concurrent = concurrent_programs or (
        hardware.sm_count * (programs_per_sm or (tiling.programs_per_sm if tiling else 1)))
    once = row_blocks_once(terms, kernels, workload, tiling, split_concurrent, capacity)
    grids = state_writer_grids(kernels, workload, tiling, split_concurrent)
    prefix = prefix_rereads(prefix_once(once, kernels, workload, tiling), kernels, workload,
                            tiling, split_concurrent, capacity)
    shared = states_from_l2(query_once(prefix, kernels, workload), capacity, workload, grids)
    return DramEstimate(shared, capacity, concurrent, "closed form")
