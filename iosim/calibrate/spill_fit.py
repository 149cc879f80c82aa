"""The spill rows of an implementation profile (estimates/spills.py) from committed records.

Two measurements make a row (configs/impls/sdpa-flash.yaml `spills`):

* `l2_store_bytes_per_block`: Nsight Compute's local-memory store sectors of the fused forward
  kernel (`l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum`) per program and key block, the
  median over the record's calls of that head-dim row (tests/data/h200-impl-spill5.csv);
* `dram_write_bytes_per_program`: the DRAM writes ncu counted beyond the model's (the spilled
  store sectors that miss L1, written back once) per program, the median over the counted
  calls of that row (tests/data/h200-impl-dram3.csv, h200-impl-dram4.csv);
* `by_instance` (round 12): the same excess per FA2 template instance (Is_causal ×
  Is_even_MN, estimates/spills.py fa2_instance), the median over every seen record's calls of
  that instance (`write_back_by_instance`, benchmarks/spill_instance_fit.py).

No GPU: the records are parsed by benchmarks/impl_dram_h200.py's own readers and passed in.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from iosim.algorithms import get_algorithm
from iosim.algorithms.closedform import Dims
from iosim.estimates.spills import (
    SPILL_TENSOR,
    SPILLING_KERNEL,
    kernel_instance,
    spill_programs_and_blocks,
)
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload

SECTOR_BYTES = 32
"""Bytes of one L1/L2 sector (what ncu's `sectors` metrics count)."""

LOCAL_STORES = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
LOCAL_STORE_HITS = "l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_hit.sum"


def _row_key(impl: Implementation, d: int) -> int | None:
    row = impl.spill_for(d)
    return None if row is None else row.d_max


def _fused(impl: Implementation, w: Workload, hardware: str
           ) -> tuple[int, int, int, str] | None:
    """(programs, key blocks, the model's DRAM write bytes without the spill term, template
    instance) of the call's fused forward kernel, or None where the call runs another loop nest
    (split-KV)."""
    from iosim.analysis.compare import compare

    est = compare(w, hardware, impl=impl.name, profile="measured").algorithms[-1]
    if est.algorithm != "flash2" or est.dram is None:
        return None
    kernel = next(k for k in get_algorithm("flash2").kernels(w, est.tiling)
                  if k.name == SPILLING_KERNEL)
    dims = Dims.of(w, est.tiling)
    programs, blocks = spill_programs_and_blocks(kernel, dims)
    writes = sum(t.bytes for t in est.dram.terms if t.op == "write" and t.tensor != SPILL_TENSOR)
    return programs, blocks, writes, kernel_instance(kernel, dims)


def excess_per_program(impl: Implementation, calls: Iterable[tuple[Workload, int]],
                       hardware: str = "h200") -> dict[tuple[int, str], list[float]]:
    """Per spill row (d_max) and FA2 template instance (spills.fa2_instance): the writes beyond
    the model's per program of each of `calls` (workload, DRAM write bytes ncu counted, residue
    included), in the calls' order."""
    per: dict[tuple[int, str], list[float]] = {}
    for w, counted_write in calls:
        key = _row_key(impl, w.d)
        fused = None if key is None else _fused(impl, w, hardware)
        if key is None or fused is None:
            continue
        programs, _, modelled, instance = fused
        per.setdefault((key, instance), []).append((counted_write - modelled) / programs)
    return per


def write_back_per_program(impl: Implementation, calls: Iterable[tuple[Workload, int]],
                           hardware: str = "h200") -> dict[int, float]:
    """Per spill row (keyed by d_max): the median over `calls` of the writes beyond the
    model's per program, every template instance pooled (the rows' one figure)."""
    pooled: dict[int, list[float]] = {}
    for (d_max, _), values in excess_per_program(impl, calls, hardware).items():
        pooled.setdefault(d_max, []).extend(values)
    return {k: statistics.median(v) for k, v in pooled.items()}


def write_back_by_instance(impl: Implementation, calls: Iterable[tuple[Workload, int]],
                           hardware: str = "h200") -> dict[tuple[int, str], float]:
    """Per spill row and template instance: the median writes beyond the model's per program
    (the rows' `by_instance`)."""
    return {k: statistics.median(v)
            for k, v in excess_per_program(impl, calls, hardware).items()}


def stores_per_block(impl: Implementation, launches: Sequence[tuple[Workload, dict[str, float]]],
                     hardware: str = "h200") -> dict[int, float]:
    """Per spill row: the median local store bytes per program and key block of the fused
    forward kernel's launches (workload, ncu's metrics of its one flash_fwd_kernel launch)."""
    per: dict[int, list[float]] = {}
    for w, metrics in launches:
        key = _row_key(impl, w.d)
        fused = None if key is None or w.n == 1 else _fused(impl, w, hardware)
        if key is None or fused is None:
            continue
        per.setdefault(key, []).append(metrics[LOCAL_STORES] * SECTOR_BYTES / fused[1])
    return {k: statistics.median(v) for k, v in per.items()}
