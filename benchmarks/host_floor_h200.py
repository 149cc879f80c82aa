"""The host floor of a call, measured directly (issue 11, round 5): each implementation at tiny
shapes whose kernels take a few microseconds, so that do_bench's median is the floor itself.

    cd <repo> && PYTHONPATH=$PWD python3 benchmarks/host_floor_h200.py OUT.json [SECONDS]

For every implementation and every path its Python code takes (prefill, causal, causal with
n != n_kv, GQA, FA2's split-KV path, a decode step, d = 256) it records: do_bench's median
(`time_s`: the call as the validation sets time it, 256 MB zeroed before each call), the host
time of one call with the GPU idle (`host_s`, measure.py:host_seconds), the host time of one
call while the GPU is kept busy by a sleep kernel so that no call waits for the GPU
(`host_busy_s`: the dispatch alone, median of 30), the kernels it launches (torch.profiler) and
do_bench's 256 MB clear alone (`clear_s`). Nothing is fitted here.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from iosim.calibrate.env import device_info
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

IMPLS = ("sdpa-flash", "iosim-triton", "sdpa-efficient", "sdpa-cudnn", "torch-naive", "flex")
PATHS = {
    "prefill": Workload(128, d=128, heads=1),
    "prefill_d64": Workload(128, d=64, heads=1),
    "causal": Workload(128, d=128, heads=1, causal=True),
    "gqa": Workload(128, d=128, heads=8, kv_heads=2),
    "split": Workload(128, n_kv=4096, d=128, heads=1),
    "chunk_causal": Workload(128, n_kv=512, d=128, heads=1, causal=True),
    "decode": Workload(1, n_kv=1024, d=128, heads=8, kv_heads=2),
    "decode_mha": Workload(1, n_kv=1024, d=128, heads=8),
    "decode_d256": Workload(1, n_kv=1024, d=256, heads=8, kv_heads=2),
    "prefill_d256": Workload(128, d=256, heads=1),
}
FLEX_PATHS = ("prefill", "decode_mha")
"""flex compiles per shape: two paths only."""


def busy_host_seconds(run: Any, torch: Any, calls: int = 30) -> float:
    """Median host time of one call with the GPU busy (a sleep kernel queued first, long enough
    for all the calls): the dispatch alone, never stalled by the GPU."""
    run()
    torch.cuda.synchronize()
    torch.cuda._sleep(100_000_000)  # ~50 ms of GPU cycles at 1.98 GHz: longer than the calls
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return sorted(times)[len(times) // 2]


def main() -> None:
    import torch
    import triton

    from iosim.calibrate.measure import CLEAR_BYTES, _tensors, host_seconds, make_runner, time_and_kernels

    out_path = sys.argv[1]
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    start = time.monotonic()
    clear = torch.empty(CLEAR_BYTES // 4, dtype=torch.int32, device="cuda")
    record: dict[str, Any] = {"schema": "iosim.host-floor/1", "device": device_info(),
                              "command": " ".join(sys.argv),
                              "clear_s": triton.testing.do_bench(clear.zero_, warmup=10, rep=50,
                                                                 return_mode="median") * 1e-3,
                              "points": []}
    for name in IMPLS:
        impl = get_implementation(name)
        for path, w in PATHS.items():
            if name == "flex" and path not in FLEX_PATHS:
                continue
            if time.monotonic() - start > budget:
                record["stopped_early"] = f"budget {budget:.0f} s at {name} {path}"
                break
            entry: dict[str, Any] = {"impl": name, "path": path, "workload": {
                "n": w.n, "n_kv": w.n_kv, "d": w.d, "heads": w.heads, "kv_heads": w.kv_heads,
                "batch": w.batch, "dtype": w.dtype, "causal": w.causal}}
            try:
                impl.check_shape(w.d, w.dtype, gqa=w.group_size > 1)
                entry["time_s"], entry["kernels"] = time_and_kernels(impl, w)
                q, k, v = _tensors(w, torch)
                run = make_runner(impl, w, q, k, v)
                entry["host_s"] = host_seconds(run, calls=30)
                entry["host_busy_s"] = busy_host_seconds(run, torch)
            except Exception as exc:  # a refusal is recorded, not fatal
                entry["refused"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            record["points"].append(entry)
            print(name, path, {k: entry.get(k) for k in ("time_s", "host_s", "host_busy_s",
                                                          "refused")}, flush=True)
            with open(out_path, "w", encoding="utf-8") as f:
                json.dump(record, f, indent=1)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
