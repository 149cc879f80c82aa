"""Which wins on a shared-prefix batch: cascade attention or split-KV over each request's full
KV, and by how much (predicted times of `compare`, each kernel's waves included)."""

from __future__ import annotations

from typing import Any

from iosim.analysis.comparison import Comparison
from iosim.record import Record


class CascadeVerdict(Record):
    """The winner of cascade against split-KV, with both times and bytes."""
    winner: str
    loser: str
    cascade_s: float
    splitkv_s: float
    cascade_bytes: int
    splitkv_bytes: int

    @property
    def ratio(self) -> float:
        """The loser's time over the winner's (≥ 1)."""
        slow, fast = sorted((self.cascade_s, self.splitkv_s), reverse=True)
        return slow / fast

    def sentence(self) -> str:
        """One line for people: who wins, by how much, and the bytes each moves."""
        return (f"Shared prefix: {self.winner} wins, {self.ratio:.2f}× faster than {self.loser} "
                f"(cascade moves {self.cascade_bytes / self.splitkv_bytes:.2f}× split-KV's HBM "
                f"bytes).")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (compare's key shared_prefix)."""
        return {"winner": self.winner, "speedup": self.ratio, "cascade_time_s": self.cascade_s,
                "splitkv_time_s": self.splitkv_s, "cascade_hbm_bytes": self.cascade_bytes,
                "splitkv_hbm_bytes": self.splitkv_bytes}


def cascade_verdict(result: Comparison) -> CascadeVerdict | None:
    """The verdict of a comparison that ran both cascade and splitkv (None otherwise)."""
    by_name = {a.algorithm: a for a in result.algorithms}
    if "cascade" not in by_name or "splitkv" not in by_name:
        return None
    c, s = by_name["cascade"], by_name["splitkv"]
    cascade_wins = c.time_s < s.time_s
    return CascadeVerdict("cascade" if cascade_wins else "splitkv",
                          "splitkv" if cascade_wins else "cascade", c.time_s, s.time_s,
                          c.hbm_bytes, s.hbm_bytes)
