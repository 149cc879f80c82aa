"""First look at the H200 before the calibration run (kept for the record; see benchmarks/NOTES.md).

    python3 benchmarks/h200_probe.py OUTDIR [fused,ncu,standard,timing]

fused     fused-kernel block configurations vs torch SDPA (flash backend), fp16, N 4096, 16384
ncu       DRAM/L2 bytes of copies of several sizes, the standard path (warm and isolated, S
          larger and smaller than L2) and the fused kernel (also N = 131,072: K/V exceed L2)
standard  the standard path's kernel configurations
timing    do_bench (zeroes 256 MB between repeats) vs a read-only L2 flush, on short kernels
Each section appends to OUTDIR/probe.json as it finishes.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton.testing

from iosim.calibrate import kernels as K
from iosim.calibrate import ncu
from iosim.calibrate.bench import matmul_config, reference_attention, rel_error
from iosim.calibrate.env import device_info
from iosim.record import asdict

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
SECTIONS = (sys.argv[2] if len(sys.argv) > 2 else "fused,ncu,standard,timing").split(",")
RESULTS: dict[str, Any] = {"device": device_info()}


def save() -> None:
    (OUT / "probe.json").write_text(json.dumps(RESULTS, indent=1))


def bench(fn: Callable[[], Any], rep: int = 60) -> float:
    return float(triton.testing.do_bench(fn, warmup=15, rep=rep, return_mode="median")) * 1e-3


def rand(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float16, device="cuda")


FUSED_CONFIGS = {
    128: [(128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 3), (128, 128, 8, 2), (128, 64, 4, 3),
          (64, 64, 4, 3)],
    64: [(128, 64, 4, 3), (128, 64, 4, 4), (128, 128, 8, 3), (128, 128, 4, 3), (128, 64, 8, 3),
         (64, 64, 4, 3)],
}


def fused_one(n: int, d: int) -> list[dict[str, Any]]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    bh = (1 << 18) // n
    q, k, v = rand(bh, n, d), rand(bh, n, d), rand(bh, n, d)
    o = torch.empty_like(q)
    lse = torch.empty(bh, n, dtype=torch.float32, device="cuda")
    q4, k4, v4 = (t.view(bh // 16, 16, n, d) for t in (q, k, v))
    rows = []
    for causal in (False, True):
        def sdpa(causal: bool = causal) -> Any:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q4, k4, v4,
                                                                        is_causal=causal)

        t_ref = bench(sdpa)
        flops = 4 * bh * n * n * d / (2 if causal else 1)
        ref_o, _ = reference_attention(q[:2], k[:2], v[:2], causal)
        for bm, bn, w, st in FUSED_CONFIGS[d]:
            cfg = K.AttentionConfig(bm, bn, w, st)
            try:
                K.attention_fwd(q[:2], k[:2], v[:2], o[:2], lse[:2], causal=causal, config=cfg)
                err = rel_error(o[:2], ref_o)
                t = bench(lambda cfg=cfg, causal=causal: K.attention_fwd(
                    q, k, v, o, lse, causal=causal, config=cfg))
            except Exception as exc:  # record and go on: this is a probe
                print(f"config {cfg.label} d={d} failed: {exc!r}"[:300], flush=True)
                continue
            rows.append(dict(n=n, d=d, causal=causal, cfg=cfg.label, err=err, t=t,
                             tflops=flops / t / 1e12, sdpa_tflops=flops / t_ref / 1e12,
                             ratio=t_ref / t))
            print(f"fused d={d} n={n} causal={causal} {cfg.label}: {flops / t / 1e12:6.1f} TF "
                  f"(sdpa {flops / t_ref / 1e12:6.1f}) ratio {t_ref / t:.2f} err {err:.1e}",
                  flush=True)
    return rows


def section_fused() -> None:
    rows = []
    for d in (128, 64):
        for n in (4096, 16384):
            rows += fused_one(n, d)
            torch.cuda.empty_cache()
    RESULTS["fused"] = rows


def section_ncu() -> None:
    spec: list[dict[str, Any]] = []
    for mib in (8, 24, 48, 96, 1024):
        spec.append({"id": f"copy/{mib}MiB", "what": "copy", "elements": mib << 19})
    for n, d, bh, iso in [(1024, 64, 256, False), (1024, 64, 256, True), (1024, 64, 8, False),
                          (1024, 64, 8, True), (4096, 128, 64, False), (2048, 64, 4, False)]:
        spec.append({"id": f"standard/n{n}/d{d}/bh{bh}/{'iso' if iso else 'warm'}",
                     "what": "standard", "n": n, "d": d, "batch": bh, "heads": 1, "isolate": iso})
    for n, d, bh, causal, c in [
            (1024, 64, 256, False, (128, 64, 4, 3)), (4096, 128, 64, False, (128, 64, 8, 3)),
            (4096, 128, 64, False, (64, 64, 4, 3)), (16384, 128, 16, False, (128, 64, 8, 3)),
            (16384, 128, 16, True, (128, 64, 8, 3)), (65536, 128, 2, False, (128, 64, 8, 3)),
            (131072, 128, 1, False, (128, 64, 8, 3)), (131072, 64, 1, True, (128, 64, 4, 3))]:
        spec.append({"id": f"fused/n{n}/d{d}/bh{bh}/{'causal' if causal else 'full'}/{c[0]}x{c[1]}",
                     "what": "fused", "n": n, "d": d, "batch": bh, "heads": 1, "causal": causal,
                     "block_m": c[0], "block_n": c[1], "num_warps": c[2], "num_stages": c[3]})
    t0 = time.time()
    counters = ncu.collect(spec, log=OUT / "ncu-probe.log")
    print(f"ncu: {counters.status} ({time.time() - t0:.0f} s) {counters.version}", flush=True)
    for r in counters.rows:
        print(f"ncu {r.id:34s} {r.kernel:8s} {r.role:6s} read {r.dram_read_bytes / 2**20:9.1f} MiB "
              f"write {r.dram_write_bytes / 2**20:9.1f} MiB  L2 {r.l2_bytes / 2**20:10.1f} MiB",
              flush=True)
    RESULTS["ncu"] = {"status": counters.status, "version": counters.version,
                      "command": counters.command,
                      "rows": [asdict(r) for r in counters.rows]}


def standard_one(n: int, d: int) -> list[dict[str, Any]]:
    bh = (1 << 18) // n
    q, k, v = rand(bh, n, d), rand(bh, n, d), rand(bh, n, d)
    s = torch.empty(bh, n, n, dtype=torch.float16, device="cuda")
    p = torch.empty_like(s)
    o = torch.empty_like(q)
    sbytes = s.numel() * 2
    mm_bytes = sbytes + 2 * q.numel() * 2
    rows = []

    def record(what: str, t: float, nbytes: int) -> None:
        rows.append(dict(n=n, d=d, what=what, t=t, gbps=nbytes / t / 1e9))
        print(f"std d={d} n={n} {what}: {t * 1e6:.0f} us {nbytes / t / 1e9:.0f} GB/s", flush=True)

    for label, cfg in [("qk 128x128 w8 s3", matmul_config("qk", d)),
                       ("qk 128x256 w8 s3", K.MatmulConfig(128, 256, min(64, d), 8, 8, 3)),
                       ("qk 128x128 w4 s3", K.MatmulConfig(128, 128, min(64, d), 8, 4, 3))]:
        record(label, bench(lambda cfg=cfg: K.bmm(q, k.transpose(1, 2), s, cfg)), mm_bytes)
    record("softmax", bench(lambda: K.softmax_rows(s.view(-1, n), p.view(-1, n), 0.1)), 2 * sbytes)
    for label, cfg in [("pv default", matmul_config("pv", d)),
                       ("pv 128xd k64 w4 s4", K.MatmulConfig(128, d, 64, 8, 4, 4)),
                       ("pv 64xd k64 w4 s3", K.MatmulConfig(64, d, 64, 8, 4, 3)),
                       ("pv 128xd k128 w8 s3", K.MatmulConfig(128, d, 128, 8, 8, 3))]:
        record(label, bench(lambda cfg=cfg: K.bmm(p, v, o, cfg)), mm_bytes)
    return rows


def section_standard() -> None:
    rows = []
    for d in (64, 128):
        for n in (1024, 16384):
            rows += standard_one(n, d)
            torch.cuda.empty_cache()
    RESULTS["standard"] = rows


def section_timing() -> None:
    flush = rand(128 << 20)  # 256 MiB, read only
    partials = torch.empty(flush.numel() // 8192 + 1, dtype=torch.float32, device="cuda")

    def bench_clean(fn: Callable[[], Any], reps: int = 200) -> float:
        for _ in range(10):
            fn()
        times = []
        for _ in range(reps):
            K.evict(flush, partials)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e-3)
        return sorted(times)[len(times) // 2]

    n, d, bh = 1024, 64, 256
    q, k, v = rand(bh, n, d), rand(bh, n, d), rand(bh, n, d)
    o = torch.empty_like(q)
    lse = torch.empty(bh, n, dtype=torch.float32, device="cuda")
    cfg = K.AttentionConfig(128, 64, 4, 3)
    s = torch.empty(bh, n, n, dtype=torch.float16, device="cuda")
    p = torch.empty_like(s)
    K.bmm(q, k.transpose(1, 2), s, matmul_config("qk", d))
    src = rand(32 << 20)
    dst = torch.empty_like(src)
    rows = []
    for name, fn in [("fused n1024 d64", lambda: K.attention_fwd(q, k, v, o, lse, causal=False,
                                                                  config=cfg)),
                     ("softmax n1024", lambda: K.softmax_rows(s.view(-1, n), p.view(-1, n), 0.1)),
                     ("copy 64MiB", lambda: K.copy(src, dst))]:
        a, b = bench(fn), bench_clean(fn)
        rows.append(dict(name=name, do_bench=a, clean=b))
        print(f"timing {name}: do_bench {a * 1e6:.1f} us, read-only flush {b * 1e6:.1f} us",
              flush=True)
    RESULTS["timing"] = rows


for section in SECTIONS:
    start = time.time()
    globals()[f"section_{section}"]()
    print(f"section {section} took {time.time() - start:.0f} s", flush=True)
    save()
print("probe done", flush=True)
