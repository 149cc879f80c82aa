"""estimates/l2.py's closed form of a list of whole-tensor kernels (standard attention's QKᵀ,
softmax and PV: no loop, one stream each) at many points at once, as int64 arrays: what a
measured sweep charges the standard baseline (analysis/sweep_split_dram.py), in place of
dram_estimate point by point.

Nothing here is a rule of its own: it is _ClosedForm.run's path for such kernels, on arrays,
with the functions it calls — each tensor's size (loopnest.tensor_bytes), each kernel's
footprint (l2_model.copies_in_l2), what an earlier kernel left in L2 (l2_model.hit_fraction,
or l2_handover.gemm_hit_fraction where a GEMM re-reads it: gemm_reads_carried), a read costing
what misses, a write its size less what merges with dirty lines, once per tensor, each capped
at the L2-oblivious count (closedform.access_elements). The lists it covers (`covered`) take
no other branch of run: no loop, no split, every kernel modelled, no FP8 scale and no
broadcast tensor, no mask; dram_estimate's later rules (shared_prefix_dram, launch_order_dram)
only change split kernels. tests/test_sweep_split_dram.py holds every field of a sweep equal
with the arrays on and off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms.closedform import Dims, access_elements, kernel_sums
from iosim.algorithms.loopnest import Kernel, element_bytes, tensor_bytes
from iosim.analysis.split_choice_grid import vectorised
from iosim.estimates.l2_handover import gemm_hit_fraction, gemm_reads_carried
from iosim.estimates.l2_model import copies_in_l2, hit_fraction, modelled
from iosim.inputs.workload import Workload


def covered(kernels: Sequence[Kernel], workload: Workload) -> bool:
    """Whether `whole_tensor_terms` counts this list at this point (the module docstring)."""
    return vectorised(workload) and all(
        k.loop is None and not k.split and modelled(k)
        and not any(a.scale or a.broadcast for a in k.accesses) for k in kernels)


def whole_tensor_terms(kernels: Sequence[Kernel], a: Any, packing: str,
                       capacity: float) -> dict[str, list[Any]]:
    """Each kernel's DRAM bytes per access (in its accesses' order) at every point of `a`
    (split_choice_grid._arrays: the workloads' fields as (points, 1) columns)."""
    dims = Dims(a.n, a.n_kv, a.d, a.batch, a.heads, a.kv_heads, a.element_bytes, a.n, a.n_kv,
                a.causal, 1, 1, 1, None, None, a.d_v, a.output_element_bytes,
                page_size=a.page_size, window=None, seqlens=None, packing=packing)
    footprint = [_footprint(k, a) for k in kernels]
    # each tensor's last toucher: (kernel index, dirty at each point)
    last: dict[str, tuple[int, Any]] = {}
    out: dict[str, list[Any]] = {}
    for index, kernel in enumerate(kernels):
        sums = kernel_sums(kernel, dims)
        carried = {x.tensor: _carried(kernels, footprint, last, x.tensor, index, capacity)
                   for x in kernel.accesses}
        written: set[str] = set()
        terms = []
        for x in kernel.accesses:
            moved = access_elements(x, kernel, dims, sums) * element_bytes(
                x.element, a.element_bytes, a.output_element_bytes)
            size = tensor_bytes(x, a, per_head=False)
            hit, dirty = carried[x.tensor]
            if x.op == "write":
                if x.tensor in written:
                    dram: Any = 0
                else:
                    dram = np.rint(size * (1 - np.where(dirty, hit, 0.0))).astype(np.int64)
                written.add(x.tensor)
            else:
                dram = np.rint(size * (1 - hit)).astype(np.int64)
            terms.append(np.minimum(dram, moved))
        out[kernel.name] = terms
        for x in kernel.accesses:
            previous = last.get(x.tensor)
            stays_dirty = (False if previous is None
                           else previous[1] & (np.asarray(carried[x.tensor][0]) > 0))
            last[x.tensor] = (index, (x.op == "write") | stays_dirty)
    return out


def _footprint(kernel: Kernel, a: Any) -> Any:
    """l2.py _ClosedForm._footprint: the distinct bytes a kernel touches."""
    seen: dict[str, Any] = {}
    for x in kernel.accesses:
        seen[x.tensor] = np.maximum(seen.get(x.tensor, 0),
                                    tensor_bytes(x, a, per_head=False) * copies_in_l2(kernel, x))
    return sum(seen.values())


def _carried(kernels: Sequence[Kernel], footprint: list[Any], last: dict[str, tuple[int, Any]],
             tensor: str, index: int, capacity: float) -> tuple[Any, Any]:
    """l2.py _ClosedForm._carried: (the share of `tensor` still in L2 when kernel `index`
    streams it, whether dirty), at every point; a whole-tensor kernel's first pass is all of
    its footprint (_first_pass)."""
    touch = last.get(tensor)
    if touch is None:
        return 0.0, False
    earlier, dirty = touch
    between = sum(footprint[earlier + 1:index])
    alpha = footprint[earlier] + between
    beta = footprint[index] - footprint[earlier]
    if gemm_reads_carried(kernels[index], kernels[earlier]):
        return gemm_hit_fraction(alpha, beta, capacity), dirty
    return hit_fraction(alpha, beta, capacity), dirty
