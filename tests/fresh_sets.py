"""The one check that a fresh (held-out) set is new: the honest accuracy protocol's step 2
(docs/contributing.md, "Fresh sets"), written once for every round.

A round's test names its fresh points, the key that says when two points are the same
measurement, and where earlier points live (`Seen` sources: point lists, records, probes);
`assert_fresh` then checks, in one place, what the per-round copies checked one by one:

- the set has no repeated point and as many points as the round asked for;
- every earlier source was read (a path typo or an emptied record must not make the check
  vacuous: each source holds at least `at_least` keys);
- no fresh point is a point of any earlier source, under that source's key (a source may
  compare more loosely than the set's own key: by batch, KV length and heads alone, say);
- every axis the round's acceptance varies takes at least two values in the set.

The failure message names the source and the overlapping points, so a round whose grid
touched a seen record says which record. Where earlier points live for each family of sets
(variants, backward, implementations) is tests/seen_sets.py.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Seen:
    """One earlier source: its name (for the failure message), the keys of its points, the key
    a fresh point is compared under (None: the set's own key) and how many keys it must hold to
    count as read."""

    name: str
    keys: frozenset[Hashable]
    key: Callable[[Any], Hashable] | None = None
    at_least: int = 1


def seen(name: str, keys: Iterable[Hashable], key: Callable[[Any], Hashable] | None = None,
         at_least: int = 1) -> Seen:
    """A `Seen` from any iterable of keys."""
    return Seen(name, frozenset(keys), key, at_least)


def loosened(sources: Iterable[Seen], of_key: Callable[[Any], Hashable],
             of_point: Callable[[Any], Hashable], why: str = "dtype aside") -> list[Seen]:
    """Each source compared more loosely too: its keys mapped by `of_key` (None dropped), a fresh
    point by `of_point` (a round whose points must differ in shape, not only in dtype)."""
    return [seen(f"{s.name}, {why}", {of_key(k) for k in s.keys} - {None}, key=of_point,
                 at_least=s.at_least) for s in sources if s.key is None]


def as_is(point: Any) -> Hashable:
    """The key of a point that is its own (a frozen, hashable Workload)."""
    return point  # type: ignore[no-any-return]


def assert_fresh(points: Sequence[Any], key: Callable[[Any], Hashable], earlier: Iterable[Seen],
                 size: tuple[int, int | None] = (1, None),
                 axes: Mapping[str, Callable[[Any], Hashable]] | None = None) -> None:
    """Fail unless `points` is a fresh set: distinct under `key`, `size` (least, most or None)
    points, none in any `earlier` source, every one of `axes` varied."""
    keys = [key(p) for p in points]
    repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
    assert not repeated, f"the fresh set repeats {repeated}"
    least, most = size
    assert least <= len(points) and (most is None or len(points) <= most), (
        f"the fresh set has {len(points)} points, not {least} to {most}")
    for source in earlier:
        assert len(source.keys) >= source.at_least, (
            f"{source.name}: {len(source.keys)} points read, fewer than {source.at_least}")
        compare = source.key or key
        overlap = sorted({str(compare(p)) for p in points} & {str(k) for k in source.keys})
        assert not {compare(p) for p in points} & source.keys, (
            f"fresh points already in {source.name}: {overlap}")
    for axis, value in (axes or {}).items():
        values = {value(p) for p in points}
        assert len(values) >= 2, f"the fresh set does not vary {axis}: only {values}"
