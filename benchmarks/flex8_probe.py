"""What FlexAttention's forward kernel time depends on, one factor at a time (H200, round 8).

    cd <repo> && PYTHONPATH=$PWD python3 benchmarks/flex8_probe.py OUT.json

Each shape is compiled alone and statically, as iosim/calibrate/measure.py runs flex, timed by
do_bench (median) with its kernels' device times (torch.profiler), like the validation sets.
Pairs differ in one thing only:

- `mask`: the same non-causal work with no BlockMask (one sparse block covering every key, as
  flex builds when none is given) and with a BlockMask of 128 × 128 blocks all full (the
  template's full-block loop, reading the next block's index every 128 keys): is there a cost
  per visited sparse block?
- `gqa`: a causal d = 64 call at the GQA ratio 8 of a seen point (24 / 3 heads, N 2,688) and
  the same with 24 KV heads: is the GQA point's fast kernel (41 % under the schedule) GQA's?
- `loops`: causal against non-causal with a full BlockMask at N 4,096 (causal visits about half
  the key blocks): the causal program's second loop and masked diagonal blocks.

Nothing is fitted on this record here; it is read to choose the forward schedule's terms.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

PROBES: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("mask", {"n": 4096, "d": 128, "heads": 8}, "none"),
    ("mask", {"n": 4096, "d": 128, "heads": 8}, "full"),
    ("mask", {"n": 4096, "d": 128, "heads": 8, "causal": True}, "causal"),
    ("gqa", {"n": 2688, "d": 64, "heads": 24, "kv_heads": 3, "causal": True}, "causal"),
    ("gqa", {"n": 2688, "d": 64, "heads": 24, "kv_heads": 24, "causal": True}, "causal"),
)


def run(item: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
    import torch
    import triton
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    from torch.profiler import DeviceType, ProfilerActivity, profile

    from iosim.calibrate.measure import CLEAR_BYTES, FLEX_RECOMPILE_LIMIT, _tensors
    from iosim.inputs.workload import Workload

    group, shape, mask = item
    w = Workload(shape["n"], d=shape["d"], heads=shape["heads"],
                 kv_heads=shape.get("kv_heads"), causal=shape.get("causal", False))
    for limit in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, FLEX_RECOMPILE_LIMIT)
    q, k, v = _tensors(w, torch)
    block = None
    if mask == "full":
        block = create_block_mask(lambda b, h, i, j: i >= 0, None, None, w.n, w.n_kv)
    elif mask == "causal":
        block = create_block_mask(lambda b, h, i, j: j <= i, None, None, w.n, w.n_kv)
    torch._dynamo.reset()  # compiled alone and statically, as measure.py does
    compiled = torch.compile(flex_attention, dynamic=False)
    g = w.group_size

    def call() -> Any:
        return compiled(q, k, v, block_mask=block, enable_gqa=g > 1)

    start = time.monotonic()
    call()
    torch.cuda.synchronize()
    compile_s = time.monotonic() - start
    median_ms = triton.testing.do_bench(call, warmup=10, rep=60, return_mode="median")
    torch.empty(CLEAR_BYTES // 4, dtype=torch.int32, device="cuda").zero_()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    kernels = [{"name": e.name, "time_s": e.device_time * 1e-6} for e in prof.events()
               if e.device_type == DeviceType.CUDA and e.device_time > 0]
    return {"group": group, "workload": shape, "mask": mask, "time_s": median_ms * 1e-3,
            "compile_s": compile_s, "kernels": kernels}


def main() -> None:
    from iosim.calibrate.env import device_info

    record: dict[str, Any] = {"device": device_info(), "command": " ".join(sys.argv),
                              "points": []}
    for item in PROBES:
        record["points"].append(run(item))
        p = record["points"][-1]
        print(p["group"], p["workload"], p["mask"], f"{p['time_s'] * 1e6:.1f} us",
              [(k["name"][:40], round(k["time_s"] * 1e6, 1)) for k in p["kernels"]], flush=True)
        with open(sys.argv[1], "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
