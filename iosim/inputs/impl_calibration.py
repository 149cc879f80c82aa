"""`measured.impls` of a GPU YAML: each implementation's fitted figures on that GPU, read strictly.

An implementation is not a GPU: its traits live in configs/impls/NAME.yaml, what it reaches on a
given GPU (efficiencies, host time per call, its backward's schedule) in that GPU's YAML, keyed
by the implementation's name, where `iosim calibrate --impl` writes them.
"""

from __future__ import annotations

from typing import Any

from iosim.errors import ConfigError, IosimError
from iosim.inputs.hardware import Hardware, ImplCalibration
from iosim.inputs.limits import excerpt
from iosim.inputs.safe_yaml import refuse_unknown_keys
from iosim.record import replace

ENTRY_KEYS = {"efficiency", "call_overhead_s", "backward", "source"}
EFFICIENCY_KINDS = ("fused", "matmul", "elementwise", "memory")
BACKWARD_BOUNDS = {"efficiency": (0.0, 1.5), "program_overhead_s": (0.0, 1e-3),
                   "call_overhead_s": (0.0, 0.01)}
"""(low, high) of each backward figure: efficiency in (0, 1.5], the seconds in [low, high)."""
MAX_CALL_OVERHEAD_S = 0.01


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _mapping(path: str, key: str, raw: Any, allowed: set[str] | tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError(path, key, "expected a mapping")
    refuse_unknown_keys(path, key, raw, allowed)
    return raw


def _source(path: str, key: str, raw: dict[str, Any]) -> str:
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source", "missing; say what it was fitted on (command, "
                          "record, device)")
    return source.strip()


def load_impl_calibrations(path: str, raw: Any) -> dict[str, ImplCalibration]:
    """`measured.impls`: {NAME: {efficiency: {kind: e}, call_overhead_s, source, backward}}."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(path, "measured.impls", "expected a mapping implementation name -> "
                          "its fitted figures")
    out: dict[str, ImplCalibration] = {}
    for name, entry in raw.items():
        key = f"measured.impls.{name[:40] if isinstance(name, str) else excerpt(name, 40)}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(path, key, "an implementation's name must be text")
        m = _mapping(path, key, entry, ENTRY_KEYS)
        eff = _mapping(path, f"{key}.efficiency", m.get("efficiency"), EFFICIENCY_KINDS)
        if not eff:
            raise ConfigError(path, f"{key}.efficiency", "missing; give at least one of "
                              f"{', '.join(EFFICIENCY_KINDS)}")
        for kind, value in eff.items():
            if not _number(value) or not 0 < value <= 1.5:
                raise ConfigError(path, f"{key}.efficiency.{kind}",
                                  f"must be a number in (0, 1.5], got {excerpt(value)}")
        overhead = m.get("call_overhead_s")
        if overhead is not None and (not _number(overhead)
                                     or not 0 <= overhead < MAX_CALL_OVERHEAD_S):
            raise ConfigError(path, f"{key}.call_overhead_s",
                              f"must be seconds in [0, {MAX_CALL_OVERHEAD_S:g}), got "
                              f"{excerpt(overhead)}")
        backward, backward_source = _backward(path, f"{key}.backward", m.get("backward"))
        out[name] = ImplCalibration({k: float(v) for k, v in eff.items()}, _source(path, key, m),
                                    None if overhead is None else float(overhead), backward,
                                    backward_source)
    return out


def _backward(path: str, key: str, raw: Any) -> tuple[dict[str, float], str]:
    """`backward`: the fused backward kernel's schedule (efficiency and overhead per program,
    estimates/schedule.py) and the host time of one backward call."""
    if raw is None:
        return {}, ""
    m = _mapping(path, key, raw, {*BACKWARD_BOUNDS, "source"})
    out = {}
    for name, (lo, hi) in BACKWARD_BOUNDS.items():
        value: Any = m.get(name)
        if not _number(value):
            raise ConfigError(path, f"{key}.{name}", f"missing or not a number (got "
                              f"{excerpt(value)})")
        inside = lo < value <= hi if name == "efficiency" else lo <= value < hi
        if not inside:
            low, high = ("(", "]") if name == "efficiency" else ("[", ")")
            raise ConfigError(path, f"{key}.{name}",
                              f"must be in {low}{lo:g}, {hi:g}{high}, got {excerpt(value)}")
        out[name] = float(value)
    return out, _source(path, key, m)


def with_impl_calibration(hardware: Hardware, name: str, fitted: ImplCalibration) -> Hardware:
    """`hardware` with `fitted` as implementation `name`'s entry of measured.impls (what a fit
    predicts with before anything is written)."""
    if hardware.measured is None:
        raise IosimError(f"{hardware.path} has no measured section; run `iosim calibrate --gpu "
                         f"{hardware.name}` first (an implementation's fit is relative to the "
                         f"GPU's measured ceilings)")
    impls = {**hardware.measured.impls, name: fitted}
    return replace(hardware, measured=replace(hardware.measured, impls=impls))
