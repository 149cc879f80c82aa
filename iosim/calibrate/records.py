"""The measurement file: what one `iosim calibrate` run measured, as JSON (schema iosim.calibration/1).

A run on the GPU writes it; fitting, the YAML's measured section and the report are computed from
it alone, so they can be re-made (and tested) on a machine without a GPU.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iosim.calibrate import CalibrationError
from iosim.inputs.excerpts import clip, excerpt
from iosim.record import Record, asdict, field, fields

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


class Measurement(Record):
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
        """The kernel class the fit gives it (elementwise, matmul, fused)."""
        return KERNELS[self.kernel][0]

    @property
    def algorithm(self) -> str | None:
        """The iosim algorithm whose kernel it measures, or None for a ceiling."""
        return KERNELS[self.kernel][1]

    @property
    def block_label(self) -> str:
        """The tile configuration as a label ("128x64/w8/s3"), or the variant where there is none."""
        if not self.block_m:
            return self.variant
        label = f"{self.block_m}x{self.block_n}/w{self.num_warps}/s{self.num_stages}"
        return f"{self.variant} {label}" if self.variant else label


class CounterRow(Record):
    """ncu's counters for one launch. role 'evict' is the L2-clearing read that follows a
    measured kernel: its DRAM writes are the dirty lines that kernel left in L2."""

    id: str
    kernel: str
    role: str
    dram_read_bytes: float
    dram_write_bytes: float
    l2_bytes: float


class Counters(Record):
    """What ncu counted in a run: its status, command and version, the rows and what was launched."""

    status: str
    """'ok', or why there are none (ncu missing, refused, failed)."""
    command: str = ""
    version: str = ""
    rows: tuple[CounterRow, ...] = ()
    spec: tuple[dict[str, Any], ...] = ()
    """What was launched under ncu (ncu_target's items: shapes, block sizes)."""

    def of(self, point_id: str) -> list[CounterRow]:
        """The counter rows of one point."""
        return [r for r in self.rows if r.id == point_id]


class Calibration(Record):
    """One measurement file: the GPU it is for, the device and software, the command, the time,
    every measurement and the ncu counters."""

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
        """The file's JSON (schema iosim.calibration/1)."""
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
        """The measurements whose fields equal every `match` value."""
        return [m for m in self.measurements
                if all(getattr(m, key) == value for key, value in match.items())]


def _build(cls: Any, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise CalibrationError(f"{where}: expected a mapping")
    names = {f.name for f in fields(cls)}
    unknown = set(raw) - names
    if unknown:
        raise CalibrationError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    for f in fields(cls):
        if f.name in raw:
            problem = _field_problem(str(f.type), f.name, raw[f.name])
            if problem:
                raise CalibrationError(f"{where}.{f.name}: {problem}")
    try:
        return cls(**raw)
    except TypeError as exc:
        raise CalibrationError(f"{where}: {exc}") from None


def _field_problem(kind: str, name: str, value: Any) -> str | None:
    """Why a recorded value does not fit its field's type (None if it does): numbers finite,
    counts whole and within int64, times positive."""
    if kind == "str":
        return None if isinstance(value, str) else f"must be text, got {excerpt(value)}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"must be true or false, got {excerpt(value)}"
    optional = kind.endswith("| None")
    if value is None:
        return None if optional else f"must be a number, got {excerpt(value)}"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            return f"must be a whole number from 0 to 2^63, got {excerpt(value)}"
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"must be a finite number, got {excerpt(value)}"
    if name.endswith("_s") and not MIN_RECORDED_TIME_S <= value < 1e6:
        return f"must be a time in seconds in [10^-9, 10^6), got {excerpt(value)}"
    if name == "rel_error" and value < 0:
        return f"must be a relative error ‖out − ref‖/‖ref‖ of at least 0, got {excerpt(value)}"
    return None


CHECK_TOLERANCE = {"fp16": 2e-3, "bf16": 1e-2, "fp32": 1e-5}
"""The largest relative error ‖out − ref‖/‖ref‖ a calibration kernel may have against torch
before it is timed: fp16 and bf16 operands with fp32 accumulation (METHOD: bf16 between 1e-3
and 1e-2; fp16 carries 3 more mantissa bits). The run refuses to time a kernel above it
(bench.require_close), and a record read back refuses a point above it: a wrong kernel's time
fitted as an efficiency (hostile9 leftover 3: rel_error 0.5 was fitted). The keys are the
dtypes a calibration runs."""


def _check_problem(m: Measurement) -> str | None:
    """Why a measurement's dtype or correctness check rules it out of a fit, or None."""
    if m.dtype not in CHECK_TOLERANCE:
        return (f"dtype {excerpt(m.dtype)} is not one a calibration runs "
                f"({', '.join(CHECK_TOLERANCE)})")
    tolerance = CHECK_TOLERANCE[m.dtype]
    if m.rel_error is not None and m.rel_error > tolerance:
        return (f"rel_error {m.rel_error:.3g} is over the {tolerance:g} a {m.dtype} kernel must "
                f"meet before it is timed: it computed wrongly, and its time is no efficiency; "
                f"drop the point or record it again with iosim calibrate")
    return None


MIN_RECORDED_TIME_S = 1e-9
"""The shortest time a record may hold: no kernel runs in under a nanosecond (CUDA's event
timer resolves about half a microsecond; the shortest time in tests/data's calibration records
is 122 µs). A time of 1e-320 s passed (0, 10^6) and fitted an HBM bandwidth of inf."""


_TEXT_FIELDS = ("gpu", "command", "created")
"""The record's top-level text fields (str() took a number or a list for one)."""


def _check_header(raw: dict[str, Any], counters: dict[str, Any], where: str) -> None:
    """The fields around the measurements: text that is text, `quick` a bool (bool("no") was
    True), the counters' status, command and version text and its spec a list of mappings (an
    int there was a TypeError), the device's figures text or numbers, notes a list of text."""
    for key in _TEXT_FIELDS:
        if key in raw and not isinstance(raw[key], str):
            raise CalibrationError(f"{where}: {key} must be text, got {excerpt(raw[key])}")
    if "quick" in raw and not isinstance(raw["quick"], bool):
        raise CalibrationError(f"{where}: quick must be true or false, got {excerpt(raw['quick'])}")
    for key in ("status", "command", "version"):
        if key in counters and not isinstance(counters[key], str):
            raise CalibrationError(f"{where}: counters.{key} must be text, got "
                                   f"{excerpt(counters[key])}")
    spec = counters.get("spec", [])
    if not isinstance(spec, list) or not all(isinstance(x, dict) for x in spec):
        raise CalibrationError(f"{where}: counters.spec must be a list of mappings, got "
                               f"{excerpt(spec)}")
    device = raw.get("device", {})
    for key, value in (device.items() if isinstance(device, dict) else ()):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or (
                isinstance(value, float) and not math.isfinite(value)):
            raise CalibrationError(f"{where}: device.{clip(key)} must be text or a number (it "
                                   f"is the provenance the YAML records), got {excerpt(value)}")
    notes = raw.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(x, str) for x in notes):
        raise CalibrationError(f"{where}: notes must be a list of text, got {excerpt(notes)}")


def calibration_from_dict(raw: Any, where: str = "measurement file") -> Calibration:
    """A Calibration from its JSON, checked; CalibrationError naming `where` when it is not one."""
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        got = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise CalibrationError(f"{where}: not an iosim measurement file (schema {got!r}, "
                               f"expected {SCHEMA!r})")
    measurements = []
    if not isinstance(raw.get("measurements", []), list):
        raise CalibrationError(f"{where}: measurements must be a list")
    for i, m in enumerate(raw.get("measurements", [])):
        item = _build(Measurement, m, f"{where}: measurements[{i}]")
        if item.kernel not in KERNELS:
            raise CalibrationError(f"{where}: measurements[{i}]: unknown kernel {item.kernel!r}")
        problem = _check_problem(item)
        if problem is not None:
            raise CalibrationError(f"{where}: measurements[{i}] ({clip(item.id)}): {problem}")
        measurements.append(item)
    counters_raw = raw.get("counters") or {"status": "not recorded"}
    for key, kind in (("device", dict), ("notes", list), ("measurements", list),
                      ("counters", dict)):
        if key in raw and not (isinstance(raw[key], kind) or (key == "counters" and raw[key] is None)):
            raise CalibrationError(f"{where}: {key} must be a {'mapping' if kind is dict else 'list'}"
                                   f", got {excerpt(raw[key])}")
    if not isinstance(counters_raw, dict) or not isinstance(counters_raw.get("rows", []), list):
        raise CalibrationError(f"{where}: counters must be a mapping with a list of rows")
    _check_header(raw, counters_raw, where)
    rows = tuple(_build(CounterRow, r, f"{where}: counters.rows[{i}]")
                 for i, r in enumerate(counters_raw.get("rows", [])))
    counters = Counters(str(counters_raw.get("status", "")), str(counters_raw.get("command", "")),
                        str(counters_raw.get("version", "")), rows,
                        tuple(dict(item) for item in counters_raw.get("spec", ())))
    if not isinstance(raw.get("device", {}), dict):
        raise CalibrationError(f"{where}: device must be a mapping")
    try:
        return Calibration(gpu=str(raw["gpu"]), command=str(raw["command"]),
                           created=str(raw["created"]), quick=bool(raw["quick"]),
                           device=dict(raw["device"]), measurements=tuple(measurements),
                           counters=counters, notes=tuple(raw.get("notes", ())))
    except KeyError as exc:
        raise CalibrationError(f"{where}: missing key {exc.args[0]!r}") from None


MAX_RECORD_BYTES = 16 << 20
"""A measurement file larger than 16 MiB is refused unread (a full H200 run is ~0.5 MiB)."""


def record_text(path: Path, kind: str, size: str) -> str:
    """A record file's text, read bounded as every record is: at most MAX_RECORD_BYTES, UTF-8;
    else one CalibrationError naming the file (`kind`: what it should be, "a measurement file";
    `size`: what such a file usually weighs, said when it is too large)."""
    from iosim.inputs.input_files import FileTextError, read_text_capped

    try:
        text = read_text_capped(path, MAX_RECORD_BYTES)
    except FileTextError as exc:
        size = f"; {kind} is {size}" if exc.too_large else ""
        raise CalibrationError(f"{path}: {exc.problem}{size}") from None
    if not text.strip():
        raise CalibrationError(f"{path} is empty and holds no measured points; give the file "
                               f"an iosim command recorded")
    return text


def finite_json(path: Path) -> Callable[[str], Any]:
    """json.loads for a record: NaN and Infinity refused (a measurement is a finite number),
    naming the file; JSONDecodeError and RecursionError are the caller's to word."""
    def refuse_constant(name: str) -> Any:
        raise CalibrationError(f"{path}: {name} is not a measurement; every number must be "
                               f"finite")

    def refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) < len(pairs):  # json keeps the last silently: which one was measured?
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise CalibrationError(f"{path}: the key {clip(key)!r} appears twice in "
                                           f"one object; keep one")
                seen.add(key)
        return out

    return lambda text: json.loads(text, parse_constant=refuse_constant,
                                   object_pairs_hook=refuse_duplicates)


def load_calibration(path: str | Path) -> Calibration:
    """Read and check a measurement file."""
    file = Path(path)
    text = record_text(file, "a measurement file", "a few hundred KiB")
    try:
        raw = finite_json(file)(text)
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{file}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise CalibrationError(f"{file}: nested too deeply to be a measurement file") from None
    return calibration_from_dict(raw, str(file))


def save_calibration(calibration: Calibration, path: str | Path) -> None:
    """Write a measurement file (JSON)."""
    from iosim.output.files import write_text_atomically

    write_text_atomically(Path(path), json.dumps(calibration.to_dict(), indent=1) + "\n")
