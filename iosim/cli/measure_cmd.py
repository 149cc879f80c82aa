"""`iosim measure`: one implementation at the user's shape on this GPU, predicted beside measured."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from iosim.cli import cli
from iosim.cli.common import gpu_option, workload_options
from iosim.cli.lists import Choice
from iosim.cli.paths import PathType
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
@click.option("--record", type=PathType(dir_okay=False, path_type=Path), default=None,
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
    import time

    from iosim.analysis.compare import compare
    from iosim.inputs.implementations_yaml import get_implementation

    started = time.time()
    phases: dict[str, float] = {}

    if unfused:
        raise IosimError("--unfused is the implementation's to say (torch-naive's scale and "
                         "mask kernels); drop it")
    workload = Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv_heads, batch=batch,
                        dtype=dtype, causal=causal)
    implementation = get_implementation(impl)
    if record is not None:
        check_record_target(record)
    predicted = compare(workload, gpu, impl=implementation,
                        profile=profile)  # type: ignore[arg-type]
    estimate = predicted.algorithms[-1]
    from iosim.calibrate import env

    if implementation.runs == "flex":
        # one shape's few kernels: compiled in the process, not by a pool of compile workers
        # started for them (in this process and in ncu's, which inherits it); set before
        # torch is imported
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    phases["predicted"] = time.time() - started
    # ncu's process first, before this one imports torch: it is the longer path (its python
    # starts under ncu's injection, ~12 s to a runner on the H200, benchmarks/flex10-h200)
    counting = start_counters(impl, workload, counters)
    phases["ncu_started"] = time.time() - started
    try:
        env.require_gpu("measure")
        from iosim.calibrate.measure import check, time_and_kernels

        error = check(implementation, workload)
        phases["checked"] = time.time() - started
        if not isinstance(counting, dict):
            from iosim.calibrate.impl_ncu import compiled, counters_ready

            compiled(counting)  # the caches warm now: the target compiles from them
            counters_ready(counting)  # nothing of it on the GPU while this one times
            phases["ncu_ready"] = time.time() - started
        seconds, kernels = time_and_kernels(implementation, workload)
        phases["timed"] = time.time() - started
    except BaseException:
        if not isinstance(counting, dict):
            from iosim.calibrate.ncu import stop

            stop(counting)
        raise
    point = measurement_point(implementation.name, workload, predicted.hardware.name, profile,
                              estimate, seconds, kernels, error)
    point["device"] = env.device_info()
    if isinstance(counting, dict):
        point["counters"] = counting
    else:
        from iosim.calibrate.impl_ncu import finish_count_kernels
        from iosim.calibrate.ncu import PHASES

        point["counters"] = finish_count_kernels(counting)
        phases["counted"] = time.time() - started
        phases.update({k: (v - started if k.startswith("target_") else v)
                       for k, v in PHASES.items()})
    point["phases_s"] = {k: round(v, 3) for k, v in phases.items()}
    from iosim.output.render_measure import measurement_lines

    for line in measurement_lines(point):
        click.echo(line)
    if record is not None:
        try:
            line = json.dumps(point, allow_nan=False) + "\n"
        except ValueError:
            raise IosimError("the measured point holds a NaN or an infinity; not recorded "
                             f"in {record}") from None
        try:
            with record.open("a", encoding="utf-8") as out:
                out.write(line)
        except OSError as exc:
            raise IosimError(f"--record {record}: cannot append the point "
                             f"({exc.strerror or exc}); the measurement is printed above"
                             ) from None
        click.echo(f"recorded in {record}")


def check_record_target(record: Path) -> None:
    """Refuse, before anything runs, a --record that a point cannot be appended to: a folder,
    or a file that is not already a measure record (a calibration record, notes, a record
    whose last line was cut): appending would spoil what the user wrote."""
    from iosim.calibrate.measure_record import read_points

    if record.is_dir():
        raise IosimError(f"--record {record} is a folder; give a file to append to")
    if not record.exists() or record.stat().st_size == 0 or not record.is_file():
        return
    from iosim.calibrate import CalibrationError

    try:
        points = read_points(record)
    except CalibrationError as exc:
        raise IosimError(f"--record: {exc}; fix or move it, or give a new file") from None
    if points is None:
        raise IosimError(f"--record {record} is not an `iosim measure` record (JSON Lines "
                         f"of iosim.measure/1 points); give a new file or an existing "
                         f"measure record")
    if not record.read_bytes().endswith(b"\n"):
        raise IosimError(f"--record {record} does not end with a newline (a point cut "
                         f"short?); fix its last line, or give a new file")


def start_counters(impl: str, workload: Workload, wanted: bool | None) -> Any:
    """ncu's run of one more call started in the background (impl_ncu.start_count_kernels;
    finish_count_kernels reads it), or a status saying why there is none: "off"
    (--no-counters), "unavailable" (no ncu)."""
    from iosim.calibrate.ncu import ncu_path

    if wanted is False:
        return {"status": "off"}
    if ncu_path() is None:
        return {"status": "unavailable"}
    from iosim.calibrate.impl_ncu import start_count_kernels
    from iosim.calibrate.measure_record import workload_dict

    return start_count_kernels(impl, workload_dict(workload))


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
