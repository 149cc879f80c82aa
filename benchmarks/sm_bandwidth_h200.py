"""DRAM read bandwidth that k programs reach, one per SM (k below, at and above the SM count).

    cd <repo> && PYTHONPATH=$PWD python3 benchmarks/sm_bandwidth_h200.py OUT.json

A Triton kernel whose grid is k programs; each streams its own contiguous CHUNK bytes (fp16,
BLOCK elements a step, sums them, writes one float). With k ≤ SMs each program has an SM to
itself, so the bytes / time is the bandwidth of k SMs each holding one program of `warps` warps:
the per-SM limit (Little's law: bytes in flight per SM ÷ latency) that a grid below one wave
meets, against the whole GPU's rate at k ≥ 2·SMs. Timed with do_bench (median; it zeroes 256 MB
between calls, so every read comes from DRAM).
"""

from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl

from iosim.calibrate.env import device_info


@triton.jit
def _iosim_stream_kernel(x, out, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    base = x + pid.to(tl.int64) * CHUNK
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, CHUNK, BLOCK):
        acc += tl.load(base + start + tl.arange(0, BLOCK)).to(tl.float32)
    tl.store(out + pid, tl.sum(acc, 0))


def main() -> None:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    chunk = 4 << 20  # elements per program (8 MiB of fp16)
    counts = sorted({1, 2, 4, 8, 16, 33, 66, 99, sms, 2 * sms, 4 * sms})
    x = torch.randn(max(counts) * chunk, dtype=torch.float16, device="cuda")
    out = torch.empty(max(counts), dtype=torch.float32, device="cuda")
    rows = []
    for warps in (4, 8):
        for block in (1024, 4096):
            for k in counts:
                def run(k: int = k, block: int = block, warps: int = warps) -> None:
                    _iosim_stream_kernel[(k,)](x, out, CHUNK=chunk, BLOCK=block, num_warps=warps)
                run()
                ms = triton.testing.do_bench(run, warmup=5, rep=40, return_mode="median")
                gbs = k * chunk * 2 / (ms * 1e-3) / 1e9
                rows.append({"programs": k, "warps": warps, "block": block,
                             "bytes": k * chunk * 2, "time_s": ms * 1e-3, "gb_per_s": gbs,
                             "gb_per_s_per_program": gbs / k})
                print(warps, block, k, f"{gbs:.0f} GB/s", f"{gbs / k:.1f} per program",
                      flush=True)
    record = {"schema": "iosim.sm-bandwidth/1", "device": device_info(), "sm_count": sms,
              "command": " ".join(sys.argv), "rows": rows}
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
