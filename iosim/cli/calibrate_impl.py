"""`iosim calibrate --impl A,B,...`: measure (on a GPU) or read (--from) an implementation record,
fit each implementation's figures (calibrate/impl_fit.py) and write them under the --gpu YAML's
`measured.impls` into --out, every other key of that YAML kept (calibrate/yaml_out.py)."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from iosim.errors import IosimError
from iosim.inputs.excerpts import excerpt
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.output.files import write_text_atomically

ALL = "all"
"""--impl all: every shipped implementation."""


def implementations(text: str) -> list[Implementation]:
    """--impl's comma-separated names (or paths), each once; `all` for every shipped one."""
    from iosim.inputs.implementations_yaml import get_implementation, shipped_implementations

    names = [part.strip() for part in text.split(",")]
    if any(not n for n in names):
        raise IosimError(f"--impl {excerpt(text)} has an empty entry; give names separated by "
                         f"single commas, e.g. --impl sdpa-flash,torch-naive")
    if names == [ALL]:
        return [get_implementation(n) for n in shipped_implementations()]
    found = [get_implementation(n) for n in names]
    seen: set[str] = set()
    for impl in found:
        if impl.name in seen:
            raise IosimError(f"--impl lists {impl.name} twice; list each implementation once")
        seen.add(impl.name)
    return found


