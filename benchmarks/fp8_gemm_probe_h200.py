"""The H200's FP8 GEMM ceilings beside fp16's (fp8mla, issue 14): what a Triton `tl.dot` reaches
on e4m3 and e5m2 operands, and cuBLAS through torch._scaled_mm, at 8192³.

    PYTHONPATH=$PWD python3 benchmarks/fp8_gemm_probe_h200.py OUT.json

A ceiling, not a fit: it says how far the fused forward's fitted FP8 matmul rate
(configs/gpus/h200.yaml measured.peak_flops.fp8) sits below what the tensor cores do in a GEMM.
B is stored (N, K), K contiguous, for both dots (the layout Hopper's FP8 wgmma wants for its
second operand). On a CPU (TRITON_INTERPRET=1) it runs a 128³ check only.
"""

from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _gemm(a_ptr, b_ptr, c_ptr, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + rn[:, None] * K + (k + rk)[None, :])
        acc = tl.dot(a, tl.trans(b), acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def triton_rate(dtype: torch.dtype, size: int, cfg: tuple[int, int, int, int, int]) -> float:
    bm, bn, bk, warps, stages = cfg
    a = torch.randn(size, size, device=DEVICE).to(dtype)
    b = torch.randn(size, size, device=DEVICE).to(dtype)
    c = torch.empty(size, size, dtype=torch.float16, device=DEVICE)

    def run() -> None:
        _gemm[(size // bm, size // bn)](a, b, c, size, size, BM=bm, BN=bn, BK=bk,
                                        num_warps=warps, num_stages=stages)
    run()
    ref = a.float() @ b.float().T
    err = float((c.float() - ref).abs().max() / ref.abs().max())
    if err > 2e-2:
        raise SystemExit(f"triton gemm {dtype} wrong: {err}")
    if DEVICE == "cpu":
        return float("nan")
    t = triton.testing.do_bench(run, warmup=25, rep=100)
    return 2 * size**3 / (t * 1e-3)


def scaled_mm_rate(dtype: torch.dtype, size: int) -> float:
    a = torch.randn(size, size, device=DEVICE).to(dtype)
    b = torch.randn(size, size, device=DEVICE).to(dtype).T  # column-major second operand
    one = torch.ones((), device=DEVICE)
    t = triton.testing.do_bench(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                         out_dtype=torch.bfloat16),
                                warmup=25, rep=100)
    return 2 * size**3 / (t * 1e-3)


def main(argv: list[str]) -> int:
    size = 8192 if DEVICE == "cuda" else 128
    configs = [(128, 128, 128, 8, 3), (128, 256, 128, 8, 3)]
    if DEVICE == "cpu":
        configs = [(32, 32, 32, 4, 2)]
    out: dict = {"size": size, "torch": torch.__version__, "triton": triton.__version__,
                 "device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu",
                 "triton_tflops": {}, "scaled_mm_tflops": {}}
    for name, dt in (("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2),
                     ("fp16", torch.float16)):
        for cfg in configs:
            try:
                r = triton_rate(dt, size, cfg)
            except Exception as e:
                r = f"failed: {type(e).__name__}: {str(e)[:120]}"
            out["triton_tflops"][f"{name} {cfg}"] = r if isinstance(r, str) else r / 1e12
            print(name, cfg, out["triton_tflops"][f"{name} {cfg}"], flush=True)
    if DEVICE == "cuda":
        for name, dt in (("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2)):
            try:
                out["scaled_mm_tflops"][name] = scaled_mm_rate(dt, size) / 1e12
            except Exception as e:
                out["scaled_mm_tflops"][name] = f"failed: {type(e).__name__}: {str(e)[:120]}"
            print("scaled_mm", name, out["scaled_mm_tflops"][name], flush=True)
    with open(argv[0] if argv else "fp8-gemm-probe.json", "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
