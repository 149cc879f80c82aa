"""Two hardware facts the decoding time model needs, measured apart from any attention kernel
(issue 14, benchmarks/variants_h200.py's section "microbench"):

    launch cost   empty Triton kernels launched back to back inside one CUDA graph, as the
                  decode kernels are timed: graph replay time ÷ launches, at grids of 1, 132
                  and 1,024 programs. Cascade launches three kernels where split-KV launches
                  one or two; each launch costs this much before any byte moves.
    L2 bandwidth  programs that read 16 KiB tiles (64 rows × 128 fp16 columns, a split-KV key
                  block) of a buffer that fits in the L2, again and again, so that every read
                  after the first hits in L2: bytes requested ÷ time. Split-KV over a shared
                  prefix re-reads every request's copy of the prefix in just this way; only the
                  first copy comes from DRAM.

Each L2 configuration reads `reads` tiles per program, tile t of program p at
    (start(p) + t) mod tiles,  start(p) = (p mod G) · 8   with G streams,
or start(p) = p · reads where G = 0 (every program its own stretch), and sums them into one fp32
per program (so the loads are not optimised away). G = 64 is split-KV over a shared prefix: 8 KV
heads × 8 splits give 64 streams of key blocks, and the program of every request reads one of
them, its neighbours in the grid (the other requests) reading the same tiles at about the same
time. The rate the decoding time model charges (chosen before the run) is that configuration's:
the split kernel's tile, warps and residency (1,056 programs, 8 per SM: the kernel's 38 KiB of
shared memory allow 5, so every SM is full), G = 64. The roof (the largest rate over all
configurations) is recorded beside it.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl


@triton.jit
def _iosim_empty_kernel(flag_ptr, out_ptr):
    # never true on the device (flag is 0): the launch, its programs' start and exit, nothing else
    if tl.load(flag_ptr) != 0:
        tl.store(out_ptr + tl.program_id(0), 1.0)


@triton.jit
def _iosim_l2_read_kernel(x_ptr, out_ptr, reads, tiles, streams,
                          ROWS: tl.constexpr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    acc = tl.zeros((ROWS, COLS), dtype=tl.float32)
    start = pid * reads
    if streams > 0:
        start = (pid % streams) * 8
    for t in range(0, reads):
        tile = (start + t) % tiles
        acc += tl.load(x_ptr + tile.to(tl.int64) * (ROWS * COLS) + offs).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc))


def start_tile(program: int, reads: int, streams: int) -> int:
    """The first tile program `program` reads (the kernel's rule)."""
    return (program % streams) * 8 if streams > 0 else program * reads


def _graph_of(fn: Any, count: int) -> Any:
    """A CUDA graph of `count` calls of fn (warmed up on a side stream first)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(count):
            fn()
    return graph


def launch_cost(device: str = "cuda", grids: tuple[int, ...] = (1, 132, 1024),
                launches: int = 64) -> list[dict[str, Any]]:
    """Per-launch time of an empty kernel, `launches` of them back to back in one graph."""
    flag = torch.zeros(1, dtype=torch.int32, device=device)
    out = torch.zeros(max(grids), dtype=torch.float32, device=device)
    rows = []
    for grid in grids:
        def fn(grid: int = grid) -> Any:
            return _iosim_empty_kernel[(grid,)](flag, out, num_warps=4)
        if device != "cuda":
            fn()
            rows.append({"grid": grid, "launches": launches, "per_launch_s": 0.0})
            continue
        graph = _graph_of(fn, launches)
        median, p20, p80 = triton.testing.do_bench(graph.replay, warmup=10, rep=50,
                                                   quantiles=[0.5, 0.2, 0.8])
        rows.append({"grid": grid, "launches": launches,
                     "per_launch_s": median * 1e-3 / launches,
                     "per_launch_p20_s": p20 * 1e-3 / launches,
                     "per_launch_p80_s": p80 * 1e-3 / launches})
    return rows


L2_CONFIGS = (
    # (buffer MiB, programs, reads per program, streams G, warps); the first is the model's
    (8, 1056, 256, 64, 4),
    (8, 1056, 256, 0, 4),
    (8, 1056, 256, 1, 4),
    (24, 1056, 256, 64, 4),
    (24, 264, 1024, 0, 4),
    (8, 2112, 128, 64, 8),
)
"""1,056 programs = 8 per SM of 132; 264 = 2 per SM; buffers of 8 and 24 MiB, well inside the
60 MiB L2."""
MODEL_CONFIG = 0


def l2_bandwidth(device: str = "cuda", configs: tuple[tuple[int, int, int, int, int], ...]
                 = L2_CONFIGS) -> list[dict[str, Any]]:
    """Bytes requested ÷ time of each L2 configuration (each run warm: its buffer already read
    once, so only the first pass of a timed replay can miss; do_bench's flush before each repeat
    is not used here — the graph replays the kernel 8 times and the first is discarded by
    taking (8 − 1) of 8 runs' time difference)."""
    rows_, cols = 64, 128
    tile_bytes = rows_ * cols * 2
    rows = []
    for mib, programs, reads, streams, warps in configs:
        tiles = mib * 2**20 // tile_bytes
        if device != "cuda":
            tiles, programs, reads = 4, 3, 5
        x = torch.randn(tiles * rows_ * cols, dtype=torch.float16, device=device)
        out = torch.empty(programs, dtype=torch.float32, device=device)

        def fn(x: torch.Tensor = x, out: torch.Tensor = out, programs: int = programs,
               reads: int = reads, tiles: int = tiles, streams: int = streams,
               warps: int = warps) -> Any:
            return _iosim_l2_read_kernel[(programs,)](x, out, reads, tiles, streams,
                                                      ROWS=rows_, COLS=cols, num_warps=warps)
        fn()
        # the check: every program's sum against the same tiles summed here
        tile_sums = x.view(tiles, -1).float().sum(1)
        expect = torch.stack([tile_sums[[(start_tile(p, reads, streams) + t) % tiles
                                         for t in range(reads)]].sum()
                              for p in range(programs)])
        close = bool(torch.allclose(out, expect, rtol=1e-3, atol=1e-1))
        if device != "cuda":
            rows.append({"buffer_mib": mib, "streams": streams, "check_ok": close})
            continue
        one, eight = _graph_of(fn, 1), _graph_of(fn, 8)
        t1 = triton.testing.do_bench(one.replay, warmup=10, rep=50, return_mode="median")
        t8 = triton.testing.do_bench(eight.replay, warmup=10, rep=50, return_mode="median")
        requested = programs * reads * tile_bytes
        per_run = (t8 - t1) * 1e-3 / 7
        rows.append({"buffer_mib": mib, "programs": programs, "reads": reads,
                     "streams": streams, "num_warps": warps, "check_ok": close,
                     "bytes": requested,
                     "time_s": per_run, "bytes_per_s": requested / per_run,
                     "single_run_s": t1 * 1e-3})
        del x, out
    return rows


def measure(device: str = "cuda") -> dict[str, Any]:
    """Both facts: the model's L2 rate (MODEL_CONFIG), the roof (the largest L2 rate) and the
    launch cost at 132 programs."""
    launches = launch_cost(device)
    l2 = l2_bandwidth(device)
    rates = [r.get("bytes_per_s") for r in l2]
    at_132 = next(r["per_launch_s"] for r in launches if r["grid"] == 132)
    return {"launch": launches, "l2": l2,
            "l2_model_bytes_per_s": rates[MODEL_CONFIG],
            "l2_roof_bytes_per_s": max((r for r in rates if r), default=None),
            "launch_cost_s": at_132,
            "rule": "the model's L2 rate = configuration 0 (the split kernel's tile, warps and "
                    "residency, 64 streams); launch cost = empty kernels of 132 programs in one "
                    "graph (both chosen before the run)"}