def calibrate_impls(hardware: Hardware, impl_text: str, *, out: Path, from_: Path | None,
                    record: Path | None, force: bool, budget: float | None,
                    warn: Callable[[str], None], counters: bool = False) -> None:
    """Fit and write the implementations' figures (the module docstring); print one line each."""
    from iosim.analysis.lean_time import LEAN_TERMS
    from iosim.calibrate.env import names_match
    from iosim.calibrate.impl_fit import fit_record, load_points
    from iosim.calibrate.impl_run import require_timed
    from iosim.calibrate.yaml_out import merge_impl_fits, write_measured_yaml
    from iosim.estimates.lone_prologue import LONE_TERMS
    from iosim.inputs.impl_calibration import TIME_TERMS

    impls = implementations(impl_text)
    if hardware.measured is None:
        raise IosimError(f"{hardware.path} has no measured section; run `iosim calibrate --gpu "
                         f"{hardware.name} --out FILE` first (an implementation's fit is "
                         f"relative to the GPU's measured ceilings), then --gpu FILE --impl")
    source_text = Path(hardware.path).read_text(encoding="utf-8")
    if from_ is not None:
        data = load_points(from_)
        where = str(from_)
    else:
        data = measure_on_gpu(impls, budget=budget)
        where = "this run"
        assert record is not None
        # saved before ncu runs too: the timed points survive a counter run that is stopped
        write_text_atomically(record, json.dumps(data, indent=1))
        if counters:
            from iosim.calibrate.impl_ncu import count

            data["counters"] = count(data, log=record.with_suffix(".ncu.log"))
            if data["counters"] != "ok":
                warn(f"no hardware counters: {data['counters']}; continuing without them")
        write_text_atomically(record, json.dumps(data, indent=1))
    device = str(data["device"].get("name", "unknown"))
    if not names_match(device, hardware.name, hardware.aliases):
        warn(f"{where} was measured on '{device}' but --gpu {hardware.name} describes "
             f"'{hardware.display_name}'; fitting it against that YAML anyway")
    names = [i.name for i in impls]
    require_timed(data, names, where)
    # the per-program bandwidth is a measured input (benchmarks/sm_bandwidth_h200.py), not
    # fitted: an existing entry's is kept and used
    impls_now = hardware.measured.impls
    bandwidth = {n: impls_now[n].terms["program_bandwidth"] for n in names
                 if n in impls_now and "program_bandwidth" in impls_now[n].terms}
    # an entry with the lone-grid terms (estimates/lone_prologue.py) had them and solo_rate
    # fitted together by calibrate/lone_fit.py on kernel device times (a call-time fit folds
    # host gaps into them): this refit holds all three
    held = {n: {k: impls_now[n].terms[k] for k in ("solo_rate", *LONE_TERMS)}
            for n in names if n in impls_now
            and all(k in impls_now[n].terms for k in ("solo_rate", *LONE_TERMS))}
    fitted = fit_record(data, hardware, names, program_bandwidth=bandwidth, hold=held)
    lean = lean_refit(data, hardware) if LEAN_IMPL in names else None
    torch = data["device"].get("torch", "unknown")
    command = data.get("command") or f"iosim calibrate --impl {impl_text}"
    entries = {}
    for name in names:
        f = fitted[name]
        entries[name] = {
            "efficiency": f["efficiency"], "call_overhead_s": f["call_overhead_s"],
            **f["terms"],
            "source": (f"fitted by `iosim calibrate --gpu {hardware.name} --impl {name}` "
                       f"(calibrate/impl_fit.py) on {from_ if from_ is not None else record} "
                       f"({f['points']} points, torch {torch}, {device}; measured by: "
                       f"{command})")}
    if lean is not None and lean[1]:
        entries[LEAN_IMPL].update(lean[1])
    for name, figures in held.items():  # written back even where no point is a lone grid
        entries[name].update(figures)
    dropped = [n for n in names if n in impls_now and impls_now[n].forward]
    measured = merge_impl_fits(source_text, entries)
    apart = {t for terms, _, _ in fitted_apart() for t in terms}
    for name in names:  # a time term this fit finds 0 is no such term: an old value goes
        for term in TIME_TERMS:
            # the lean kernel's figures, fitted apart (lean_refit), stay unless refitted; so
            # do the other figures fitted apart (fitted_apart)
            if term not in entries[name] and term not in LEAN_TERMS and term not in apart:
                measured["impls"][name].pop(term, None)
    text = write_measured_yaml(source_text, measured)
    if out.exists() and not force:  # checked before measuring too; the run may have been long
        raise IosimError(f"--out {out} already exists; pass --force to overwrite it")
    write_text_atomically(out, text)
    dram = dram_errors(data, hardware, names)
    for name in names:
        f = fitted[name]
        effs = " · ".join(f"{k} {v:.3f}" for k, v in f["efficiency"].items())
        click.echo(f"{name:<15} {f['points']:>3} points · {effs} · "
                   f"{f['call_overhead_s'] * 1e6:.1f} µs per call")
        click.echo(f"{'':19}time median |error| {f['median_error']:.1%} on these points "
                   f"(in-sample)")
        if name in dram:
            click.echo(f"{'':19}DRAM bytes median |error| {dram[name][0]:.1%} on "
                       f"{dram[name][1]} ncu points")
    click.echo(f"wrote {len(names)} measured.impls {'entry' if len(names) == 1 else 'entries'} "
               f"into {out}")
    if lean is not None:
        click.echo(lean[0])
    for name in names:
        for terms, what, how in fitted_apart():
            if all(k in measured["impls"][name] for k in terms):
                click.echo(f"kept {name}'s {what}: fitted apart by {how}")
    for name in dropped:
        click.echo(f"dropped {name}'s forward schedule (measured.impls.{name}.forward): this "
                   f"fit times its forward kernel on the roofline; refit the schedule with "
                   f"python benchmarks/flex8_fit.py")
    if from_ is None:
        click.echo(f"record: {record}")


