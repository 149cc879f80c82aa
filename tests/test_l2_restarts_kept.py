"""l2_restarts keeps a schedule's restarts and their windows' distinct steps across calls
(_KEPT): a count taken after calls of other bytes per step, L2 sizes and head counts (which
computed other restarts' rows, in other batches) is the count taken with nothing kept, to the
last bit."""

from __future__ import annotations

import itertools

from iosim.algorithms.blocks import RowsPerKvBlock, VisitedKvBlocks
from iosim.estimates import l2_restarts
from iosim.estimates.l2_restarts import restart_misses

# causal FA2 backward programs (K/V outer, 64-row query blocks, 128-key blocks): N of one
# wave, of several, not a multiple of a block
LENGTHS = [RowsPerKvBlock(VisitedKvBlocks(n, n, 64, 128, True)) for n in (2816, 5000, 12_800)]
CASES = list(itertools.product(range(len(LENGTHS)), (1, 8, 512), (132, 264),
                               (2**14, 2**17, 2**19), (50e6, 60 * 2**20)))


def test_a_kept_schedule_gives_the_count_of_a_fresh_one() -> None:
    fresh = []
    for lengths, units, slots, tile, capacity in CASES:
        l2_restarts._KEPT.clear()
        fresh.append(restart_misses(LENGTHS[lengths], units, slots, tile, 2**15, 2**14,
                                    capacity))
    l2_restarts._KEPT.clear()
    kept = [restart_misses(LENGTHS[lengths], units, slots, tile, 2**15, 2**14, capacity)
            for lengths, units, slots, tile, capacity in reversed(CASES)][::-1]
    assert kept == fresh
    assert any(f > 0 for f in fresh)  # some restarts miss: the rows were computed
