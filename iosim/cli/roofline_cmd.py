"""`iosim roofline`: every kernel of every algorithm on the GPU's roofline, as PNG and SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from iosim.analysis.compare import compare
from iosim.cli import cli
from iosim.cli.common import (
    compare_arguments,
    comparison_options,
    refuse_impossible_sram,
    workload_from,
)
from iosim.cli.paths import PathType
from iosim.inputs.output_paths import check_distinct_files, check_output_files


@cli.command("roofline")
@comparison_options
@click.option("--out", "out_dir", default=".", show_default=True, metavar="DIR",
              type=PathType(path_type=Path), help="Folder for the figure (created if needed).")
@click.option("--name", default="roofline", show_default=True,
              help="File name without extension: writes NAME.png and NAME.svg.")
@click.option("--hierarchical", is_flag=True,
              help="Draw the hierarchical roofline: DRAM, L2 and SRAM ceilings, each kernel "
                   "once per level.")
@click.option("--record", "record", default=None, metavar="FILE",
              type=PathType(path_type=Path, dir_okay=False),
              help="A calibration record (iosim calibrate --record) or an `iosim measure "
                   "--record` file (with --impl): its measured kernels at this shape beside "
                   "the predicted ones (implies --hierarchical).")
def roofline_command(out_dir: Path, name: str, hierarchical: bool, record: Path | None,
                     **params: Any) -> None:
    """Draw the roofline: HBM, compute, vector (and L2/SRAM) ceilings, ridge point, and every
    kernel as a labelled point; print the points as a table. Every workload flag of `compare`
    works here (--force also overwrites NAME.png / NAME.svg).

    \b
    Example:
      iosim roofline --gpu a100 --n 4096
      iosim roofline --gpu h100 --n 8192 --d 128 --heads 32 --causal --out figures/
      iosim roofline --gpu h100 --n 1 --n-kv 32768 --d 128 --heads 32 --kv-heads 8
      iosim roofline --gpu h200 --n 4096 --batch 4 --heads 16 --block-q 128 --block-kv 64 \\
          --profile measured --record tests/data/h200-calibration.json
    """
    if not name or "/" in name or name.startswith("."):
        raise click.BadParameter("give a plain file name without folders or extension",
                                 param_hint="'--name'")
    result = compare(workload_from(params), params["gpu"], **compare_arguments(params))
    refuse_impossible_sram(result, params["force"])
    from iosim.output.folders import ensure_writable_dir

    figures = [out_dir / f"{name}.{fmt}" for fmt in ("png", "svg")]
    check_output_files(figures, "name", overwrite=params["force"])  # before the folder is made
    if record is not None:
        check_distinct_files([("name", path) for path in figures], [("record", record)])
    if record is not None or hierarchical:  # a record refused leaves no folder behind
        measured, note = _measured(record, result, params.get("impl"))
    ensure_writable_dir(out_dir, "--out")
    from iosim.output import plot, render
    from iosim.output.render_sweep import roofline_note, roofline_table

    if record is not None or hierarchical:
        figure = plot.hierarchical_roofline(result, measured, title_note=note)
    else:
        figure = plot.roofline(result)
    paths = plot.save(figure, out_dir / name, overwrite=params["force"])
    console = render.make_console()
    console.print(roofline_table(result))
    note = roofline_note(result)
    if note:
        console.print(note)
    for path in paths:
        click.echo(f"wrote {path}", err=True)


def _measured(record: Path | None, result: Any, impl: str | None
              ) -> tuple[list[Any], str | None]:
    """The record's measured kernels at the comparison's shape ([] without a record), and a
    title line for an `iosim measure` record's dots. A calibration record (JSON) gives the
    Triton kernels it counted; a measure record (JSON Lines) the points of `impl` on this GPU,
    the latest at this shape, with ncu's bytes where it has them."""
    if record is None:
        return [], None
    from iosim.calibrate.measure_record import read_points

    points = read_points(record)
    if points is not None:
        return _measure_points(record, points, result, impl)
    from iosim.calibrate.points import measured_kernels
    from iosim.calibrate.records import load_calibration

    workload = result.workload
    found = measured_kernels(load_calibration(record), workload)
    if not found:
        click.echo(f"{record} has no counted kernel at N {workload.n}, d {workload.d}, batch "
                   f"{workload.batch}, {workload.heads} heads, {workload.dtype}"
                   f"{', causal' if workload.causal else ''}: plotting the predictions alone",
                   err=True)
    return found, None


def _measure_points(record: Path, points: list[dict[str, Any]], result: Any, impl: str | None
                    ) -> tuple[list[Any], str | None]:
    from iosim.calibrate.measure_record import (
        counted_kernels,
        counters_that_pair,
        measured_kernels_of,
        points_at,
    )

    if impl is None:
        names = sorted({p["impl"] for p in points})
        click.echo(f"{record} is an `iosim measure` record (implementations "
                   f"{', '.join(names)}): give --impl NAME to draw its points; plotting the "
                   f"predictions alone", err=True)
        return [], None
    from iosim.inputs.implementations_yaml import get_implementation

    name = get_implementation(impl).name
    w, gpu = result.workload, result.hardware.name
    if w.pass_ != "fwd":  # not "no point at N ...": there may well be one, forward
        click.echo(f"{record} holds forward passes (`iosim measure` times the forward pass), "
                   f"and this is --pass {w.pass_}: plotting the predictions alone", err=True)
        return [], None
    found = points_at(points, w, name, gpu)
    if not found:
        click.echo(f"{record} has no {name} point on {gpu} at {_shape(w)}: plotting the "
                   f"predictions alone", err=True)
        return [], None
    point = found[-1]
    kernels = measured_kernels_of(point, result, name)
    if not kernels:
        predicted = next((len(a.kernels) for a in result.algorithms if a.name == name), 0)
        click.echo(f"{record}: the {len(point['measured_kernels'])} kernels {name} launched "
                   f"do not pair with the {predicted} predicted; plotting the predictions "
                   f"alone", err=True)
        return [], None
    counted = counted_kernels(point)
    if counters_that_pair(point) is not None:
        what = "ncu's bytes, one profiled call's kernel times"
    elif counted is not None:
        timed = len(point["measured_kernels"])
        what = (f"time only: ncu counted {len(counted)} kernel{'s' if len(counted) != 1 else ''}"
                f", torch.profiler timed {timed}; at the predicted bytes")
    else:
        what = "time only, no counters: at the predicted bytes"
    return kernels, (f"hollow: {name} by `iosim measure` ({what}"
                     f"{f'; latest of {len(found)}' if len(found) > 1 else ''})")


def _shape(w: Any) -> str:
    kv = f", N_kv {w.n_kv}" if w.n_kv != w.n else ""
    heads = f"{w.heads}/{w.kv_heads} heads" if w.kv_heads != w.heads else f"{w.heads} heads"
    return (f"N {w.n}{kv}, d {w.d}, batch {w.batch}, {heads}, {w.dtype}"
            f"{', causal' if w.causal else ''}")
