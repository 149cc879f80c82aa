"""Measured kernels of a calibration record, as points for the hierarchical roofline.

A point pairs a kernel's median time (the record's measurements) with ncu's counters for the
same launch (the record's counter rows, matched by id): DRAM bytes (reads and writes, plus the
dirty lines the following L2-evicting read flushed, which the kernel before it left behind)
and L2 bytes (l2_bytes: L2↔SM traffic). The standard path's three kernels share one counter
id ('standard/fp16/n1024/d64'); the fused kernel's id is its measurement's.
"""

from __future__ import annotations

from iosim.calibrate.records import Calibration, CounterRow, Measurement
from iosim.inputs.workload import Workload
from iosim.record import Record

IOSIM_KERNEL = {"qk": ("standard", "qk"), "softmax": ("standard", "softmax"),
                "pv": ("standard", "pv"), "attn_fwd": ("flash2", "attn")}
"""Record kernel → (iosim algorithm, iosim kernel name)."""


class MeasuredKernel(Record):
    """One measured kernel placed on the hierarchical roofline: its time (s), DRAM and L2 bytes
    (None for a kernel timed without counters: an `iosim measure` point recorded without ncu)."""

    algorithm: str
    kernel: str
    """The iosim kernel it measures (AlgorithmEstimate.kernels[...].name)."""
    label: str
    time_s: float
    dram_bytes: float | None
    l2_bytes: float | None
    block_m: int = 0
    block_n: int = 0


def measured_kernels(calibration: Calibration, workload: Workload) -> list[MeasuredKernel]:
    """Every counted kernel of the record at the workload's shape (n, d, batch, heads, causal,
    dtype), forward only; [] when the record has no counters or no such shape."""
    if calibration.counters.status != "ok" or workload.pass_ != "fwd":
        return []
    shape = {"n": workload.n, "d": workload.d, "batch": workload.batch,
             "heads": workload.heads, "causal": workload.causal, "dtype": workload.dtype}
    out = []
    for item in calibration.counters.spec:
        if any(item.get(key, False if key == "causal" else None) != value
               for key, value in shape.items()):
            continue
        rows = calibration.counters.of(item["id"])
        for index, row in enumerate(rows):
            if row.role != "kernel" or row.kernel not in IOSIM_KERNEL:
                continue
            timed = _timing(calibration, row, item["id"], shape)
            if timed is None:
                continue
            algorithm, kernel = IOSIM_KERNEL[row.kernel]
            flushed = rows[index + 1].dram_write_bytes if index + 1 < len(rows) and rows[
                index + 1].role == "evict" else 0.0
            out.append(MeasuredKernel(
                algorithm, kernel, f"{row.kernel} {timed.block_label}".strip(), timed.time_s,
                row.dram_read_bytes + row.dram_write_bytes + flushed, row.l2_bytes,
                timed.block_m, timed.block_n))
    return out


def _timing(calibration: Calibration, row: CounterRow, point_id: str,
            shape: dict[str, object]) -> Measurement | None:
    if row.kernel == "attn_fwd":
        found = [m for m in calibration.measurements if m.id == point_id]
    else:
        found = [m for m in calibration.find(kernel=row.kernel, **shape)
                 if m.variant in ("", "rows")]
    return found[0] if found else None
