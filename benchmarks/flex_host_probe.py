"""Does flex's host floor depend on how many shapes the process has compiled? (issue 11: flex's
fitted host-bound floor, 181 µs, came from calibration runs that compile many shapes in one
process, while `iosim measure` — one shape compiled — timed 84–94 µs calls: benchmarks/
flex-measure-h200/). Nothing is fitted here; the record is data for the model.

    PYTHONPATH=$PWD python3 benchmarks/flex_host_probe.py alone INDEX OUT.json
    PYTHONPATH=$PWD python3 benchmarks/flex_host_probe.py crowded OUT.json

`alone`: only TARGETS[INDEX] is compiled in this process; `crowded`: the OTHERS are compiled and
run once first (dynamo then holds len(OTHERS) more graphs), then every target is measured. Per
target: do_bench's median as the validation sets take it (measure.time_and_kernels), the host
time of one call with the GPU idle (measure.host_seconds) and with the GPU kept busy (the
dispatch alone: host_floor_h200.busy_host_seconds).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

TARGETS = (Workload(2048, d=128, heads=16, causal=True), Workload(1024, d=64, heads=8),
           Workload(4096, d=128, heads=32, batch=2))
OTHERS = tuple(Workload(n, d=d, heads=8) for n, d in ((640, 64), (896, 64), (1152, 128),
                                                       (1408, 128), (1664, 64), (1920, 128),
                                                       (2176, 64), (2432, 128)))


def measure(w: Workload) -> dict[str, Any]:
    """One target's do_bench median, host time and dispatch time, with its kernels' names."""
    import torch
    from host_floor_h200 import busy_host_seconds

    from iosim.calibrate.measure import _tensors, host_seconds, make_runner, time_and_kernels

    impl = get_implementation("flex")
    seconds, kernels = time_and_kernels(impl, w)
    q, k, v = _tensors(w, torch)
    run = make_runner(impl, w, q, k, v)
    return {"workload": {"n": w.n, "d": w.d, "heads": w.heads, "batch": w.batch,
                         "causal": w.causal},
            "time_s": seconds, "kernels": [k["name"][:80] for k in kernels],
            "kernel_s": sum(k["time_s"] for k in kernels),
            "host_s": host_seconds(run, calls=30), "host_busy_s": busy_host_seconds(run, torch)}


def main(argv: list[str]) -> int:
    """`alone INDEX OUT` or `crowded OUT` (the module doc)."""
    import torch

    from iosim.calibrate.env import device_info
    from iosim.calibrate.measure import _tensors, make_runner

    mode, out = argv[0], Path(argv[-1])
    start = time.monotonic()
    record: dict[str, Any] = {"schema": "iosim.flex-host-probe/1", "mode": mode,
                              "device": device_info(), "command": " ".join(argv), "points": []}
    if mode == "alone":
        record["points"].append(measure(TARGETS[int(argv[1])]))
    else:
        impl = get_implementation("flex")
        for w in OTHERS:  # compiled and run once: dynamo keeps each graph
            q, k, v = _tensors(w, torch)
            make_runner(impl, w, q, k, v)()
        torch.cuda.synchronize()
        record["compiled_first"] = len(OTHERS)
        record["points"] = [measure(w) for w in TARGETS]
    record["wall_s"] = time.monotonic() - start
    out.write_text(json.dumps(record, indent=1), encoding="utf-8")
    for p in record["points"]:
        print(mode, p["workload"], {k: p[k] for k in ("time_s", "kernel_s", "host_s",
                                                      "host_busy_s")}, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
