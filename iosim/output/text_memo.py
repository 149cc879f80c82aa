"""Texts of numbers already written, kept from one chunk of a streamed file to the next.

A sweep's chunks share many of their values: on benchmarks/sweep_formats.py's million-point
grid the chunks hold 1.7 million distinct floats between them but the file only 0.7 million
(and 2.1 versus 0.4 million integers), so writing each chunk's distinct values afresh wrote most
of them several times over, `repr` being the writer's largest cost. A `TextMemo` keeps the text
of each value (by its 64-bit pattern) once made, so a later chunk looks it up instead.

Look-ups are NumPy's: the keys kept sorted, `searchsorted` finds a chunk's values, and the texts
are gathered from an object array (no Python call per value). The memos of one file share one
`MemoBudget`: when their entries would pass it, every memo is emptied and fills again, so the
memory stays bounded whatever the sweep's size (about 130 bytes an entry: the text, its key,
its slot).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

MEMO_ENTRIES = 1_000_000
"""Texts kept by all the memos of one file (in each writing process) together: about 130 MB
at most."""


class MemoBudget:
    """The entries the memos of one file may hold together, and the memos that hold them."""

    def __init__(self, entries: int = MEMO_ENTRIES) -> None:
        self.entries = entries
        self.used = 0
        self.memos: list[TextMemo] = []

    def make_room(self, entries: int) -> bool:
        """Whether `entries` more can be kept, every memo emptied first where they could not."""
        if self.used + entries > self.entries:
            for memo in self.memos:
                memo.clear()
        if entries > self.entries:
            return False
        self.used += entries
        return True


class TextMemo:
    """The texts of one column's values, each made the same way, by 64-bit key."""

    def __init__(self, budget: MemoBudget) -> None:
        self.budget = budget
        budget.memos.append(self)
        self.made_as: tuple[object, ...] | None = None
        self.clear()

    def clear(self) -> None:
        """Forget every text (its entries returned to the budget)."""
        self.budget.used -= getattr(self, "size", 0)
        self.keys = np.empty(0, dtype=np.int64)  # sorted
        self.slots = np.empty(0, dtype=np.intp)  # where each key's text is in `texts`
        self.texts = np.empty(0, dtype=object)  # filled up to `size`, grown by doubling
        self.size = 0

    def texts_of(self, keys: np.ndarray, made_as: tuple[object, ...],
                 make: Callable[[np.ndarray], list[str]]) -> np.ndarray:
        """The text of each key (distinct int64s), as an object array: those kept looked up,
        the others made by `make` (given the keys it lacks, in order) and kept. `made_as`
        names how `make` writes (the kind of number, the separators around it, ...): texts
        made otherwise are forgotten first."""
        if made_as != self.made_as:
            self.clear()
            self.made_as = made_as
        out = np.empty(len(keys), dtype=object)
        if self.size:
            at = np.searchsorted(self.keys, keys)
            np.minimum(at, len(self.keys) - 1, out=at)
            found = self.keys[at] == keys
            out[found] = self.texts[self.slots[at[found]]]
            new = np.flatnonzero(~found)
        else:
            new = np.arange(len(keys))
        if len(new) == 0:
            return out
        made = np.array(make(keys[new]), dtype=object)
        out[new] = made
        if self.budget.make_room(len(new)):
            self._keep(keys[new], made)
        return out

    def _keep(self, keys: np.ndarray, texts: np.ndarray) -> None:
        end = self.size + len(keys)
        if end > len(self.texts):
            grown = np.empty(max(end, 2 * len(self.texts)), dtype=object)
            grown[:self.size] = self.texts[:self.size]
            self.texts = grown
        self.texts[self.size:end] = texts
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        at = np.searchsorted(self.keys, sorted_keys)
        self.keys = np.insert(self.keys, at, sorted_keys)
        self.slots = np.insert(self.slots, at, order + self.size)
        self.size = end


__all__ = ["MEMO_ENTRIES", "MemoBudget", "TextMemo"]
