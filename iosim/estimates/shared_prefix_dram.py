"""DRAM bytes of split-KV over a shared-prefix batch: the shared prefix comes from DRAM once.

Split-KV over each request's full KV (algorithms/segments.py) loads every request's copy of the
L prefix keys: B·L rows per KV head, which the exact count charges. But a shared-prefix cache
holds the prefix once — its pages are shared by every request's block table (vLLM's prefix
caching, SGLang's radix cache) — and programs that run together load the same rows, so all but
the first load hit L2. The DRAM estimate therefore charges the prefix once instead of B times,
for K and V of a ragged split-KV launch:

    DRAM(K) = L2-oblivious(K) − (B − 1) · L · d · kv_heads · bytes,  V likewise with d_v.

Where the prefix outgrows the L2 and the grid runs in many waves, later waves fetch it again:
the rule then undercounts (the H200 batch of 32 requests over a 16k prefix, 4,096 programs:
5.3× more DRAM bytes than the rule's). A wave-by-wave refinement fitted these same ten batches
worse (6 of 10 within ±10 %), so the simple rule stands until data apart from them judges one.

Measured on the H200 (tests/data/h200-variants.json, benchmarks/decode_choices_h200.py: ncu
DRAM bytes of a Triton split-KV kernel over a paged shared-prefix cache, 10 batches): the
L2-oblivious count was 1.07 to 32 times the DRAM bytes (median 2.2); this rule's estimate is
within ±10 % on 8 of the 10. The rule stands apart from the L2 model (l2.py, which leaves
split-KV at its L2-oblivious count): it is a property of the cache's layout, not of the tiles.
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms.loopnest import Kernel
from iosim.estimates.l2_model import DramTerm
from iosim.inputs.workload import Workload
from iosim.record import replace

NOTE = "shared prefix: its pages come from DRAM once, not once per request"


def prefix_once(terms: Sequence[DramTerm], kernels: Sequence[Kernel],
                workload: Workload) -> tuple[DramTerm, ...]:
    """`terms` with the duplicate prefix reads of each ragged split-KV kernel's K and V taken
    off (unchanged for any other workload or kernel)."""
    if workload.prefix_len is None or workload.batch < 2:
        return tuple(terms)
    width = {"K": workload.d, "V": workload.d_v}
    row = workload.prefix_len * workload.kv_heads * workload.element_bytes
    ragged_split = {k.name for k in kernels if k.segments and k.split}
    out = []
    for t in terms:
        if t.kernel in ragged_split and t.tensor in width and t.op == "read":
            duplicate = (workload.batch - 1) * row * width[t.tensor]
            t = replace(t, bytes=max(0, t.bytes - duplicate), note=NOTE)
        out.append(t)
    return tuple(out)
