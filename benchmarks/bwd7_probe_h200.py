"""bwd7's diagnostic call (issue 10): write-back counters and the launcher floor's d = 128 cost.

    python3 benchmarks/bwd7_probe_h200.py OUTDIR [--deadline-s 80]   # OUTDIR/bwd7-probe.json

Nothing here is judged: every point is a seen shape (fresh5/fresh6) or a diagnostic twin of one,
and the record is for finding causes, never for judging a rule.

1. Launcher (host time, time.perf_counter): iosim's dK/dV kernel alone at N = 128, one head,
   compiled for d 64 and 128 with 4 and 8 warps (the shipped tiles: d 64 four warps, d 128
   eight), with each compiled kernel's registers, spills, shared memory and cubin size; the
   same call timed over 100 and 300 calls (a launch queue that fills makes the host wait on the
   GPU); and the trivial one-store kernel with 8 arguments at 4 and 8 warps.
2. ncu with the write/atomic/reduction sectors (ncu_bwd.WRITE_METRICS) on: the protocol alone
   (evict, evict); Algorithm 4 causal at fill 0.36-0.59 of the L2 (fresh6's misses) and its
   non-causal twins at N 11,000 and 4,500 (the same footprint, twice the re-writes of
   dQ); the Triton backward's misses (GQA d 64 N 12,500, N 160) kernel by kernel; SDPA's
   d = 64 GQA backward (bwd_sum_dkdv −23.5 %) and eager at N 1,500 causal (scale/dQ/dK).
TRITON_INTERPRET=1 runs part 1 on the CPU (a dry run at d 16 and 32, which the
interpreter runs: its figures mean nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.launch_floor_h200 import _sync, host_per_call

CONFIGS = ((64, 4, 3), (64, 8, 3), (128, 8, 3), (128, 4, 3))
"""(d, warps, stages) of the dK/dV kernel probed (the shipped: d 64 4 warps, d 128 8 warps)."""


def _meta(compiled: Any) -> dict[str, Any]:
    """What a compiled Triton kernel says of itself (registers, spills, shared memory, cubin)."""
    out: dict[str, Any] = {}
    with contextlib.suppress(Exception):  # the interpreter's kernels have no handles
        compiled._init_handles()  # Triton loads the cubin (and sets n_regs) lazily
    for name in ("n_regs", "n_spills"):
        try:
            out[name] = int(getattr(compiled, name))
        except Exception:  # interpreter or an older Triton: not there
            out[name] = None
    md = getattr(compiled, "metadata", None)
    for name in ("shared", "num_warps", "num_stages", "global_scratch_size"):
        out[name] = getattr(md, name, None) if md is not None else None
    asm = getattr(compiled, "asm", {}) or {}
    out["cubin_bytes"] = len(asm["cubin"]) if "cubin" in asm else None
    return out


def dkdv_launches(device: str) -> list[dict[str, Any]]:
    import torch

    from iosim.calibrate import kernels_bwd as KB
    from iosim.calibrate.kernels import LOG2E

    interp = bool(os.environ.get("TRITON_INTERPRET"))
    n, rows = 128, []
    for d, warps, stages in ((16, 4, 1), (32, 4, 1)) if interp else CONFIGS:
        q, k, v, do, dk, dv = (torch.randn(1, n, d, device=device, dtype=torch.float16)
                               for _ in range(6))
        lse, delta = (torch.zeros(1, n, device=device, dtype=torch.float32) for _ in range(2))
        block_m1, block_n1 = (16, 32) if interp else (64, 64) if d == 64 else (64, 128)

        def launch(d: int = d, warps: int = warps, stages: int = stages, q: Any = q, k: Any = k,
                   v: Any = v, do: Any = do, dk: Any = dk, dv: Any = dv, lse: Any = lse,
                   delta: Any = delta, block_m1: int = block_m1, block_n1: int = block_n1
                   ) -> Any:
            return KB._iosim_bwd_dkdv_kernel[(1, 1)](
                q, k, v, do, lse, delta, dk, dv, 0.1, 0.1 * LOG2E, n, 1, q.stride(0),
                q.stride(1), k.stride(0), k.stride(1), dk.stride(0), dk.stride(1),
                HEAD_DIM=d, BLOCK_M1=block_m1, BLOCK_N1=block_n1, CAUSAL=False, EVEN_N=True,
                num_warps=warps, num_stages=stages)

        compiled = launch()
        _sync(device)
        reps = (5, 5) if interp else (100, 300)
        rows.append({"d": d, "warps": warps, "stages": stages, **_meta(compiled),
                     **{f"host_per_launch_{r}_s": host_per_call(launch, device, r) for r in reps}})
        print(rows[-1], flush=True)
    return rows


def whole_calls(device: str) -> list[dict[str, Any]]:
    """attention_bwd at N 128, one head, d 64 and 128 (shipped tiles), over 50/100/300 calls."""
    import torch

    from iosim.algorithms.triton_bwd import TRITON_BWD_TILES, BackwardTiles
    from iosim.calibrate import kernels_bwd as KB
    from iosim.calibrate.bench_bwd import config_of

    interp = bool(os.environ.get("TRITON_INTERPRET"))
    rows = []
    for d in (16, 32) if interp else (64, 128):
        cfg = config_of(BackwardTiles(16, 32, 32, 16, 4, 1, 32) if interp
                        else TRITON_BWD_TILES[d])
        q, o, do, k, v = (torch.randn(1, 128, d, device=device, dtype=torch.float16)
                          for _ in range(5))
        lse = torch.zeros(1, 128, device=device, dtype=torch.float32)

        def call(q: Any = q, k: Any = k, v: Any = v, o: Any = o, do: Any = do, lse: Any = lse,
                 cfg: Any = cfg) -> None:
            KB.attention_bwd(q, k, v, o, do, lse, causal=False, config=cfg)

        call()
        row: dict[str, Any] = {"d": d}
        for reps in (2,) if interp else (50, 100, 300):
            row[f"host_per_call_{reps}_s"] = host_per_call(call, device, reps)
        rows.append(row)
        print(row, flush=True)
    return rows


def trivial_warps(device: str) -> list[dict[str, Any]]:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _iosim_floor_w(a, b, c, d, e, f, g, h):
        tl.store(a + tl.program_id(0) * 0, 1.0)

    buf = torch.zeros(1, device=device, dtype=torch.float32)
    out = []
    for warps in (4, 8):
        def launch(warps: int = warps) -> Any:
            return _iosim_floor_w[(1,)](*([buf] * 8), num_warps=warps)
        launch()
        reps = 5 if os.environ.get("TRITON_INTERPRET") else 300
        out.append({"warps": warps, "host_per_launch_s": host_per_call(launch, device, reps)})
        print(out[-1], flush=True)
    return out


def ncu_spec() -> list[dict[str, Any]]:
    from iosim.algorithms.triton_bwd import TRITON_BWD_TILES
    from iosim.calibrate.bench_bwd import BwdPoint as Pt
    from iosim.record import asdict

    fa1 = {64: {"block_r": 64, "block_c": 64, "num_warps": 4, "num_stages": 1},
           128: {"block_r": 64, "block_c": 64, "num_warps": 8, "num_stages": 1}}
    spec: list[dict[str, Any]] = [{"id": "null", "what": "null"}]
    for p in (Pt(11000, 64, 1, 4, 4, True), Pt(11000, 64, 1, 4, 4, False),
              Pt(8000, 64, 1, 6, 3, True, "bf16"), Pt(4500, 128, 1, 8, 8, True),
              Pt(4500, 128, 1, 8, 8, False)):
        spec.append({"id": p.id, "what": "flash1", "point": p.fields(), "tiles": fa1[p.d]})
    for p in (Pt(12500, 64, 1, 8, 2, True, "bf16"), Pt(160, 64, 1, 2, 2, False)):
        spec.append({"id": p.id, "what": "triton", "point": p.fields(), "isolate": True,
                     "tiles": asdict(TRITON_BWD_TILES[p.d])})
    spec.append({"id": "null2", "what": "null"})
    p = Pt(2200, 64, 1, 8, 4, False, "bf16")
    spec.append({"id": p.id, "what": "sdpa", "point": p.fields()})
    p = Pt(1500, 128, 2, 6, 6, True)
    spec.append({"id": p.id, "what": "eager", "point": p.fields()})
    return spec


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--deadline-s", type=float, default=80.0,
                    help="ncu is stopped this many seconds after it starts")
    ap.add_argument("--no-ncu", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    device = "cuda" if torch.cuda.is_available() else "cpu"
    record: dict[str, Any] = {
        "what": "bwd7's diagnostics: the launcher's d = 128 cost, write-back counters",
        "command": "python3 benchmarks/bwd7_probe_h200.py " + " ".join(argv),
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (interpreter)",
        "torch": torch.__version__, "triton": triton.__version__,
        "python": platform.python_version()}
    started = time.time()
    record["dkdv_launch"] = dkdv_launches(device)
    record["whole_call"] = whole_calls(device)
    record["trivial_warps"] = trivial_warps(device)
    record["launcher_s"] = time.time() - started
    (out / "bwd7-probe.json").write_text(json.dumps(record, indent=1))
    if device == "cuda" and not args.no_ncu:
        from iosim.calibrate.ncu_bwd import WRITE_METRICS, collect

        record["counters"] = collect(ncu_spec(), log=out / "ncu.log", timeout_s=args.deadline_s,
                                     metrics=WRITE_METRICS)
        print("ncu:", record["counters"]["status"], flush=True)
    record["wall_s"] = time.time() - started
    (out / "bwd7-probe.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main(sys.argv[1:]))
