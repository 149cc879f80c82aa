"""Head packing: the g query heads of a KV head run as g·n query rows of one problem.

FlashAttention-2's `seqlenq_ngroups_swapped` (flash_api.cpp) does this for decoding with GQA:
one query token and more query than KV heads. A kernel that packs (Kernel.pack_heads) then
reads each KV head's K and V once. Written once over ints or arrays (sweeps).
"""

from __future__ import annotations

from typing import Any

from iosim.inputs.ints import Int, both, select


def packs_heads(n: Int, heads: Int, kv_heads: Int) -> Any:
    """flash_api.cpp `seqlenq_ngroups_swapped`: one query token and more query than KV heads."""
    return both(n == 1, heads // kv_heads > 1)


def packed_problem(n: Int, heads: Int, kv_heads: Int, packed: Any) -> tuple[Int, Int]:
    """(query rows, heads) of the problem a kernel's loops run over: (g·n, kv_heads) where it
    packs the g = heads/kv_heads query heads of each KV head, else (n, heads)."""
    return n * select(packed, heads // kv_heads, 1), select(packed, kv_heads, heads)
