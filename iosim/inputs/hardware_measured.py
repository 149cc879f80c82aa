"""`measured:` of a GPU YAML: the figures and fits of one GPU's measured profile
(--profile measured), each read strictly with the file and key named in what it refuses."""

from __future__ import annotations

from typing import Any

from iosim.errors import ConfigError
from iosim.inputs.excerpts import clip, excerpt
from iosim.inputs.hardware import (
    FP8_CAUSAL_KEY,
    KERNEL_KINDS,
    Alg4Time,
    BackwardSchedule,
    DecodeFit,
    Figure,
    MeasuredProfile,
    MlaPrefillTime,
)
from iosim.inputs.hardware_figures import read_figure, read_peak_figures
from iosim.inputs.limits import (
    ALG4_PROGRAM_GB_PER_S,
    ALG4_SHARED_SM_SLOWDOWN,
    ALG4_SOLO_TFLOPS,
    MAX_HEAD_DIM,
    MAX_PAGE_SIZE,
    MAX_PROGRAMS_PER_SM,
    MLA_PREFILL_SCALE,
    MLA_PREFILL_US,
    check_fp8_causal_share,
)
from iosim.inputs.safe_yaml import refuse_unknown_keys, yaml_kind

_MEASURED_KEYS = {"provenance", "hbm_bandwidth", "peak_flops", "vector_flops", "kernel_efficiency",
                  "backward_schedule", "paged_kv_efficiency", "impls", "l2_bandwidth",
                  "launch_overhead", "decode_fit", "alg4_time", "mla_prefill_time"}
_PAGED_KEYS = {"source", "by_page_size"}
_SCHEDULE_KEYS = {"efficiency", "program_overhead_us", "programs_per_sm", "source",
                  "causal_loops"}


