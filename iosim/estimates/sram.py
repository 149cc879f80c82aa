"""SRAM traffic of a kernel: the third level of the hierarchical roofline.

The convention (stated once, here): the compute reads every tile it works on out of SRAM once
per visit of a block pair, and every tile it writes passes through SRAM once; the score tiles
S_ij and P̃_ij live in registers (FlashAttention-2's kernels keep them there; Alg. 1 lines 9-11
compute them "on chip"), so they add nothing. With that convention a kernel's SRAM bytes are
its L2-oblivious HBM↔SRAM count (every access of the loop nest, as `closed_form` counts it)
plus the re-reads of its resident outer tiles: an outer-loop tile (FlashAttention-2's Q_i,
Alg. 1 line 4 of FA2; FlashAttention's K_j, V_j, Alg. 1 line 6) is loaded once per outer step
but read by the compute at every inner step, i.e. once per visited pair, as an inner tile is.
Whole-tensor kernels (standard attention's Algorithm 0) are library kernels whose tiling iosim
does not model; for them the count is the HBM count, a lower bound.
"""

from __future__ import annotations

from iosim.algorithms import get_algorithm
from iosim.algorithms.closedform import Dims, access_elements, kernel_sums
from iosim.algorithms.loopnest import element_bytes
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import replace


def resident_rereads(kernel_name: str, algorithm: str, workload: Workload,
                     tiling: Tiling | None) -> int:
    """Bytes by which a kernel's SRAM reads exceed its HBM reads: every outer-loop tile it
    reads, read once per visited block pair instead of once per outer step."""
    kernels = get_algorithm(algorithm).kernels(workload, tiling)
    (kernel,) = [k for k in kernels if k.name == kernel_name]
    if kernel.loop is None:
        return 0
    dims = Dims.of(workload, tiling)
    sums = kernel_sums(kernel, dims)
    extra = 0
    for access in kernel.accesses:
        if access.op != "read" or access.where != "outer":
            continue
        per_pair = access_elements(replace(access, where="inner"), kernel, dims, sums)
        once = access_elements(access, kernel, dims, sums)
        extra += int(per_pair - once) * element_bytes(access.element, workload.element_bytes,
                                                      workload.output_element_bytes)
    return extra
