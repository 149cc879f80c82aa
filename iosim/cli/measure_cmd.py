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

ERROR_LINE = 0.15
"""Above this relative time error, one line says what the model got wrong."""


@cli.command("measure")
@gpu_option
@workload_options
@click.option("--impl", required=True, metavar="NAME|PATH",
              help="The implementation to run (configs/impls): sdpa-flash, sdpa-cudnn, "
                   "sdpa-efficient, flex, torch-naive, iosim-triton, or your own YAML.")
@click.option("--profile", type=Choice(["spec", "measured"]), default="measured",
              show_default=True, help="The roofs the prediction uses.")
@click.option("--record", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append this point (JSON Lines) to FILE; `iosim calibrate --impl NAME --from "
                   "FILE` fits the implementation's efficiencies from such points.")
def measure_command(gpu: str, n: int, n_kv: int | None, d: int, heads: int,
                    kv_heads: int | None, batch: int, dtype: str, causal: bool,
                    unfused: str | None, impl: str, profile: str, record: Path | None) -> None:
    """Run an implementation at this shape on this machine's GPU and set iosim's prediction
    beside the measurement, kernel by kernel (forward pass).

    \b
    Needs torch and a CUDA GPU (`pip install -e ".[gpu]"`); checks the output against attention
    in fp32 before timing it with triton.testing.do_bench.
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
    from iosim.calibrate.env import require_gpu

    require_gpu("measure")
    from iosim.calibrate.measure import check, time_and_kernels

    error = check(implementation, workload)
    seconds, kernels = time_and_kernels(implementation, workload)
    point = measurement_point(implementation.name, workload, predicted.hardware.name, profile,
                              estimate, seconds, kernels, error)
    for line in measurement_lines(point):
        click.echo(line)
    if record is not None:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(point) + "\n")
        click.echo(f"recorded in {record}")


def measurement_point(impl: str, w: Workload, gpu: str, profile: str, estimate: Any,
                      seconds: float, kernels: list[dict[str, Any]], error: float
                      ) -> dict[str, Any]:
    """One measured point as a JSON-ready record (the schema `--record` appends)."""
    return {
        "schema": "iosim.measure/1", "impl": impl, "gpu": gpu, "profile": profile,
        "workload": {"n": w.n, "n_kv": w.n_kv, "d": w.d, "heads": w.heads,
                     "kv_heads": w.kv_heads, "batch": w.batch, "dtype": w.dtype,
                     "causal": w.causal},
        "measured_time_s": seconds, "rel_error": error,
        "measured_kernels": kernels,
        "predicted_time_s": estimate.call_time_s,
        "predicted_kernels": [{"name": k.name, "label": k.label, "time_s": k.time_s,
                               "hbm_bytes": k.hbm_bytes, "dram_bytes": k.dram_bytes,
                               "utilisation": k.utilisation} for k in estimate.kernels],
    }


def measurement_lines(point: dict[str, Any]) -> list[str]:
    """Predicted beside measured, per kernel where the launches line up, then the total."""
    predicted, measured = point["predicted_kernels"], point["measured_kernels"]
    lines = [f"{point['impl']} on {point['gpu']} ({point['profile']} profile): "
             f"{len(measured)} kernels measured, {len(predicted)} predicted"]
    lines.append(f"{'kernel':<34} {'predicted':>11} {'measured':>11} {'error':>8}")
    paired = len(predicted) == len(measured)
    for i, m in enumerate(measured):
        p = predicted[i] if paired else None
        pred = f"{p['time_s'] * 1e6:9.1f} µs" if p else "          —"
        err = f"{(p['time_s'] - m['time_s']) / m['time_s']:+7.0%}" if p else "       —"
        lines.append(f"{m['name'][:34]:<34} {pred} {m['time_s'] * 1e6:8.1f} µs {err}")
    total = (point["predicted_time_s"] - point["measured_time_s"]) / point["measured_time_s"]
    lines.append(f"{'total (do_bench median)':<34} {point['predicted_time_s'] * 1e6:8.1f} µs "
                 f"{point['measured_time_s'] * 1e6:8.1f} µs {total:+7.0%}")
    lines.append("DRAM, L2 bytes: not read by measure (iosim calibrate --counters reads them "
                 "with ncu); predicted HBM bytes: "
                 f"{sum(p['hbm_bytes'] for p in predicted):,}")
    if abs(total) > ERROR_LINE:
        lines.append(what_went_wrong(point, total))
    return lines


def what_went_wrong(point: dict[str, Any], total: float) -> str:
    """One line on the largest cause of a time error above 15 %."""
    predicted, measured = point["predicted_kernels"], point["measured_kernels"]
    if len(predicted) != len(measured):
        return (f"model: {len(measured)} kernels ran, {len(predicted)} were predicted — the "
                f"profile misses launches ({', '.join(k['name'][:24] for k in measured)}); "
                f"add them to its extra_kernels")
    worst = max(range(len(measured)), key=lambda i: abs(predicted[i]["time_s"]
                                                         - measured[i]["time_s"]))
    p, m = predicted[worst], measured[worst]
    side = "fast" if total < 0 else "slow"
    return (f"model: {total:+.0%} overall, predicted too {side}; the largest gap is "
            f"{p['label']} ({p['time_s'] * 1e6:.1f} µs predicted, {m['time_s'] * 1e6:.1f} µs "
            f"measured, utilisation {p['utilisation']:.0%}): its efficiency or occupancy is off")
