"""Closed forms for the L2 model's sums over waves and over blocks (iosim/estimates/l2.py).

The model (l2.py's docstring) looked at every wave boundary of every (batch, head) unit, and
at every outer block, in Python loops: 498 s at N = 2^26 with 128 heads and batch 1024, and
no end at batch 2^31. The sums here give the same numbers in O(log) steps:

* `wave_rereads`: at a boundary between waves w and w+1 at most one unit has programs on both
  sides (units are contiguous runs of programs), and what it re-reads depends only on how many
  units waves w and w+1 hold. For full waves that is a function of r = w·p mod U (p programs
  per wave, U per unit) that is constant between at most six breakpoints of r, and the number
  of w with r in a range is a sum of floors (floor_sum). The last boundary, next to a partial
  wave, is evaluated on its own.
* `sum_where`: Σ lengths[i] over the i where a condition that grows with lengths[i] holds,
  for lengths monotone in i (blocks.VisitedKvBlocks, RowsPerKvBlock): the condition holds on a
  prefix or a suffix, found by bisection, and summed by prefix sums. `sum_weighted` is the same
  sum with a weight between 0 and 1 that rises with the length (a soft L2 cutoff, l2_cutoff.py).

tests/test_l2_closed_form.py holds both equal to the loops they replace on small cases.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Protocol

from iosim.algorithms.blocks import floor_sum


class Lengths(Protocol):
    """The inner-loop lengths (steps) of a kernel's programs in launch order, with prefix sums."""

    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> int: ...

    def prefix(self, k: int) -> int:
        """The sum of the first k lengths."""
        ...


def _edge(lengths: Lengths, lo: int, hi: int, holds: Callable[[int], bool]) -> tuple[int, bool]:
    """(edge, rising): `holds` is true on [edge, hi) if rising (lengths rise with i), else on
    [lo, edge); `lengths` monotone in i and `holds` false below some value, true above it."""
    rising = lengths[lo] <= lengths[hi - 1]
    a, b = lo, hi
    while a < b:
        mid = (a + b) // 2
        if holds(lengths[mid]) == rising:
            b = mid
        else:
            a = mid + 1
    return a, rising


def sum_where(lengths: Lengths, lo: int, hi: int, holds: Callable[[int], bool]) -> int:
    """Σ lengths[i] for lo <= i < hi where holds(lengths[i]); `lengths` monotone in i and
    `holds` false below some value and true above it."""
    if hi <= lo:
        return 0
    edge, rising = _edge(lengths, lo, hi, holds)
    if rising:
        return lengths.prefix(hi) - lengths.prefix(edge)
    return lengths.prefix(edge) - lengths.prefix(lo)


EXACT_TERMS = 4096
"""`sum_weighted` sums at most this many partial weights one by one; a longer run of them is
cut into this many equal runs, each weighted at its middle (the weight is smooth there)."""


def sum_weighted(lengths: Lengths, lo: int, hi: int, weight: Callable[[int], float]) -> float:
    """Σ lengths[i] · weight(lengths[i]) for lo <= i < hi; `lengths` monotone in i and `weight`
    non-decreasing in the length, exactly 0 below some value and exactly 1 above another
    (l2_cutoff.miss_probability): the ones by prefix sums, the partial weights one by one
    (or, beyond EXACT_TERMS of them, run by run)."""
    if hi <= lo:
        return 0.0
    sure = sum_where(lengths, lo, hi, lambda n: weight(n) >= 1.0)
    some, rising = _edge(lengths, lo, hi, lambda n: weight(n) > 0.0)
    full, _ = _edge(lengths, lo, hi, lambda n: weight(n) >= 1.0)
    a, b = (some, full) if rising else (full, some)  # the partial weights: [a, b)
    if b - a <= EXACT_TERMS:
        return sure + sum(lengths[i] * weight(lengths[i]) for i in range(a, b))
    total = 0.0
    cuts = [a + (b - a) * k // EXACT_TERMS for k in range(EXACT_TERMS + 1)]
    for c0, c1 in itertools.pairwise(cuts):
        if c1 > c0:
            total += (lengths.prefix(c1) - lengths.prefix(c0)) * weight(lengths[(c0 + c1) // 2])
    return sure + total


def _count_residues_below(count: int, p: int, u: int, bound: int) -> int:
    """#{w < count : (w·p mod u) < bound} for 0 <= bound <= u (Σ ⌊wp/u⌋ − ⌊(wp − bound)/u⌋)."""
    if count <= 0 or bound <= 0:
        return 0
    return int(floor_sum(count, u, p, 0) - floor_sum(count, u, p, u - bound) + count)


def wave_rereads(units: int, unit_programs: int, p: int,
                 miss: Callable[[int, int, int, int], float]) -> tuple[float, int]:
    """(Σ misses, boundaries with a miss) over every wave boundary that a unit straddles.

    `miss(units in wave w, units in wave w+1, programs in w, programs in w+1)` is the fraction
    of the straddling unit's shared tiles that wave w+1 re-reads from DRAM. Programs are
    numbered unit by unit, `unit_programs` each, and run `p` at a time in waves.
    """
    u_len = unit_programs
    programs = units * u_len
    last_wave = (programs - 1) // p
    if last_wave == 0:
        return 0.0, 0

    def units_in(wave: int) -> int:
        first = wave * p
        last = min((wave + 1) * p, programs) - 1
        return last // u_len - first // u_len + 1

    def programs_in(wave: int) -> int:
        return max(0, min(p, programs - wave * p))

    total, with_miss = 0.0, 0
    # boundaries w < last_wave − 1 join two full waves: a function of r = w·p mod U
    regular = last_wave - 1
    if regular > 0:
        # where units_in(w) steps (r ≡ 1 − p), where r + p wraps to a unit boundary (r ≡ −p,
        # a single residue: nothing straddles), where units_in(w + 1) steps (r ≡ 1 − 2p)
        wrap = (-p) % u_len
        cuts = sorted({0, u_len, (1 - p) % u_len, wrap, wrap + 1, (1 - 2 * p) % u_len})
        below = {c: _count_residues_below(regular, p, u_len, c) for c in cuts}
        for a, b in itertools.pairwise(cuts):
            hits = below[b] - below[a]
            if a >= b or hits == 0:
                continue
            r = a
            r_next = (r + p) % u_len
            if r_next == 0:  # the wave boundary is a unit boundary: no unit straddles it
                continue
            value = miss((r + p - 1) // u_len + 1, (r_next + p - 1) // u_len + 1, p, p)
            total += hits * value
            with_miss += hits if value > 0 else 0
    w = last_wave - 1  # the last boundary, next to the (possibly partial) last wave
    if ((w + 1) * p) % u_len:
        value = miss(units_in(w), units_in(w + 1), programs_in(w), programs_in(w + 1))
        total += value
        with_miss += value > 0
    return total, with_miss
