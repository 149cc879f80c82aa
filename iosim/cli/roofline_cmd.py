"""`iosim roofline`: every kernel of every algorithm on the GPU's roofline, as PNG and SVG."""

from __future__ import annotations

from pathlib import Path

import click

from iosim.analysis.compare import compare
from iosim.cli import cli
from iosim.cli.common import comma_list, gpu_option, tiling_options, workload_options
from iosim.inputs.limits import check_output_files
from iosim.inputs.workload import Workload


@cli.command("roofline")
@gpu_option
@workload_options
@tiling_options
@click.option("--algo", default=None, metavar="LIST",
              help="Algorithms, comma-separated: standard,flash1,flash2 (default: all).")
@click.option("--profile", type=click.Choice(["spec", "measured"]), default="spec",
              show_default=True, help="Datasheet roofs, or the calibrated ones of the YAML.")
@click.option("--out", "out_dir", default=".", show_default=True, metavar="DIR",
              type=click.Path(path_type=Path), help="Folder for the figure (created if needed).")
@click.option("--name", default="roofline", show_default=True,
              help="File name without extension: writes NAME.png and NAME.svg.")
@click.option("--force", is_flag=True, help="Overwrite NAME.png / NAME.svg if they exist.")
def roofline_command(gpu: str, n: int, n_kv: int | None, d: int, heads: int,
                     kv_heads: int | None, batch: int, dtype: str, causal: bool,
                     unfused: str | None, block_q: int | None, block_kv: int | None,
                     sram: str | None, sram_elements: int | None, algo: str | None,
                     profile: str, out_dir: Path, name: str, force: bool) -> None:
    """Draw the roofline: HBM, compute, vector (and L2/SRAM) ceilings, ridge point, and every
    kernel as a labelled point; print the points as a table.

    \b
    Example:
      iosim roofline --gpu a100 --n 4096
      iosim roofline --gpu h100 --n 8192 --d 128 --heads 32 --causal --out figures/
    """
    if not name or "/" in name or name.startswith("."):
        raise click.BadParameter("give a plain file name without folders or extension",
                                 param_hint="'--name'")
    workload = Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv_heads, batch=batch,
                        dtype=dtype, causal=causal, unfused=tuple(comma_list(unfused) or ()))
    result = compare(workload, gpu, algorithms=comma_list(algo), block_q=block_q,
                     block_kv=block_kv, sram=sram, sram_elements=sram_elements,
                     profile=profile)  # type: ignore[arg-type]
    from iosim.output.report import ensure_writable_dir

    check_output_files([out_dir / f"{name}.{fmt}" for fmt in ("png", "svg")], "name",
                       overwrite=force)  # before the folder is made
    ensure_writable_dir(out_dir, "--out")
    from iosim.output import plot, render
    from iosim.output.render_sweep import roofline_table

    paths = plot.save(plot.roofline(result), out_dir / name, overwrite=force)
    console = render.make_console()
    console.print(roofline_table(result))
    for path in paths:
        click.echo(f"wrote {path}", err=True)
