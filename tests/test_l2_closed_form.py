"""The L2 model's closed forms (estimates/l2_waves.py, blocks.VisitedKvBlocks) equal the Python
loops they replaced (those of commit 722acfe, kept here as the reference), on small cases."""

from __future__ import annotations

from bisect import bisect_right

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from iosim.algorithms.blocks import RowsPerKvBlock, VisitedKvBlocks, visited_kv_blocks
from iosim.estimates.l2_model import hit_fraction
from iosim.estimates.l2_waves import sum_where, wave_rereads
from iosim.inputs.tiling import default_blocks, make_tiling, paper_blocks, working_set_bytes
from iosim.inputs.workload import Workload


def _old_wave_loop(units: int, unit_programs: int, p: int, unit_bytes: float, own_read: float,
                   own_write: float, capacity: float) -> tuple[float, int]:
    """_ClosedForm._shared_passes's loop over units and waves, as it was at 722acfe."""
    programs = units * unit_programs

    def units_in(wave: int) -> set[int]:
        first = wave * p
        last = min((wave + 1) * p, programs) - 1
        return set() if last < first else set(range(first // unit_programs,
                                                     last // unit_programs + 1))

    def programs_in(wave: int) -> int:
        return max(0, min(p, programs - wave * p))

    total, rereads = 0.0, 0
    for u in range(units):
        first_wave = u * unit_programs // p
        last_wave = ((u + 1) * unit_programs - 1) // p
        total += 1.0
        for wave in range(first_wave, last_wave):
            before = len(units_in(wave) - {u})
            after = len(units_in(wave + 1) - {u})
            alpha = (unit_bytes * (1 + before) + programs_in(wave) * own_write
                     + programs_in(wave + 1) * own_read)
            beta = unit_bytes * (after - before)
            miss = 1.0 - hit_fraction(alpha, beta, capacity)
            total += miss
            rereads += miss > 0
    return total, rereads


@settings(max_examples=300, deadline=None)
@given(units=st.integers(1, 40), unit_programs=st.integers(1, 40), p=st.integers(1, 60),
       unit_bytes=st.integers(1, 5000), own_read=st.integers(0, 300),
       own_write=st.integers(0, 300), capacity=st.integers(1, 40000))
def test_wave_rereads_equals_the_loop(units, unit_programs, p, unit_bytes, own_read, own_write,
                                      capacity):
    def miss(now: int, nxt: int, programs_now: int, programs_next: int) -> float:
        alpha = unit_bytes * now + programs_now * own_write + programs_next * own_read
        return 1.0 - hit_fraction(alpha, unit_bytes * (nxt - now), capacity)

    extra, rereads = wave_rereads(units, unit_programs, p, miss)
    total, old_rereads = _old_wave_loop(units, unit_programs, p, unit_bytes, own_read, own_write,
                                        capacity)
    assert rereads == old_rereads
    assert abs((units + extra) - total) <= 1e-9 * total


@settings(max_examples=300, deadline=None)
@given(n_q=st.integers(1, 300), n_kv=st.integers(1, 300), block_q=st.integers(1, 40),
       block_kv=st.integers(1, 40), causal=st.booleans(), threshold=st.integers(-1, 12))
def test_visited_blocks_and_sums_equal_the_lists(n_q, n_kv, block_q, block_kv, causal, threshold):
    listed = visited_kv_blocks(n_q, n_kv, block_q, block_kv, causal)
    lazy = VisitedKvBlocks(n_q, n_kv, block_q, block_kv, causal)
    assert [lazy[i] for i in range(len(lazy))] == listed
    assert [lazy.prefix(k) for k in range(len(listed) + 1)] == [sum(listed[:k])
                                                                 for k in range(len(listed) + 1)]
    # count_at_most's closed form against a count over the list, below 0 and past T_c too
    assert [lazy.count_at_most(j) for j in range(-3, listed[-1] + 4)] == [
        sum(x <= j for x in listed) for j in range(-3, listed[-1] + 4)]
    # the K/V-outer geometry of 722acfe: rows of key block j = T_r − bisect_right(n_i, j)
    rows = [len(listed) - bisect_right(listed, j) for j in range(-(-n_kv // block_kv))]
    lazy_rows = RowsPerKvBlock(lazy)
    assert [lazy_rows[j] for j in range(len(lazy_rows))] == rows
    assert [lazy_rows.prefix(k) for k in range(len(rows) + 1)] == [sum(rows[:k])
                                                                    for k in range(len(rows) + 1)]
    for seq, lazy_seq in ((listed, lazy), (rows, lazy_rows)):
        expected = sum(x for x in seq[1:] if x > threshold)  # the old loops' `again` sums
        assert sum_where(lazy_seq, 1, len(seq), lambda x: x > threshold) == expected


def _old_step_down(workload: Workload, sram_bytes: int, outer: str) -> tuple[int, int]:
    """make_tiling's row-by-row loop, as it was at 722acfe (main now bisects, inputs/tiling.py)."""
    d, elt = workload.d, workload.element_bytes
    q, kv = paper_blocks(sram_bytes // elt, d, outer)
    while working_set_bytes(q, kv, d, elt) > sram_bytes:
        if kv >= q:
            kv -= 1
        else:
            q -= 1
    return q, kv


@settings(max_examples=300, deadline=None)
@given(d=st.integers(1, 300), sram=st.integers(1, 300_000), dtype=st.sampled_from(["fp16", "fp32"]),
       outer=st.sampled_from(["kv", "q"]))
def test_default_blocks_equal_the_step_down_loop(d, sram, dtype, outer):
    """The step-down (now the fits check's suggestion, make_tiling's fits_note; the default
    blocks are Alg. 1 line 1 as printed) equals the old loop."""
    w = Workload(64, d=d, dtype=dtype)
    assume(sram >= working_set_bytes(1, 1, d, w.element_bytes))  # else make_tiling refuses
    assert default_blocks(sram, d, w.element_bytes, outer) == _old_step_down(w, sram, outer)
    t = make_tiling(w, sram, "--sram", outer=outer)
    q, kv = _old_step_down(w, sram, outer)
    assert (t.block_q, t.block_kv) == (q, kv) or f"{q} × {kv} would fit" in t.fits_note
