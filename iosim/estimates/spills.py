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

How much of those stores reach DRAM depends on the kernel's template instance, not on the
shape: `flash_fwd_kernel` is compiled once per (Is_causal, Is_even_MN, ...) and each instance
has its own register allocation (round 12, reports/impl-validation/impl12.md). The store sectors
missing L1 per program that ncu counted in h200-impl-spill5.csv are 35 kB for the causal,
uneven d = 128 instance (2 × 48 heads × 1,500) against 8.7-9.2 kB for the causal, even one
(12,032-49,920 keys) and 1.0-3.0 kB for the non-causal, uneven one; the DRAM writes beyond the
model of every seen call follow the same split (`INSTANCES`, `fa2_instance`). A row's
`by_instance` gives each instance's write-back; its one `dram_write_bytes_per_program` is the
rest's.

The split-KV kernel (244-246 registers) and the non-causal d = 256 kernel (254) spill no
stores; the causal d = 256 kernel (255 registers) stores 4.6 kB per program, 2.6 kB of them
missing L1 (spill5), which no row declares yet (a few % of those calls' bytes). The terms are
charged to the kernel named `attn` (the flash2 loop nest's fused kernel) only.
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


EVEN_MN_HEAD_DIM_MAX = 128
"""Is_even_MN is instantiated only up to this head dim (flash_fwd_launch_template.h
run_flash_fwd: `IsEvenMNConst && IsEvenKConst && !Is_local && !ReturnSoftmaxConst &&
Kernel_traits::kHeadDim <= 128`); d = 256 always runs the uneven instance."""


def fa2_instance(n_q: int, n_kv: int, d: int, block_q: int, block_kv: int, causal: bool) -> str:
    """The template instance FA2's launch picks (one of INSTANCES): flash_fwd_launch_template.h
    run_flash_fwd, `is_even_MN = params.cu_seqlens_q == nullptr && params.cu_seqlens_k ==
    nullptr && params.seqlen_k % Kernel_traits::kBlockN == 0 && params.seqlen_q %
    Kernel_traits::kBlockM == 0`, kept only up to EVEN_MN_HEAD_DIM_MAX. Every seen ncu record's
    kernel name carries the same flag (tests/test_spills.py)."""
    even = n_q % block_q == 0 and n_kv % block_kv == 0 and d <= EVEN_MN_HEAD_DIM_MAX
    return ("causal " if causal else "") + ("even" if even else "uneven")


def kernel_instance(kernel: Kernel, dims: Dims) -> str:
    """fa2_instance of a fused forward kernel of the loop nest."""
    kd = kernel_dims(kernel, dims)
    return fa2_instance(int(kd.n_q), int(kd.n_kv), int(dims.d), int(kd.block_q),
                        int(kd.block_kv), bool(kd.causal))


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
    instance = kernel_instance(kernel, dims)
    per_program = row.write_back_per_program(instance)
    dram = programs * per_program
    l2 = blocks * row.l2_store_bytes_per_block
    note = (f"{impl.name}'s register spills: {programs:,} programs × {per_program:,} B of "
            f"local stores missing L1 (its {instance} template instance), written back "
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