def fitted_apart() -> tuple[tuple[tuple[str, ...], str, str], ...]:
    """(terms, what they are, the script that fits them) of the time terms of an entry fitted
    by their own scripts on kernel device times, not by this call-time fit: kept, and said so
    (the lean kernel's are lean_refit's). Imported here: only a calibration needs them."""
    from iosim.analysis.dense_mask import DENSE_MASK_TERMS
    from iosim.analysis.program_chain import CHAIN_TERMS
    from iosim.estimates.lone_prologue import LONE_TERMS

    return ((CHAIN_TERMS, "resident-grid chain figures (chain_*)",
             "python -m iosim.calibrate.chain_fit"),
            (DENSE_MASK_TERMS, "dense causal mask figures (mask_*, dense_block_s_*)",
             "python benchmarks/dense_mask_fit.py"),
            (LONE_TERMS, "lone-grid figures (solo_rate*, lone_prologue_bandwidth; held by this "
             "fit)", "python -m iosim.calibrate.lone_fit"))


LEAN_IMPL = "sdpa-cudnn"
"""The implementation whose decode steps run cuDNN's lean kernel (analysis/lean_time.py)."""


def lean_refit(data: dict[str, Any], hardware: Hardware) -> tuple[str, dict[str, float]]:
    """The lean kernel's figures (analysis/lean_time.py's LEAN_TERMS) fitted on the record's
    lean decode steps when they cover every head-dim bucket (a bucket without a step would
    leave the model without a rate, and compare would time the kernel on its roofline), with
    the line saying so; else no figures and the line saying the YAML's are kept."""
    from iosim.analysis.impl_kernels import HEAD_DIM_BUCKETS
    from iosim.calibrate.cudnn_lean_fit import fit_lean, lean_buckets, record_lean_points

    points = record_lean_points(data, "this record")
    buckets = lean_buckets(points)
    where = f"measured.impls.{LEAN_IMPL}.lean_*"
    if buckets != set(HEAD_DIM_BUCKETS):
        have = ", ".join(f"d {b}" for b in sorted(buckets)) or "none"
        return (f"kept {LEAN_IMPL}'s lean decode figures ({where}): this record's lean decode "
                f"steps cover {have} of d {', '.join(map(str, HEAD_DIM_BUCKETS))}; refit them "
                f"with python benchmarks/cudnn9_fit.py RECORD.json ...", {})
    return (f"refitted {LEAN_IMPL}'s lean decode figures ({where}) on {len(points)} lean decode "
            f"steps (calibrate/cudnn_lean_fit.py)", fit_lean(points, hardware))


def measure_on_gpu(impls: list[Implementation], *, budget: float | None) -> dict[str, Any]:
    """The record of one GPU run over calibrate/impl_run.py's FIT_GRID (imports torch)."""
    from iosim.calibrate.env import device_info, require_gpu
    from iosim.calibrate.impl_run import gpu_runner, measure_impls

    require_gpu()
    command = "iosim " + " ".join(shlex.quote(a) for a in sys.argv[1:])

    def progress(record: dict[str, Any], entry: dict[str, Any]) -> None:
        what = (f"{entry['time_s'] * 1e6:.1f} µs" if "time_s" in entry
                else f"refused: {entry['refused']}")
        click.echo(f"{entry['impl']} #{entry['index']}: {what}", err=True)

    return measure_impls(impls, gpu_runner(), device=device_info(), command=command,
                         budget_s=budget, on_point=progress)


def dram_errors(record: dict[str, Any], hardware: Hardware, names: list[str]
                ) -> dict[str, tuple[float, int]]:
    """Per implementation with ncu-counted points: the median absolute error of compare's
    L2-aware DRAM estimate against ncu's reads + writes, and the number of such points."""
    from statistics import median

    from iosim.analysis.compare import compare
    from iosim.inputs.workload import Workload

    errors: dict[str, list[float]] = {}
    for p in record["points"]:
        if p["impl"] not in names or "dram_read_bytes" not in p:
            continue
        measured = p["dram_read_bytes"] + p["dram_write_bytes"]
        a = compare(Workload(**p["workload"]), hardware, impl=p["impl"]).algorithms[-1]
        if a.dram is None or measured <= 0:
            continue
        errors.setdefault(p["impl"], []).append(abs(a.dram.bytes - measured) / measured)
    return {name: (median(e), len(e)) for name, e in errors.items()}
