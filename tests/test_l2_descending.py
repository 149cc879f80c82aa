"""FlashAttention-2's descending causal walk (estimates/l2_descending.py): the closed form
against the tile-by-tile walk, the profile trait that turns it on, and what it leaves alone."""

from __future__ import annotations

import heapq
from pathlib import Path

import pytest

from benchmarks.fa2_descending_walk import missed_bytes, reuse_distances
from iosim.algorithms.blocks import VisitedKvBlocks
from iosim.analysis.compare import compare
from iosim.estimates.l2_cutoff import miss_probability
from iosim.estimates.l2_descending import descending_misses
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

DATA = Path(__file__).parent / "data"


def _brute_force(lengths: list[int], batch: int, heads: int, group: int, slots: int,
                 tile: float, own: float, capacity: float) -> float:
    """The descending walk's misses by enumeration, written apart from l2_descending: programs
    (h, b, m) in launch order list-scheduled on `slots`; each reads key block j at its start
    + (L − 1 − j), one block per step; a read's previous one is the latest read of the same
    (b, KV head, j) at or before it by another program (at the same step: a hit); in between,
    at the steps t0 <= τ < t1, the distinct (b, KV head, block) tiles read and the own tiles
    of the programs starting or ending after t0 and at or before t1 − 1."""
    free = [0] * slots
    programs = []  # (start, length, unit)
    for h in range(heads):
        for b in range(batch):
            for n in lengths:
                s = heapq.heappop(free)
                programs.append((s, n, (b, h // group)))
                heapq.heappush(free, s + n)
    reads = [(s + n - 1 - j, i, u, j) for i, (s, n, u) in enumerate(programs) for j in range(n)]
    missed = 0.0
    for t1, i, u, j in reads:
        earlier = [t for t, k, v, jj in reads if v == u and jj == j and k != i and t <= t1]
        if not earlier or max(earlier) == t1:
            continue
        t0 = max(earlier)
        tiles = {(v, jj) for t, _, v, jj in reads if t0 <= t < t1}
        owned = sum((t0 < s <= t1 - 1) + (t0 < s + n <= t1 - 1) for s, n, _ in programs)
        missed += miss_probability(len(tiles) * tile + owned * own, capacity)
    return missed


@pytest.mark.parametrize(("batch", "heads", "group", "slots"),
                         [(1, 3, 1, 4), (2, 2, 1, 5), (1, 4, 2, 6), (2, 4, 2, 7)])
def test_descending_misses_are_the_enumerated_walk(monkeypatch: pytest.MonkeyPatch, batch: int,
                                                   heads: int, group: int, slots: int) -> None:
    """Every read judged (ROWS above the reads): the closed form's misses equal the brute-force
    enumeration of the same schedule, at L2 sizes from mostly misses to mostly hits."""
    import iosim.estimates.l2_descending as D

    monkeypatch.setattr(D, "ROWS", 10**6)
    lengths = list(VisitedKvBlocks(1280, 1280, 128, 64, True))  # 2, 4, ..., 20 key blocks
    tile = 16384.0
    for capacity in (0.25e6, 0.5e6, 1e6):
        expected = _brute_force(lengths, batch, heads, group, slots, tile, tile, capacity)
        got = D.descending_misses(VisitedKvBlocks(1280, 1280, 128, 64, True), batch, heads,
                                  group, slots, tile, tile, tile, capacity)
        assert expected > 0 and got == pytest.approx(expected, rel=1e-9), capacity


def test_descending_misses_follow_the_tile_by_tile_walk() -> None:
    """Against benchmarks/fa2_descending_walk.py (round 7's evidence script: every re-read's
    exact reuse distance, a Fenwick tree over access times, programs stepped slot by slot in
    rounds): the same misses within 30 % at three L2 sizes. The walk orders a round's reads by
    slot, so a re-read one slot later than its predecessor's sees one step more or less than
    the closed form's whole steps [t0, t1) (measured: a mean of +4 % on the distances, which
    the steep miss curve turns into up to +30 % misses near the L2; the first test pins the
    closed form to its own definition exactly)."""
    w, slots, block_q, block_kv = Workload(8192, d=128, heads=3, causal=True), 16, 128, 64
    kv_tile, kv, own = reuse_distances(w, block_q, block_kv, slots)
    lengths = VisitedKvBlocks(w.n, w.n_kv, block_q, block_kv, True)
    own_tile = block_q * w.d * w.element_bytes
    for capacity in (2e6, 4e6, 8e6):
        walk = missed_bytes(kv_tile, kv, own, 1.0, capacity)
        mine = kv_tile * descending_misses(lengths, w.batch, w.heads, w.group_size, slots,
                                           kv_tile, own_tile, own_tile, capacity)
        assert walk > 0 and mine == pytest.approx(walk, rel=0.3), capacity


def test_a_profile_opts_in_to_the_descending_walk_and_no_shipped_one_does() -> None:
    """FA2's forward iterates its key blocks in reverse (flash_fwd_kernel.h, quoted in the
    trait); a profile that declares forward_walk: descending (a copy of sdpa-flash's YAML with
    the trait) runs on the walk. No shipped profile declares it: round 8's fresh judgement
    found the walk better in median but worse in worst (docs/implementations.md)."""
    from benchmarks.descending_fit import profile

    assert profile(walk=True).walks_down and not profile(walk=False).walks_down
    assert not any(get_implementation(n).walks_down for n in ("sdpa-flash", "iosim-triton"))
    w = Workload(49152, d=128, heads=2, causal=True)
    assert _dram(w, walk=False) == pytest.approx(float(sum(
        t.bytes for t in (compare(w, "h200", impl="sdpa-flash", profile="measured")
                          .algorithms[-1].dram or pytest.fail("no DRAM")).terms)), rel=1e-12)


def _dram(w: Workload, *, walk: bool) -> float:
    from benchmarks.descending_fit import predicted

    return predicted(w, walk=walk)


@pytest.mark.parametrize(("w", "moved"), [
    (Workload(33000, d=128, heads=4), 0.0),  # non-causal, K/V beyond the L2: lockstep waves
    (Workload(1, 32768, d=128, heads=32, kv_heads=8), 0.0),  # a decode step (split-KV kernel)
    (Workload(8192, d=128, heads=8, causal=True, pass_="bwd"), 0.0),  # the backward's own walk
    (Workload(4096, d=128, heads=16, causal=True), 0.01),  # short causal: re-reads far below
])
def test_the_walk_leaves_non_causal_decode_backward_and_short_calls(w: Workload,
                                                                     moved: float) -> None:
    """The order of a walk does not matter to programs that read a tile together (a wave of
    equal-length programs); the split-KV and backward kernels keep their own models; a short
    causal call's re-reads are far below the L2 (the tail of l2_cutoff's miss curve: +0.6 %)."""
    assert _dram(w, walk=True) == pytest.approx(_dram(w, walk=False), rel=moved, abs=0)


def test_the_recorded_descending_walk_rereads_where_the_ascending_one_does_not() -> None:
    """CAUSALPROBE7 (ncu on the H200, benchmarks/impl7_probe_h200.sh; seen data): at the same
    long causal shapes FA2's kernel (descending) read 1.5-9× the DRAM bytes of iosim's Triton
    kernel (ascending), and the model with the trait predicts at least 1.3× more for FA2 there
    (it stays under ncu at 3 heads: DESCENDING_COPIES); at N 16,384 both read about the same
    and so does the model."""
    from benchmarks import impl_dram_h200 as D

    points = D._set("causalprobe7")
    rows = D.counted((DATA / "h200-impl-causalprobe7.csv").read_text(), D.calls(points))
    counted = {(r["impl"], r["index"]): r["dram"] for r in rows}
    for i in (5, 12):  # N 49,152 at 2 heads, 40,960 at 3 heads
        assert counted["sdpa-flash", i] > 1.5 * counted["iosim-triton", i]
        assert _dram(points[i], walk=True) > 1.3 * _dram(points[i], walk=False)
    assert counted["sdpa-flash", 0] == pytest.approx(counted["iosim-triton", 0], rel=0.1)
    assert _dram(points[0], walk=True) == pytest.approx(_dram(points[0], walk=False), rel=0.01)


def test_the_fresh_descending_set_is_new_and_varies_its_axes() -> None:
    """IMPL8FRESH (round 8, committed before tag impl8-frozen): no point of any earlier set of
    the validation script (every fit, validation, probe and flex set) or of the calibration
    grid; mostly causal, N 3,000-65,536 with N not a power of two, batch·heads from one head
    to 96, d 64 and 128, GQA, fp16 and bf16, non-causal controls, K/V beyond the L2."""
    from benchmarks import impl_validation_h200 as V
    from iosim.calibrate.impl_run import FIT_GRID

    fresh = V.IMPL8FRESH
    earlier = set(FIT_GRID).union(*(points for name, (points, _) in V.SETS.items()
                                    if name != "impl8fresh"))
    assert len(set(fresh)) == len(fresh) >= 12 and not set(fresh) & earlier
    causal = [w for w in fresh if w.causal]
    assert len(causal) >= 0.75 * len(fresh) and len(fresh) - len(causal) >= 2
    assert min(w.n for w in fresh) >= 2500 and max(w.n for w in causal) == 65536
    assert sum(w.n & (w.n - 1) != 0 for w in causal) >= 10
    heads = [w.batch * w.heads for w in fresh]
    assert min(heads) == 1 and max(heads) >= 64
    assert {w.d for w in fresh} == {64, 128} and {w.dtype for w in fresh} == {"fp16", "bf16"}
    assert {w.group_size for w in causal} >= {1, 3, 4, 5, 8}
    l2 = 60 * 2**20
    assert sum(2 * w.batch * w.kv_heads * w.n_kv * w.d * w.element_bytes > l2
               for w in fresh) >= 4
