"""The Triton backward's launcher floor, measured piece by piece (issue 10, bwd6 gap d).

    python3 benchmarks/launch_floor_h200.py OUTDIR        # OUTDIR/launch-floor-h200.json
    python3 benchmarks/launch_floor_h200.py OUTDIR --quick  # three calls, grids of 1 (bwd7)

fresh5 showed launches × one host figure (45.7 µs) is not the floor (+12 %, +15 %, +88 %).
This times, on the host (time.perf_counter, no synchronisation inside the loop; the kernels
are a few µs so the GPU keeps up with the queue), what one backward call costs and where:
(1) iosim's attention_bwd split at its `between` hook (segment 0 = input checks, buffer
allocation and the preprocess launch; 1 = the dK/dV launch; 2 = the dQ launch; 3 = GQA's
group sum), at tiny N with batch·heads 1 to 64 (grid size) and with GQA (a fourth launch);
(2) one trivial Triton kernel launched with 1, 8, 16 and 24 arguments (the argument count)
and grids of 1 to 8,192 programs; (3) the whole call under triton.testing.do_bench, as the
calibration times it. TRITON_INTERPRET=1 runs it on the CPU (a dry run; its figures mean
nothing).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

REPS = 300


def _trivial_kernels() -> dict[int, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def _iosim_floor1(a):
        tl.store(a + tl.program_id(0) * 0, 1.0)

    @triton.jit
    def _iosim_floor8(a, b, c, d, e, f, g, h):
        tl.store(a + tl.program_id(0) * 0, 1.0)

    @triton.jit
    def _iosim_floor16(a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q):
        tl.store(a + tl.program_id(0) * 0, 1.0)

    @triton.jit
    def _iosim_floor24(a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q,
                       r, s, t, u, v, w, x, y):
        tl.store(a + tl.program_id(0) * 0, 1.0)

    return {1: _iosim_floor1, 8: _iosim_floor8, 16: _iosim_floor16, 24: _iosim_floor24}


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def host_per_call(fn: Any, device: str, reps: int = REPS) -> float:
    """Median over 5 batches of host seconds per call of `fn` (reps calls, one sync a batch)."""
    out = []
    for _ in range(5):
        _sync(device)
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        _sync(device)
        out.append((time.perf_counter() - start) / reps)
    return sorted(out)[2]


def backward_segments(n: int, d: int, heads: int, kv: int, device: str) -> dict[str, Any]:
    """Host seconds of each segment of attention_bwd (split at its `between` hook)."""
    import torch

    from iosim.algorithms.triton_bwd import TRITON_BWD_TILES
    from iosim.calibrate import kernels_bwd as KB
    from iosim.calibrate.bench_bwd import config_of

    cfg = config_of(TRITON_BWD_TILES[d])
    q, o, do = (torch.randn(heads, n, d, device=device, dtype=torch.float16) for _ in range(3))
    k, v = (torch.randn(kv, n, d, device=device, dtype=torch.float16) for _ in range(2))
    lse = torch.zeros(heads, n, device=device, dtype=torch.float32)
    stamps: list[float] = []

    def call() -> None:
        stamps.append(time.perf_counter())
        KB.attention_bwd(q, k, v, o, do, lse, causal=False, config=cfg,
                         between=lambda: stamps.append(time.perf_counter()))
        stamps.append(time.perf_counter())

    for _ in range(10):
        call()
    _sync(device)
    reps = 20 if os.environ.get("TRITON_INTERPRET") else REPS
    whole = host_per_call(call, device, reps)
    stamps.clear()
    for _ in range(reps):
        call()
    _sync(device)
    per = len(stamps) // reps
    rows = [stamps[i * per:(i + 1) * per] for i in range(reps)]
    segments = [sorted(r[s + 1] - r[s] for r in rows)[reps // 2] for s in range(per - 1)]
    record: dict[str, Any] = {"n": n, "d": d, "heads": heads, "kv_heads": kv,
                              "launches": per - 1, "host_per_call_s": whole,
                              "segment_median_s": segments}
    if device == "cuda" and not os.environ.get("TRITON_INTERPRET"):
        from iosim.calibrate.bench_bwd import bench

        record["do_bench_s"] = bench(call)[0]
    return record


def trivial_launches(device: str, quick: bool = False) -> list[dict[str, Any]]:
    import torch

    kernels = _trivial_kernels()
    buf = torch.zeros(1, device=device, dtype=torch.float32)
    out = []
    grids = (1, 8) if os.environ.get("TRITON_INTERPRET") else (1,) if quick else (
        1, 132, 1024, 8192)
    reps = 5 if os.environ.get("TRITON_INTERPRET") else REPS
    for args, kernel in kernels.items():
        for grid in grids:
            def launch(kernel: Any = kernel, args: int = args, grid: int = grid) -> None:
                kernel[(grid,)](*([buf] * args))
            launch()
            out.append({"args": args, "grid": grid,
                        "host_per_launch_s": host_per_call(launch, device, reps)})
    return out


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    argv = [a for a in argv if a != "--quick"]
    out = Path(argv[0] if argv else "launch-floor")
    out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    device = "cuda" if torch.cuda.is_available() else "cpu"
    record: dict[str, Any] = {
        "what": "the Triton backward's launcher floor, piece by piece (bwd6 gap d)",
        "command": "python3 benchmarks/launch_floor_h200.py " + " ".join(argv)
                   + (" --quick" if quick else ""),
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (interpreter)",
        "torch": torch.__version__, "triton": triton.__version__,
        "python": platform.python_version()}
    shapes = [(128, 64, 1, 1), (128, 64, 8, 8), (128, 64, 64, 64), (128, 128, 2, 1),
              (128, 128, 16, 4), (256, 128, 1, 1)]
    if os.environ.get("TRITON_INTERPRET"):
        shapes = shapes[:1] + shapes[3:4]
    elif quick:  # the same call's host speed beside a fresh record (bwd7)
        shapes = shapes[:2] + shapes[3:4]
    record["backward"] = [backward_segments(*s, device) for s in shapes]
    record["trivial"] = trivial_launches(device, quick)
    (out / "launch-floor-h200.json").write_text(json.dumps(record, indent=1))
    for r in record["backward"]:
        print(r["n"], r["d"], r["heads"], r["kv_heads"], f"{r['host_per_call_s'] * 1e6:.1f} us",
              [f"{s * 1e6:.1f}" for s in r["segment_median_s"]], r.get("do_bench_s"))
    for r in record["trivial"]:
        print(r["args"], r["grid"], f"{r['host_per_launch_s'] * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