def read_measured(path: str, raw: Any) -> MeasuredProfile:
    """`measured:` of the GPU YAML at `path`: its provenance, figures and fits."""
    if not isinstance(raw, dict):
        raise ConfigError(path, "measured", "expected a mapping")
    refuse_unknown_keys(path, "measured", raw, _MEASURED_KEYS)
    provenance = raw.get("provenance")
    if not isinstance(provenance, str) or not provenance.strip():
        raise ConfigError(path, "measured.provenance",
                          "missing; say how the figures were measured (command, device, date)")
    figures: dict[str, Figure] = {}
    bandwidth = None
    if "hbm_bandwidth" in raw:
        figures["hbm_bandwidth"] = read_figure(path, "measured.hbm_bandwidth",
                                               raw["hbm_bandwidth"], "bytes_per_s")
        bandwidth = figures["hbm_bandwidth"].value
    peaks = read_peak_figures(path, "measured.peak_flops", raw.get("peak_flops", {}),
                              required=False, extra=(FP8_CAUSAL_KEY,))
    figures.update({f"peak_flops.{k}": v for k, v in peaks.items()})
    fp8_causal = _fp8_causal(path, peaks)
    vector = None
    if "vector_flops" in raw:
        figures["vector_flops"] = read_figure(path, "measured.vector_flops",
                                              raw["vector_flops"], "flops_per_s")
        vector = figures["vector_flops"].value
    efficiency_raw = raw.get("kernel_efficiency", {})
    if not isinstance(efficiency_raw, dict):
        raise ConfigError(path, "measured.kernel_efficiency", "expected a mapping kind -> fraction")
    efficiency: dict[str, float] = {}
    for kind, value in efficiency_raw.items():
        key = f"measured.kernel_efficiency.{clip(kind)}"
        if kind not in KERNEL_KINDS:
            raise ConfigError(path, key, f"unknown kernel class; allowed: {', '.join(KERNEL_KINDS)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1.5:
            raise ConfigError(path, key, f"must be a number in (0, 1.5], got {yaml_kind(value)}")
        efficiency[kind] = float(value)
    schedule = None
    if "backward_schedule" in raw:
        schedule = _schedule(path, raw["backward_schedule"])
    paged, paged_source = _paged(path, raw.get("paged_kv_efficiency"))
    l2 = None
    if "l2_bandwidth" in raw:
        figures["l2_bandwidth"] = read_figure(path, "measured.l2_bandwidth",
                                              raw["l2_bandwidth"], "bytes_per_s")
        l2 = figures["l2_bandwidth"].value
    launch = _launch_overhead(path, raw.get("launch_overhead"))
    fit = _decode_fit(path, raw.get("decode_fit"))
    alg4 = _alg4_time(path, raw.get("alg4_time"))
    mla_prefill = _mla_prefill_time(path, raw.get("mla_prefill_time"))
    from iosim.inputs.impl_calibration import load_impl_calibrations  # a measured profile's

    return MeasuredProfile(provenance.strip(), bandwidth,
                           {k: v.value for k, v in peaks.items()}, efficiency, figures, vector,
                           schedule, paged, paged_source,
                           load_impl_calibrations(path, raw.get("impls")),
                           l2_bandwidth_bytes_per_s=l2, launch_overhead_s=launch,
                           decode_fit=fit, alg4_time=alg4, mla_prefill_time=mla_prefill,
                           fp8_causal_flops_per_s=fp8_causal)


def _fp8_causal(path: str, peaks: dict[str, Figure]) -> float | None:
    """measured.peak_flops.fp8_causal (taken out of `peaks`, whose keys stay dtypes): the FP8
    matmul rate of a causal kernel, beside fp8's for a non-causal one (roofline.roofs_for)."""
    figure = peaks.pop(FP8_CAUSAL_KEY, None)
    if figure is None:
        return None
    key = f"measured.peak_flops.{FP8_CAUSAL_KEY}"
    if "fp8" not in peaks:
        raise ConfigError(path, key, "needs measured.peak_flops.fp8 (the non-causal FP8 rate) "
                                     "beside it; add that figure or drop this one")
    problem = check_fp8_causal_share(figure.value, peaks["fp8"].value)
    if problem is not None:
        raise ConfigError(path, f"{key}.value", problem)
    return figure.value


def _decode_fit(path: str, raw: Any) -> DecodeFit | None:
    """measured.decode_fit: {ramp_us: microseconds, efficiency: fraction, block_us:
    microseconds (optional), source: text}."""
    key = "measured.decode_fit"
    if raw is None:
        return None
    if not isinstance(raw, dict) or not {"ramp_us", "efficiency", "source"} <= set(raw) or (
            set(raw) - {"ramp_us", "efficiency", "block_us", "program_tflops",
                        "mla_shared_dots", "source"}):
        raise ConfigError(path, key, "expected a mapping {ramp_us: microseconds, efficiency: "
                                     "fraction, block_us: microseconds, program_tflops: "
                                     "TFLOP/s, mla_shared_dots: a number in 0..10 (the three "
                                     "optional), source: text}")
    ramp, eff, source = raw["ramp_us"], raw["efficiency"], raw["source"]
    if isinstance(ramp, bool) or not isinstance(ramp, (int, float)) or not 0 <= ramp <= 1000:
        raise ConfigError(path, f"{key}.ramp_us",
                          f"must be a number of microseconds in 0..1000, got {excerpt(ramp)}")
    if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not 0 < eff <= 1.5:
        raise ConfigError(path, f"{key}.efficiency", f"must be a number in (0, 1.5], got "
                                                     f"{excerpt(eff)}")
    block = raw.get("block_us")
    if block is not None and (isinstance(block, bool) or not isinstance(block, (int, float))
                              or not 0 < block <= 1000):
        raise ConfigError(path, f"{key}.block_us",
                          f"must be a number of microseconds in (0, 1000], got {excerpt(block)}")
    tflops = raw.get("program_tflops")
    if tflops is not None and (isinstance(tflops, bool) or not isinstance(tflops, (int, float))
                               or not 0 < tflops <= 1000):
        raise ConfigError(path, f"{key}.program_tflops",
                          f"must be a number of TFLOP/s in (0, 1000], got {excerpt(tflops)}")
    shared = raw.get("mla_shared_dots", 0.0)
    if isinstance(shared, bool) or not isinstance(shared, (int, float)) or not 0 <= shared <= 10:
        raise ConfigError(path, f"{key}.mla_shared_dots",
                          f"must be a number in 0..10, got {excerpt(shared)}")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source", "missing; say what it was fitted on")
    return DecodeFit(float(ramp) * 1e-6, float(eff), source.strip(),
                     None if block is None else float(block) * 1e-6,
                     None if tflops is None else float(tflops) * 1e12, float(shared))


def _fitted_numbers(path: str, key: str, raw: Any,
                    fields: tuple[tuple[str, tuple[float, float], str, bool], ...]
                    ) -> tuple[list[float], str] | None:
    """A fitted-constants mapping {NAME: number, ..., source: text}: each (NAME, (low, high),
    unit, closed) is a number in (low, high], or [low, high] where `closed` (a fit may answer
    the bound itself, e.g. no fixed cost at all); `source` says what it was fitted on."""
    if raw is None:
        return None
    names = [name for name, _, _, _ in fields]
    if not isinstance(raw, dict) or set(raw) != {*names, "source"}:
        shape = ", ".join(f"{name}: {unit}" for name, _, unit, _ in fields)
        raise ConfigError(path, key, f"expected a mapping {{{shape}, source: text}}")
    values = []
    for name, (low, high), unit, closed in fields:
        value = raw[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                (value >= low if closed else value > low) and value <= high):
            opening = "[" if closed else "("
            raise ConfigError(path, f"{key}.{name}", f"must be a number ({unit}) in {opening}"
                                                     f"{low:g}, {high:g}], got {excerpt(value)}")
        values.append(float(value))
    source = raw["source"]
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source", "missing; say what it was fitted on")
    return values, source.strip()


def _alg4_time(path: str, raw: Any) -> Alg4Time | None:
    """measured.alg4_time: {solo_tflops, program_gb_per_s, shared_sm_slowdown, source}
    (estimates/alg4_time.py; bounds in inputs/limits.py)."""
    fitted = _fitted_numbers(path, "measured.alg4_time", raw, (
        ("solo_tflops", ALG4_SOLO_TFLOPS, "TFLOP/s", False),
        ("program_gb_per_s", ALG4_PROGRAM_GB_PER_S, "GB/s", False),
        ("shared_sm_slowdown", ALG4_SHARED_SM_SLOWDOWN, "fraction", True)))
    if fitted is None:
        return None
    (tflops, gb_per_s, slowdown), source = fitted
    return Alg4Time(tflops * 1e12, gb_per_s * 1e9, slowdown, source)


def _mla_prefill_time(path: str, raw: Any) -> MlaPrefillTime | None:
    """measured.mla_prefill_time: {scale, wave_us, launch_us, source}
    (estimates/mla_prefill_time.py; bounds in inputs/limits.py)."""
    fitted = _fitted_numbers(path, "measured.mla_prefill_time", raw, (
        ("scale", MLA_PREFILL_SCALE, "a factor", False),
        ("wave_us", MLA_PREFILL_US, "microseconds", True),
        ("launch_us", MLA_PREFILL_US, "microseconds", True)))
    if fitted is None:
        return None
    (scale, wave_us, launch_us), source = fitted
    return MlaPrefillTime(scale, wave_us * 1e-6, launch_us * 1e-6, source)


def _launch_overhead(path: str, raw: Any) -> float | None:
    """measured.launch_overhead: {value_us: microseconds, source: text} → seconds."""
    key = "measured.launch_overhead"
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"value_us", "source"}:
        raise ConfigError(path, key, "expected a mapping {value_us: microseconds, source: text}")
    value, source = raw["value_us"], raw["source"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1000:
        raise ConfigError(path, f"{key}.value_us",
                          f"must be a number of microseconds in 0..1000, got {excerpt(value)}")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source", "missing; say how it was measured")
    return float(value) * 1e-6


def _paged(path: str, raw: Any) -> tuple[dict[int, float], str]:
    """measured.paged_kv_efficiency: {source: text, by_page_size: {P: fraction}}."""
    key = "measured.paged_kv_efficiency"
    if raw is None:
        return {}, ""
    if not isinstance(raw, dict):
        raise ConfigError(path, key, "expected a mapping (source, by_page_size)")
    refuse_unknown_keys(path, key, raw, _PAGED_KEYS)
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source", "missing; say which measurement it was fitted on")
    table = raw.get("by_page_size")
    if not isinstance(table, dict) or not table:
        raise ConfigError(path, f"{key}.by_page_size", "expected a mapping tokens per page -> "
                          "fraction, e.g. {1: 0.2, 16: 0.9}")
    out: dict[int, float] = {}
    for page, value in table.items():
        where = f"{key}.by_page_size.{clip(page)}"
        if isinstance(page, bool) or not isinstance(page, int) or not 1 <= page <= MAX_PAGE_SIZE:
            raise ConfigError(path, where, f"a page size must be a whole number of tokens in 1.."
                              f"{MAX_PAGE_SIZE}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1.5:
            raise ConfigError(path, where, f"must be a number in (0, 1.5], got {yaml_kind(value)}")
        out[page] = float(value)
    return dict(sorted(out.items())), source.strip()


def _schedule(path: str, raw: Any) -> BackwardSchedule:
    key = "measured.backward_schedule"
    if not isinstance(raw, dict):
        raise ConfigError(path, key, "expected a mapping (efficiency, program_overhead_us, "
                                     "programs_per_sm, source)")
    refuse_unknown_keys(path, key, raw, _SCHEDULE_KEYS)
    eff, overhead, per_sm = (raw.get(k) for k in ("efficiency", "program_overhead_us",
                                                   "programs_per_sm"))
    if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not 0 < eff <= 1.5:
        raise ConfigError(path, f"{key}.efficiency", f"must be a number in (0, 1.5], got {eff!r}")
    if isinstance(overhead, bool) or not isinstance(overhead, (int, float)) or overhead < 0:
        raise ConfigError(path, f"{key}.program_overhead_us",
                          f"must be a number of microseconds >= 0, got {overhead!r}")
    if (not isinstance(per_sm, dict) or not per_sm
            or any(isinstance(v, bool) or not isinstance(v, int)
                   or not 1 <= v <= MAX_PROGRAMS_PER_SM for v in per_sm.values())
            or any(isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_HEAD_DIM
                   for d in per_sm)):
        raise ConfigError(path, f"{key}.programs_per_sm",
                          f"must map head dims (1 to {MAX_HEAD_DIM:,}) to whole numbers of "
                          f"programs from 1 to {MAX_PROGRAMS_PER_SM} (e.g. {{64: 2, 128: 1}}), "
                          f"got {excerpt(per_sm)}")
    loops = raw.get("causal_loops", 1)
    if isinstance(loops, bool) or not isinstance(loops, int) or not 1 <= loops <= 4:
        raise ConfigError(path, f"{key}.causal_loops",
                          f"must be a whole number of inner loops from 1 to 4, got {loops!r}")
    return BackwardSchedule(float(eff), float(overhead) * 1e-6, dict(per_sm),
                            str(raw.get("source", "")), loops)
