"""Register spills of an implementation's fused forward kernel, as counted DRAM and L2 terms.

FlashAttention-2's `flash_fwd_kernel` runs at 255 registers per thread on the H200 and spills:
Nsight Compute counted its local-memory sectors on 16 seen points of every kernel variant
(tests/data/h200-impl-spill5.csv, benchmarks/impl5_h200.sh probe; docs/implementations.md):

* local **loads** hit L1 (lookup hits / sectors 0.991-1.000): they never leave the SM;
* local **stores** are written through to the L2 (the L2's write sectors from the SMs exceed
  the local store sectors by about O alone): `l2_store_bytes_per_block` per program and key
  block (225 sectors = 7.2 KB at d = 128, 111 sectors at d = 64);
* the store sectors that **miss L1** reach DRAM once: on 12 of the 14 points the sdpa-flash
  writes that validation3 counted beyond the model's (tests/data/h200-impl-dram4.csv) equal
  those sectors × 32 B within 1.5 MB (5.6 MB against 13.0 at 40/4 heads × 4,224; 40.2 against
  40.6 at 2 × 48 heads × 1,500 causal): `dram_write_bytes_per_program`, the median per program.

The split-KV kernel (244-246 registers) and the d = 256 kernel (254) spill no stores: their
profiles declare no row for them. The terms are charged to the kernel named `attn` (the
flash2 loop nest's fused kernel) only.
"""

from __future__ import annotations

from iosim.algorithms.blocks import VisitedKvBlocks
from iosim.algorithms.closedform import Dims, kernel_dims, kernel_programs
from iosim.algorithms.loopnest import Kernel
from iosim.estimates.l2_model import DramTerm
from iosim.inputs.implementations import Implementation

SPILLING_KERNEL = "attn"
"""The loop-nest kernel a spill row describes: flash2's fused forward kernel."""

SPILL_TENSOR = "spill (local memory)"


def spill_programs_and_blocks(kernel: Kernel, dims: Dims) -> tuple[int, int]:
    """(programs, key blocks they visit in all) of a fused forward kernel."""
    kd = kernel_dims(kernel, dims)
    visited = VisitedKvBlocks(int(kd.n_q), int(kd.n_kv), int(kd.block_q), int(kd.block_kv),
                              bool(kd.causal))
    units = int(kd.batch) * int(kd.heads)
    return int(kernel_programs(kernel, dims)), units * visited.prefix(len(visited))


def spill_terms(impl: Implementation | None, kernels: tuple[Kernel, ...], dims: Dims
                ) -> tuple[DramTerm, ...]:
    """The DRAM write-back of the implementation's spills (one DramTerm on its fused forward
    kernel; its note gives the local stores that reach the L2), or () where none is declared."""
    if impl is None:
        return ()
    row = impl.spill_for(int(dims.d))
    kernel = next((k for k in kernels if k.name == SPILLING_KERNEL and k.grid is not None), None)
    if row is None or kernel is None:
        return ()
    programs, blocks = spill_programs_and_blocks(kernel, dims)
    dram = programs * row.dram_write_bytes_per_program
    l2 = blocks * row.l2_store_bytes_per_block
    note = (f"{impl.name}'s register spills: {programs:,} programs × "
            f"{row.dram_write_bytes_per_program:,} B of local stores missing L1, written back "
            f"once; all {l2 / 1e6:,.1f} MB of its local stores ({blocks:,} key blocks × "
            f"{row.l2_store_bytes_per_block:,} B) reach the L2, its local loads hit L1 "
            f"({row.source})")
    return (DramTerm(kernel.name, SPILL_TENSOR, "write", dram, 0, note),)


def spill_l2_store_bytes(impl: Implementation | None, kernels: tuple[Kernel, ...], dims: Dims
                         ) -> int:
    """Local-memory bytes the spills store to the L2 (SM → L2 writes), 0 where none declared."""
    if impl is None:
        return 0
    row = impl.spill_for(int(dims.d))
    kernel = next((k for k in kernels if k.name == SPILLING_KERNEL and k.grid is not None), None)
    if row is None or kernel is None:
        return 0
    return spill_programs_and_blocks(kernel, dims)[1] * row.l2_store_bytes_per_block
