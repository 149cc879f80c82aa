"""The measurement file: what one `iosim calibrate` run measured, as JSON (schema iosim.calibration/1).

A run on the GPU writes it; fitting, the YAML's measured section and the report are computed from
it alone, so they can be re-made (and tested) on a machine without a GPU.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from iosim.calibrate import CalibrationError

SCHEMA = "iosim.calibration/1"

KERNELS = {
    # kernel: (kernel class, algorithm)
    "copy": ("elementwise", None),
    "torch_copy": ("reference", None),
    "read": ("elementwise", None),
    "torch_read": ("reference", None),
    "write": ("elementwise", None),
    "torch_write": ("reference", None),
    "matmul": ("matmul", None),
    "torch_matmul": ("reference", None),
    "qk": ("matmul", "standard"),
    "softmax": ("elementwise", "standard"),
    "pv": ("matmul", "standard"),
    "attn_fwd": ("fused", "flash2"),
    "sdpa_flash": ("reference", None),
}


@dataclass(frozen=True, slots=True)
class Measurement:
    """One kernel timed at one shape and configuration (times are medians over repeats)."""

    id: str
    kernel: str
    dtype: str
    time_s: float
    time_p20_s: float
    time_p80_s: float
    io_bytes: int
    """Bytes of its inputs and outputs, each counted once: Σ numel() · element_size()."""
    flops: int
    """Useful FLOPs by the usual convention (2mnk; attention 4N²d per head, halved if causal)."""
    n: int = 0
    d: int = 0
    batch: int = 0
    heads: int = 0
    causal: bool = False
    size: int = 0
    """Matrix size (m = n = k) of a matmul, or elements of a copy."""
    block_m: int = 0
    block_n: int = 0
    num_warps: int = 0
    num_stages: int = 0
    rel_error: float | None = None
    """‖out − ref‖ / ‖ref‖ of the correctness check made before timing."""
    variant: str = ""
    """Which implementation, where a kernel has several (qk: 'rows' or 'tiles')."""
    regs: int = 0
    """Registers per thread of the compiled kernel (0: not recorded)."""
    shared_bytes: int = 0
    """Shared memory per program of the compiled kernel."""

    @property
    def kind(self) -> str:
        return KERNELS[self.kernel][0]

    @property
    def algorithm(self) -> str | None:
        return KERNELS[self.kernel][1]

    @property
    def block_label(self) -> str:
        if not self.block_m:
            return self.variant
        label = f"{self.block_m}x{self.block_n}/w{self.num_warps}/s{self.num_stages}"
        return f"{self.variant} {label}" if self.variant else label


@dataclass(frozen=True, slots=True)
class CounterRow:
    """ncu's counters for one launch. role 'evict' is the L2-clearing read that follows a
    measured kernel: its DRAM writes are the dirty lines that kernel left in L2."""

    id: str
    kernel: str
    role: str
    dram_read_bytes: float
    dram_write_bytes: float
    l2_bytes: float


@dataclass(frozen=True, slots=True)
class Counters:
    status: str
    """'ok', or why there are none (ncu missing, refused, failed)."""
    command: str = ""
    version: str = ""
    rows: tuple[CounterRow, ...] = ()
    spec: tuple[dict[str, Any], ...] = ()
    """What was launched under ncu (ncu_target's items: shapes, block sizes)."""

    def of(self, point_id: str) -> list[CounterRow]:
        return [r for r in self.rows if r.id == point_id]


@dataclass(frozen=True, slots=True)
class Calibration:
    gpu: str
    """The hardware YAML's name that the run was for."""
    command: str
    created: str
    quick: bool
    device: dict[str, Any]
    """GPU name, SMs, L2, memory, driver, CUDA, torch, Triton, Python versions, as found."""
    measurements: tuple[Measurement, ...]
    counters: Counters = field(default_factory=lambda: Counters("not requested (no --counters)"))
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "gpu": self.gpu,
            "command": self.command,
            "created": self.created,
            "quick": self.quick,
            "device": self.device,
            "notes": list(self.notes),
            "measurements": [asdict(m) for m in self.measurements],
            "counters": {"status": self.counters.status, "command": self.counters.command,
                         "version": self.counters.version,
                         "spec": list(self.counters.spec),
                         "rows": [asdict(r) for r in self.counters.rows]},
        }

    def find(self, **match: Any) -> list[Measurement]:
        return [m for m in self.measurements
                if all(getattr(m, key) == value for key, value in match.items())]


def _build(cls: Any, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise CalibrationError(f"{where}: expected a mapping")
    names = {f.name for f in fields(cls)}
    unknown = set(raw) - names
    if unknown:
        raise CalibrationError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    try:
        return cls(**raw)
    except TypeError as exc:
        raise CalibrationError(f"{where}: {exc}") from None


def calibration_from_dict(raw: Any, where: str = "measurement file") -> Calibration:
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        got = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise CalibrationError(f"{where}: not an iosim measurement file (schema {got!r}, "
                               f"expected {SCHEMA!r})")
    measurements = []
    for i, m in enumerate(raw.get("measurements", [])):
        item = _build(Measurement, m, f"{where}: measurements[{i}]")
        if item.kernel not in KERNELS:
            raise CalibrationError(f"{where}: measurements[{i}]: unknown kernel {item.kernel!r}")
        measurements.append(item)
    counters_raw = raw.get("counters") or {"status": "not recorded"}
    rows = tuple(_build(CounterRow, r, f"{where}: counters.rows[{i}]")
                 for i, r in enumerate(counters_raw.get("rows", [])))
    counters = Counters(str(counters_raw.get("status", "")), str(counters_raw.get("command", "")),
                        str(counters_raw.get("version", "")), rows,
                        tuple(dict(item) for item in counters_raw.get("spec", ())))
    try:
        return Calibration(gpu=str(raw["gpu"]), command=str(raw["command"]),
                           created=str(raw["created"]), quick=bool(raw["quick"]),
                           device=dict(raw["device"]), measurements=tuple(measurements),
                           counters=counters, notes=tuple(raw.get("notes", ())))
    except KeyError as exc:
        raise CalibrationError(f"{where}: missing key {exc.args[0]!r}") from None


def load_calibration(path: str | Path) -> Calibration:
    file = Path(path)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CalibrationError(f"cannot read measurement file {file} ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{file}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return calibration_from_dict(raw, str(file))


def save_calibration(calibration: Calibration, path: str | Path) -> None:
    Path(path).write_text(json.dumps(calibration.to_dict(), indent=1) + "\n", encoding="utf-8")
