"""'Did you mean ...?' for a mistyped name (a GPU, an algorithm, a command): difflib's closest
matches among the names and aliases a user could have meant."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str], *, limit: int = 3) -> list[str]:
    """Up to `limit` choices closest to `word` (case-insensitive), best first; [] if none is
    close. A choice that starts with the word (a10 -> a100) counts as close."""
    options = list(dict.fromkeys(choices))
    lowered = {c.lower(): c for c in options}
    key = word.strip().lower()
    found = difflib.get_close_matches(key, list(lowered), n=limit, cutoff=0.6)
    prefixed = [c for c in lowered if key and c.startswith(key) and c not in found]
    return [lowered[c] for c in (found + prefixed)[:limit]]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' Did you mean a100 or a100-80gb?' or '' (to append to an error message)."""
    matches = closest(word, choices)
    if not matches:
        return ""
    quoted = [f"'{m}'" for m in matches]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" Did you mean {listed}?"


__all__ = ["closest", "did_you_mean"]
