"""Which of torch's softmax kernels an eager pipeline's `s.softmax(-1)` runs, by row length.

torch's CUDA softmax over the last dimension (aten/src/ATen/native/cuda/SoftMax.cu, host_softmax
with inner_size 1, torch 2.11) picks one of four kernels from the row length `dim` (N_kv here)
and the element size:

- `softmax_warp_forward` (PersistentSoftmax.cuh, one warp a row) when dim <= 2048 and
  dim × element size <= 8192 bytes;
- else a block of SoftMaxForward_getBlockSize(dim) = 1024 threads a row, and
  `cunn_SoftMaxForwardReg<reg_cnt>` (the row held in registers) when reg_cnt =
  ceil(dim / 1024) < 10;
- else `cunn_SoftMaxForwardSmem` (the row staged in shared memory) when the row fits in the
  block's 48 KiB of shared memory beside the reduction's (1024 / 32) fp32 partials and dim is a
  multiple of ILP = 16 bytes / element size (the pointers are aligned: fresh tensors);
- else `cunn_SoftMaxForward` (the row read from memory twice).

The H200 records name every one at exactly these boundaries (tests/data/h200-impl-*.json,
torch-naive's kernel lists: warp up to N_kv 2,048, Reg from 2,176 to 9,216, Smem from 9,728 to
22,528, the plain kernel from 24,576 and at 9,999, not a multiple of 8), and each streams its
bytes at its own rate (0.8-1.3 TB/s Reg, 1.3-2.6 warp, 1.4-2.3 Smem, 1.6-2.6 plain), so each has
its own fitted memory efficiency (`memory_softmax_<kernel>`, calibrate/impl_fit.py).
"""

from __future__ import annotations

from iosim.estimates.roofline import Roofs
from iosim.inputs.ints import cdiv
from iosim.record import replace

SOFTMAX_KERNELS = ("warp", "reg", "smem", "block")
"""softmax_warp_forward, cunn_SoftMaxForwardReg, cunn_SoftMaxForwardSmem, cunn_SoftMaxForward."""

WARP_MAX_DIM = 2048
WARP_MAX_ROW_BYTES = 8192
BLOCK_THREADS = 1024
"""SoftMaxForward_getBlockSize: min(dim, 1024 max threads), rounded up to a warp: 1024 here."""
MAX_REGISTER_COUNT = 10
"""cunn_SoftMaxForwardReg runs while potential_register_count(dim, 1024) < 10."""
SHARED_BYTES = 48 * 1024
"""sharedMemPerBlock without opt-in, what host_softmax sizes max_elements_per_smem by."""
REDUCTION_BYTES = BLOCK_THREADS // 32 * 4
"""smem_reduction_sz: one fp32 partial per warp of the block."""
VECTOR_BYTES = 16
"""ILP = sizeof(float4) / element size."""


def softmax_kernel(row: int, element_bytes: int) -> str:
    """The kernel (SOFTMAX_KERNELS) torch runs for a softmax over rows of `row` elements."""
    if row <= WARP_MAX_DIM and row * element_bytes <= WARP_MAX_ROW_BYTES:
        return "warp"
    if cdiv(row, BLOCK_THREADS) < MAX_REGISTER_COUNT:
        return "reg"
    fits = row < (SHARED_BYTES - REDUCTION_BYTES) // element_bytes
    if fits and row % (VECTOR_BYTES // element_bytes) == 0:
        return "smem"
    return "block"


def with_softmax_kernel(roofs: Roofs, row: int, element_bytes: int) -> Roofs:
    """The roofs with the softmax kernel's memory efficiency that of the kernel torch picks for
    this row length, where the implementation's fit has one (`softmax_<kernel>`)."""
    own = roofs.kernel_memory_efficiency.get(f"softmax_{softmax_kernel(row, element_bytes)}")
    if own is None:
        return roofs
    return replace(roofs, kernel_memory_efficiency={**roofs.kernel_memory_efficiency,
                                                    "softmax": own})
