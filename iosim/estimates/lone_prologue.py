"""A lone grid's two terms: the rate of an SM that busy held one program too, and the prologue.

A grid of at most one program per SM (P ≤ S: occupancy.py:lone_program_time) runs each SM's
one program alone. What that costs depends on what the busy grids the efficiency was fitted on
held per SM (c, occupancy.py:programs_per_sm):

- c ≥ 2 (iosim-triton at d 64: 65,536 B of shared memory, 117 registers × 256 threads): busy
  SMs hide one program's latencies (the softmax between its matmuls, its loads) behind the
  other's; alone it cannot, and runs at `solo_rate` of the busy rate (< 1);
- c = 1 (iosim-triton at d 128 and d 256: 160 KiB of shared memory): a busy SM holds one
  program as well, so nothing is lost to concurrency. Its rate is `solo_rate_one`, fitted; it
  comes out above 1 because the busy efficiency carries each wave's prologue below as part of
  its rate, and a lone grid pays that prologue once, as its own term.

The prologue: before a program's first matmul can issue it loads its Q tile and the first K, V
tiles, and after its last it stores its O tile, none overlapped with work (one program on the
SM, no other wave): (2·B_r + 2·B_c) · d · element bytes, moved at one program's
`lone_prologue_bandwidth` (fitted; the order of the H200's measured lone-program stream,
16.5 GB/s at 4 warps and 32 GB/s at 8, tests/data/h200-sm-bandwidth.json). The seen lone
iosim-triton calls (tests/data/h200-impl-{fit,fit2,calibrate,validation..6}.json) showed the
split: at d 64 every kernel −8 … −12 % under main's one solo rate 0.84 whatever its length, at
d 128 +7 … +24 % growing with N (a fixed cost over a faster rate), reports/impl-validation/
triton13.md.

An implementation without these terms (every one but iosim-triton: its tiles, warps and
registers are declared from its source and measured, so c is known) keeps the one solo rate for
every c, as before.
"""

from __future__ import annotations

LONE_TERMS = ("solo_rate_one", "lone_prologue_bandwidth")
"""The two terms of this module in a GPU YAML's measured.impls entry (impl_calibration.py)."""


def prologue_bytes(block_q: int, block_kv: int, d: int, element_bytes: int) -> int:
    """Bytes a program moves before its first and after its last matmul: its Q tile in
    (B_r × d), the first K and V tiles in (2 · B_c × d), its O tile out (B_r × d)."""
    return (2 * block_q + 2 * block_kv) * d * element_bytes


def lone_rate(per_sm: int, solo_rate: float, solo_rate_one: float | None) -> float:
    """The rate of an SM holding one program of a lone grid, of the busy rate: `solo_rate_one`
    where busy grids also hold one (c = 1) and the term is fitted, else `solo_rate`."""
    return solo_rate_one if per_sm == 1 and solo_rate_one is not None else solo_rate
