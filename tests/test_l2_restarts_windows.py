"""The restarts' batched window counts (estimates/l2_restarts.py) against a brute-force count.

`_distinct_steps_at` takes many restarts' windows at once, sorts each row once for all its
samples and narrows to int32 where the values fit; `_owned_at` counts the programs that start
or end in a window over the whole schedule's sorted starts and ends. Both are held here to a
dense enumeration: the set of (head, depth) pairs walked in (lo, hi], and a count over the
programs, on random launch-ordered programs (ties, empty windows, padding, and times beyond
int32 for the int64 path). It replaces test_l2_cutoff's test of the one-window version.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.estimates.l2_restarts import _distinct_steps_at, _owned_at

programs = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 12), st.integers(0, 2)),
                    min_size=1, max_size=14)
windows = st.lists(st.tuples(st.integers(-3, 40), st.integers(0, 20)), min_size=1, max_size=4)


def _launch_order(raw: list[tuple[int, int, int]], base: int) -> list[tuple[int, int, int]]:
    """(start, end, unit) with starts never decreasing, as a list schedule launches them."""
    out, start = [], base
    for gap, length, unit in raw:
        start += gap
        out.append((start, start + length, unit))
    return out


def _walked(progs: list[tuple[int, int, int]], lo: int, hi: int) -> int:
    return len({(u, d) for s, e, u in progs for d in range(max(lo, s) - s, min(hi, e) - s)})


@settings(max_examples=100, deadline=None)
@given(st.lists(programs, min_size=1, max_size=3), windows, st.sampled_from([0, 2**31]))
def test_distinct_steps_are_the_walked_pairs(rows, samples, base):
    rows = [_launch_order(raw, base) for raw in rows]
    width = max(len(r) for r in rows) + 1  # one padding program at least
    start, end, unit = (np.zeros((len(rows), width), dtype=np.int64) for _ in range(3))
    for i, r in enumerate(rows):
        for j, (s, e, u) in enumerate(r):
            start[i, j], end[i, j], unit[i, j] = s, e, u
    lo = np.array([[r[0][0] + a for a, _ in samples] for r in rows], dtype=np.int64)
    hi = lo + np.array([[w for _, w in samples]] * len(rows), dtype=np.int64)
    got = _distinct_steps_at(start, end, unit, lo, hi)
    want = [[_walked(r, int(lo_), int(hi_)) for lo_, hi_ in zip(lo[i], hi[i], strict=True)]
            for i, r in enumerate(rows)]
    assert got.tolist() == want


@settings(max_examples=100, deadline=None)
@given(programs, windows)
def test_owned_tiles_count_programs_starting_and_ending_in_the_window(raw, samples):
    progs = _launch_order(raw, 0)
    lo = np.array([[a for a, _ in samples]], dtype=np.int64)
    hi = lo + np.array([[w for _, w in samples]], dtype=np.int64)
    got = _owned_at(np.array([s for s, _, _ in progs]), np.sort([e for _, e, _ in progs]),
                    lo, hi, 3.0, 5.0)
    want = [[3.0 * sum(a < s <= b for s, _, _ in progs) + 5.0 * sum(a < e <= b for _, e, _ in progs)
             for a, b in zip(lo[0], hi[0], strict=True)]]
    assert got.tolist() == want
