"""Which wins on a shared-prefix batch: cascade attention or split-KV over each request's full
KV, and by how much. The verdict is the decoding time model's (analysis/decode_time.py: each
method at the split counts it finds fastest, launches, ramp, DRAM and L2 time and the chain of
each program's walk), the rule `--splits auto` uses too; compare's roofline times of the same
split counts stay beside it."""

from __future__ import annotations

from typing import Any

from iosim.analysis.comparison import Comparison
from iosim.analysis.decode_time import DecodeCounts, Tiles, timed_verdict
from iosim.record import Record


class CascadeVerdict(Record):
    """The winner of cascade against split-KV, with both times, split counts and bytes."""
    winner: str
    loser: str
    cascade_s: float
    splitkv_s: float
    cascade_bytes: int
    splitkv_bytes: int
    cascade_splits: str = ""
    """The model's fastest (prefix + suffix) split counts of cascade, e.g. '8+1'."""
    splitkv_splits: str = ""
    """The model's fastest split count of split-KV."""
    cascade_roofline_s: float = 0.0
    """compare's roofline time of cascade at those split counts."""
    splitkv_roofline_s: float = 0.0

    @property
    def ratio(self) -> float:
        """The loser's time over the winner's (≥ 1)."""
        slow, fast = sorted((self.cascade_s, self.splitkv_s), reverse=True)
        return slow / fast

    def sentence(self) -> str:
        """One line for people: who wins, by how much, at which split counts, and the bytes."""
        at = {"cascade": self.cascade_splits, "splitkv": self.splitkv_splits}
        return (f"Shared prefix: {self.winner} ({at[self.winner]} splits) wins, "
                f"{self.ratio:.2f}× faster than {self.loser} ({at[self.loser]}) by the decoding "
                f"time model (cascade moves {self.cascade_bytes / self.splitkv_bytes:.2f}× "
                f"split-KV's HBM bytes).")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (compare's key shared_prefix)."""
        return {"winner": self.winner, "speedup": self.ratio, "rule": "decode_time",
                "cascade_time_s": self.cascade_s, "splitkv_time_s": self.splitkv_s,
                "cascade_splits": self.cascade_splits, "splitkv_splits": self.splitkv_splits,
                "cascade_roofline_time_s": self.cascade_roofline_s,
                "splitkv_roofline_time_s": self.splitkv_roofline_s,
                "cascade_hbm_bytes": self.cascade_bytes, "splitkv_hbm_bytes": self.splitkv_bytes}


def cascade_verdict(result: Comparison, kernel_tiles: Tiles | None = None, **options: Any
                    ) -> CascadeVerdict | None:
    """The verdict of a comparison that ran both cascade and splitkv (None otherwise), at the
    comparison's own tiles (or `kernel_tiles`); `options` are compare's (sram, sram_elements,
    tiles, profile: the roofline column's)."""
    by_name = {a.algorithm: a for a in result.algorithms}
    if "cascade" not in by_name or "splitkv" not in by_name:
        return None
    tiles = kernel_tiles
    if tiles is None:
        tiling = by_name["splitkv"].tiling
        assert tiling is not None  # splitkv is tiled
        tiles = Tiles(int(tiling.block_q), int(tiling.block_q), int(tiling.block_kv))
    rule = options.pop("tiles", "code")
    counts = DecodeCounts(result.workload, result.hardware, tiles, tile_rule=rule, **options)
    v = timed_verdict(result.workload, result.hardware, tiles, counts=counts)
    return CascadeVerdict(v.winner, v.loser, v.cascade.time_s, v.splitkv.time_s,
                          round(v.cascade.hbm_bytes), round(v.splitkv.hbm_bytes),
                          v.cascade.label(), v.splitkv.label(), v.cascade.roofline_s,
                          v.splitkv.roofline_s)
