"""An implementation's tile table applied to a workload: the blocks its code picks, and the
resources (shared memory, warps, registers) that set its programs per SM. Ints or arrays."""

from __future__ import annotations

from typing import Any

from iosim.inputs.implementations import (
    Implementation,
    SharedMemory,
    TileRow,
    match_rows,
    row_values,
)
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.ints import Int, select
from iosim.record import Record

DEFAULT_FLASH2_CODE = "sdpa-flash"
"""Whose tile table flash2 and splitkv use by default: FlashAttention-2's CUDA code."""


class CodeTiles(Record):
    """The blocks a tile table gives, and the program's resources; `found` is False (or False
    at a sweep's point) where no row matches (the head dim is beyond the table)."""

    block_q: Int
    block_kv: Int
    found: Any
    shared_bytes: Int
    warps: Int
    registers_per_thread: Int
    source: Any = ""
    """The chosen row's source (one workload), for the output."""


def lookup(rows: tuple[TileRow, ...], shared: SharedMemory | None, *, d: Int, causal: Int,
           dtype: Int, element_bytes: Int, cc: Int, smem_per_block: Int,
           smem_per_sm: Int) -> CodeTiles:
    """The first matching row of `rows` at every point; shared bytes from the row or the rule."""
    index, found = match_rows(rows, d=d, causal=causal, dtype=dtype, cc=cc,
                              smem_per_block=smem_per_block, smem_per_sm=smem_per_sm)
    q, kv = row_values(rows, index, "block_q"), row_values(rows, index, "block_kv")
    declared = row_values(rows, index, "shared_bytes")
    by_rule = shared.bytes(q, kv, d, element_bytes) if shared is not None else 0
    source = rows[index].source if isinstance(index, int) and index >= 0 else ""
    return CodeTiles(q, kv, found, select(declared > 0, declared, by_rule),
                     row_values(rows, index, "warps"), row_values(rows, index,
                                                                 "registers_per_thread"), source)


def implementation_or_default(impl: Implementation | None) -> Implementation:
    """`impl`, or FlashAttention-2's own profile (sdpa-flash) whose code tiles flash2 uses by default."""
    return impl if impl is not None else get_implementation(DEFAULT_FLASH2_CODE)
