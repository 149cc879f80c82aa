"""`iosim calibrate`: time Triton kernels on this GPU, fit efficiencies, write a measured YAML."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

from iosim.calibrate import CalibrationError
from iosim.cli import cli
from iosim.cli.paths import PathType
from iosim.errors import IosimError
from iosim.inputs.excerpts import excerpt
from iosim.inputs.hardware import Hardware
from iosim.inputs.output_paths import check_distinct_files, check_folder, check_output_files


def _refuse_existing(path: Path, force: bool, flag: str) -> None:
    """A file calibrate may write: one the output rules take (no folder, FIFO or device in
    its place, a folder it can write in), and not one already there (a link too) unless
    --force."""
    check_output_files([path], flag.lstrip("-"), overwrite=True)
    if os.path.lexists(path) and not force:
        raise IosimError(f"{flag} {path} already exists; pass --force to overwrite it "
                         "(or choose another path)")


def _refuse_overlaps(out: Path, record: Path | None, from_: Path | None,
                     report: Path | None) -> None:
    """--out, --record and --from name three files, and --report a folder not one of them."""
    outputs = [("out", out), *([("record", record)] if record is not None else [])]
    check_distinct_files(outputs, [("from", from_)] if from_ is not None else [])
    if report is not None:
        check_folder(report, "report")


@cli.command("calibrate")
@click.option("--gpu", required=True, metavar="NAME|ALIAS|PATH",
              help="The hardware YAML to calibrate (its spec figures are kept).")
@click.option("--out", "out", required=True, type=PathType(dir_okay=False, path_type=Path),
              help="Where to write the YAML with its new measured: section.")
@click.option("--quick", is_flag=True,
              help="A small grid (N 1024 and 4096, d 128): 7-25 s on an H200.")
@click.option("--counters", is_flag=True,
              help="Also count DRAM and L2 bytes of every kernel with Nsight Compute (ncu).")
@click.option("--force", is_flag=True, help="Overwrite --out, --record and --report if they exist.")
@click.option("--record", type=PathType(dir_okay=False, path_type=Path), default=None,
              help="Measurement file to write (default: --out with .calibration.json).")
@click.option("--from", "from_", type=PathType(dir_okay=False, path_type=Path), default=None,
              help="Fit a recorded measurement file instead of measuring (no GPU needed).")
@click.option("--report", type=PathType(file_okay=False, path_type=Path), default=None,
              help="Write the calibration report (CSV, Markdown, plots) into this folder.")
@click.option("--impl", "impl", default=None, metavar="LIST|all",
              help="Calibrate these implementations (sdpa-flash,torch-naive,...; all: every "
                   "shipped one) instead of the GPU: their fit goes under measured.impls.")
@click.option("--budget", type=click.FloatRange(min=1, max=86400), default=None,
              metavar="SECONDS",
              help="With --impl on a GPU: start no new point after this many seconds.")
def calibrate_command(gpu: str, out: Path, quick: bool, counters: bool, force: bool,
                      record: Path | None, from_: Path | None, report: Path | None,
                      impl: str | None, budget: float | None) -> None:
    """Measure this GPU's ceilings and kernel efficiencies; write them as a measured: profile.

    \b
    Times Triton copy, read, write and matmul kernels (the ceilings), the standard path as three kernels
    (S = QKᵀ, softmax, O = PV) and a fused FlashAttention-2 forward at several block sizes,
    each checked against torch first. Fits one efficiency per kernel class and writes a copy
    of the --gpu YAML with a measured: section; `iosim compare --profile measured` uses it.

    \b
    With --impl, each implementation is checked and timed over a grid of shapes (or read from
    a record with --from) and its efficiencies and host time per call are fitted into
    measured.impls.NAME of a copy of the --gpu YAML (every other key kept).

    \b
    Examples:
      iosim calibrate --gpu h200 --out h200-measured.yaml --quick
      iosim calibrate --gpu h200 --out h200.yaml --impl all --from tests/data/h200-impl-fit.json
      iosim calibrate --gpu h200 --out h200.yaml --counters --report reports/calibration-h200
      iosim calibrate --gpu h200 --out h200.yaml --from tests/data/h200-calibration.json
    """
    from iosim.calibrate.fit import fit
    from iosim.calibrate.records import load_calibration, save_calibration
    from iosim.calibrate.yaml_out import merge_gpu_fit, write_measured_yaml
    from iosim.inputs.gpus import resolve_hardware
    from iosim.output.files import write_text_atomically

    hardware = resolve_hardware(gpu).hardware
    _refuse_overlaps(out, record, from_, report)  # a default --record is named after --out
    _refuse_existing(out, force, "--out")
    if impl is None and budget is not None:
        raise IosimError("--budget applies to --impl (the implementation grid); drop it or "
                         "add --impl")
    if impl is not None:
        _calibrate_impls(hardware, impl, out=out, from_=from_, record=record, force=force,
                         budget=budget, quick=quick, counters=counters, report=report)
        return
    if record is None and from_ is None:
        record = out.with_name(out.stem + ".calibration.json")
    if record is not None:
        _refuse_existing(record, force, "--record")
    if report is not None and report.exists() and any(report.iterdir()) and not force:
        raise IosimError(f"--report {report} is not empty; pass --force to overwrite its files")
    source_text = Path(hardware.path).read_text(encoding="utf-8")

    from iosim.output import render

    console = render.make_console()

    def warn(message: str) -> None:
        click.echo(f"Warning: {' '.join(message.split())}", err=True)

    pending: list[str] = []  # warnings about a recorded file, shown once it has been fitted
    if from_ is not None:
        from iosim.calibrate.env import names_match

        calibration = load_calibration(from_)
        device = str(calibration.device.get("name", "unknown"))
        if not names_match(device, hardware.name, hardware.aliases):
            pending.append(f"{from_} was measured on '{device}' but --gpu {hardware.name} "
                           f"describes '{hardware.display_name}'; fitting it against that YAML "
                           "anyway (both are recorded in the provenance)")
    else:
        from iosim.calibrate.env import require_gpu
        from iosim.calibrate.plan import make_plan
        from iosim.calibrate.run import measure

        require_gpu()

        plan = make_plan(quick=quick)
        command = "iosim " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task("calibrating", total=plan.points)

            def advance(what: str) -> None:
                if what.startswith("ncu"):
                    bar.update(task, description=what)
                    return
                bar.update(task, description=what)
                bar.advance(task)

            calibration = measure(hardware, plan, command=command, progress=advance,
                                  counters=counters, warn=warn,
                                  ncu_log=record.with_suffix(".ncu.log") if record else None)
    if record is not None:
        save_calibration(calibration, record)
    try:
        result = fit(calibration, hardware)
    except CalibrationError as exc:  # worded for the record already: whole, not clipped
        if from_ is None:
            raise
        raise IosimError(f"{excerpt(str(from_))}: {exc.problem}; record them again with iosim "
                         f"calibrate") from None
    except (IosimError, ArithmeticError, ValueError) as exc:
        if from_ is None:
            raise
        # a recorded file is checked value by value (records.load_calibration); values that are
        # each plausible but together unfittable (a block of 0 rows) are named here, in one line
        raise IosimError(f"{excerpt(str(from_))}: its measurements cannot be fitted "
                         f"({excerpt(str(exc), 120)}); record them again with iosim calibrate"
                         ) from None
    measured, kept = merge_gpu_fit(source_text, result.profile_yaml())
    text = write_measured_yaml(source_text, measured)  # checked before any warning: a refusal
    for message in pending:  # is then its one line
        warn(message)
    if kept:
        warn(f"kept {', '.join(f'measured.{k}' for k in kept)} of {hardware.path} (fitted "
             f"against its earlier ceilings: re-fit them if these moved)")
    write_text_atomically(out, text)
    if report is not None:
        from iosim.output.calibration_report import write_report

        write_report(result, report, overwrite=force)
    from iosim.output.calibration_report import print_summary

    print_summary(result, console, out=out, record=record, report=report)


def _calibrate_impls(hardware: Hardware, impl: str, *, out: Path, from_: Path | None,
                     record: Path | None, force: bool, budget: float | None, quick: bool,
                     counters: bool, report: Path | None) -> None:
    """`--impl`: the flags that belong to the GPU calibration refused, then cli/calibrate_impl.py."""
    for flag, given in (("--quick", quick), ("--report", report is not None)):
        if given:
            raise IosimError(f"{flag} belongs to the GPU calibration; drop it with --impl (the "
                             f"implementation fit prints each one's error, the record keeps "
                             f"every point)")
    if from_ is not None and counters:
        raise IosimError("--counters counts a run on the GPU under ncu; drop it with --from "
                         "(the record keeps the counts it was made with)")
    if from_ is not None and budget is not None:
        raise IosimError("--budget limits a run on the GPU; drop it with --from")
    if from_ is None:
        record = record or out.with_name(out.stem + ".impl-record.json")
        _refuse_existing(record, force, "--record")
    elif record is not None:
        raise IosimError("--record names the file a GPU run writes; with --from the record "
                         "is already there: drop --record")
    from iosim.cli.calibrate_impl import calibrate_impls

    calibrate_impls(hardware, impl, out=out, from_=from_, record=record, force=force,
                    budget=budget, warn=_warn, counters=counters)


def _warn(message: str) -> None:
    click.echo(f"Warning: {' '.join(message.split())}", err=True)
