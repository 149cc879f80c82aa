"""`iosim measure`: one implementation at the user's shape on this GPU, predicted beside measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iosim.cli import cli
from iosim.cli.common import gpu_option, workload_options
from iosim.cli.lists import Choice
from iosim.errors import IosimError
from iosim.inputs.workload import Workload


@cli.command("measure")
@gpu_option
@workload_options
@click.option("--impl", required=True, metavar="NAME|PATH",
              help="The implementation to run (configs/impls): sdpa-flash, sdpa-cudnn, "
                   "sdpa-efficient, flex, torch-naive, iosim-triton, or your own YAML.")
@click.option("--profile", type=Choice(["spec", "measured"]), default="measured",
              show_default=True, help="The roofs the prediction uses.")
@click.option("--counters/--no-counters", default=None,
              help="Read DRAM and L2 bytes with Nsight Compute (ncu): the point run once more "
                   "between two L2 evicts, kernel by kernel. Default: on when ncu is found "
                   "(PATH, /opt/nvidia/nsight-compute, /usr/local/cuda*/bin); the output says "
                   "which.")
@click.option("--record", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append this point (JSON Lines) to FILE; `iosim calibrate --impl NAME --from "
                   "FILE` fits the implementation's efficiencies from such points.")
def measure_command(gpu: str, n: int, n_kv: int | None, d: int, heads: int,
                    kv_heads: int | None, batch: int, dtype: str, causal: bool,
                    unfused: str | None, impl: str, profile: str, counters: bool | None,
                    record: Path | None) -> None:
    """Run an implementation at this shape on this machine's GPU and set iosim's prediction
    beside the measurement, kernel by kernel (forward pass).

    \b
    Needs torch and a CUDA GPU (`pip install -e ".[gpu]"`); checks the output against attention
    in fp32 before timing it with triton.testing.do_bench; with ncu, counts each kernel's DRAM
    and L2 bytes. No ncu, or ncu refused: one line says so and the timing is still printed.
    Example:
      iosim measure --gpu h200 --impl sdpa-flash --n 4096 --d 128 --heads 32 --batch 2
    """
    from iosim.analysis.compare import compare
    from iosim.inputs.implementations_yaml import get_implementation

    if unfused:
        raise IosimError("--unfused is the implementation's to say (torch-naive's scale and "
                         "mask kernels); drop it")
    workload = Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv_heads, batch=batch,
                        dtype=dtype, causal=causal)
    implementation = get_implementation(impl)
    if record is not None and record.exists() and record.is_dir():
        raise IosimError(f"--record {record} is a folder; give a file to append to")
    predicted = compare(workload, gpu, impl=implementation,
                        profile=profile)  # type: ignore[arg-type]
    estimate = predicted.algorithms[-1]
    from iosim.calibrate import env

    env.require_gpu("measure")
    from iosim.calibrate.measure import check, time_and_kernels

    error = check(implementation, workload)
    seconds, kernels = time_and_kernels(implementation, workload)
    point = measurement_point(implementation.name, workload, predicted.hardware.name, profile,
                              estimate, seconds, kernels, error)
    point["device"] = env.device_info()
    point["counters"] = read_counters(impl, workload, counters)
    from iosim.output.render_measure import measurement_lines

    for line in measurement_lines(point):
        click.echo(line)
    if record is not None:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(point) + "\n")
        click.echo(f"recorded in {record}")


def read_counters(impl: str, workload: Workload, wanted: bool | None) -> dict[str, Any]:
    """ncu's kernels of one more run (impl_ncu.count_kernels), or a status saying why there are
    none: "off" (--no-counters), "unavailable" (no ncu), "refused: ...", "failed: ..."."""
    from iosim.calibrate.ncu import ncu_path

    if wanted is False:
        return {"status": "off"}
    if ncu_path() is None:
        return {"status": "unavailable"}
    from iosim.calibrate.impl_ncu import count_kernels
    from iosim.calibrate.measure_record import workload_dict

    return count_kernels(impl, workload_dict(workload))


def measurement_point(impl: str, w: Workload, gpu: str, profile: str, estimate: Any,
                      seconds: float, kernels: list[dict[str, Any]], error: float
                      ) -> dict[str, Any]:
    """One measured point as a JSON-ready record (the schema `--record` appends; measure adds
    `counters`, calibrate/measure_record.py reads it back)."""
    from iosim.calibrate.measure_record import workload_dict

    return {
        "schema": "iosim.measure/1", "impl": impl, "gpu": gpu, "profile": profile,
        "algorithm": estimate.name, "workload": workload_dict(w),
        "measured_time_s": seconds, "rel_error": error,
        "measured_kernels": kernels,
        "predicted_time_s": estimate.call_time_s,
        "predicted_kernels": [{"name": k.name, "label": k.label, "time_s": k.time_s,
                               "hbm_bytes": k.hbm_bytes, "dram_bytes": k.dram_bytes,
                               "utilisation": k.utilisation} for k in estimate.kernels],
    }
