"""MLA prefill's Triton forward (calibrate/kernels_mla_prefill.py) moves exactly the tiles iosim's
flash2 loop nest counts at `--d 192 --d-v 128 --block-q 128 --block-kv 64`: the kernel's grid
and its two key loops walked here by their bounds (no torch needed), against compare's terms.

The walk mirrors mla_prefill: a program per ⌈N / BLOCK_M⌉ query block and head
(prefill_grid); it loads its Q_i rows once and stores O_i and L_i once (rows past N masked:
they move nothing); it visits key blocks from 0 to the diagonal band's end (causal:
min(start_m + BLOCK_M, N)) or to N, loading each block's keys (the last one partial) of K
(d_qk wide) and V (d_v wide).
"""

from __future__ import annotations

import pytest

import iosim

BLOCK_M, BLOCK_N = 128, 64
"""kernels_mla_prefill.PrefillConfig's tiles (what the H200 record ran)."""


def kernel_tile_elements(n: int, d_qk: int, d_v: int, causal: bool) -> dict[str, int]:
    """Elements one head's loads and stores move, walking the kernel's loops."""
    moved = {"Q": 0, "K": 0, "V": 0, "O": 0, "L": 0}
    for start_m in range(0, n, BLOCK_M):
        rows = min(BLOCK_M, n - start_m)
        moved["Q"] += rows * d_qk
        moved["O"] += rows * d_v
        moved["L"] += rows
        last = min(start_m + BLOCK_M, n) if causal else n
        for start_n in range(0, last, BLOCK_N):
            keys = min(BLOCK_N, n - start_n)
            moved["K"] += keys * d_qk
            moved["V"] += keys * d_v
    return moved


@pytest.mark.parametrize(("n", "causal"), [(4096, True), (2000, False), (777, True), (1000, False),
                                           (333, True), (64, False)])
def test_iosim_counts_the_kernels_tiles(n: int, causal: bool) -> None:
    heads = 3
    w = iosim.Workload(n, d=192, d_v=128, heads=heads, causal=causal)
    c = iosim.compare(w, "h200", algorithms=["flash2"], block_q=BLOCK_M, block_kv=BLOCK_N)
    counted = {t.tensor: t.elements for t in c.algorithm("flash2").traffic}
    walked = kernel_tile_elements(n, 192, 128, causal)
    assert {k: heads * v for k, v in walked.items()} == counted
