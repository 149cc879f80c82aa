"""The MLA-decode and FP8-forward measurement points (benchmarks/variants_h200.py, item 4):
build, check against float64, hand back the launch (as calibrate/variants.py does for the rest).

    mla   absorbed decoding over a paged latent cache: `heads` query heads, one latent KV head of
          d = 576 (kv_lora_rank 512 + rope 64), d_v = 512, latent_kv, `splits` KV splits
    fp8   the fused forward with per-tensor descales (fp8_scales "tensor"), dtype fp8_e4m3 or fp16
          through the same kernel, batch · heads folded into one head axis
"""

from __future__ import annotations

import math
from typing import Any

import torch

from iosim.calibrate import kernels_mla_fp8 as MF
from iosim.calibrate import kernels_variants as KV
from iosim.calibrate.variants import DTYPES, Built, Point, WrongOutput, rel_error
from iosim.record import Record

FP8_DTYPES = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}
FP8_TOLERANCE = {"fp8_e4m3": 4e-2, "fp8_e5m2": 8e-2}
"""FP8 against the float64 attention of the dequantized inputs: P is rounded to the input format
(e4m3: 3 mantissa bits, e5m2: 2) before P·V; e4m3 measured 2e-2 under Triton's interpreter
(tests/test_kernels_variants.py), 5.4e-3 to 5.9e-3 on the H200; e5m2's relative rounding step is
twice e4m3's, so its bound is twice as wide."""


def _close(point: Point, what: str, out: torch.Tensor, ref: torch.Tensor, tol: float) -> float:
    err = rel_error(out, ref)
    if not err <= tol:
        raise WrongOutput(f"{point['id']}: {what} relative error {err:.3g} > {tol}")
    return err


class MlaProblem(Record, frozen=False):
    """An MLA decode point's queries, paged latent cache and float64 reference."""
    point: Point
    q: torch.Tensor
    cache: KV.KVCache
    ref_o: torch.Tensor
    config: MF.MlaConfig

    def build(self, splits: int) -> Built:
        """Checked MLA decode at `splits` splits (outputs poisoned first)."""
        out = MF.mla_buffers(self.q, splits)
        out.o.fill_(math.nan)
        kernels = MF.mla_decode(self.q, self.cache, out, splits=splits, config=self.config)
        tol = {"fp16": 2e-3, "bf16": 1e-2}[self.point["dtype"]]
        err = _close({**self.point, "id": f"{self.point['id']} splits {splits}"}, "MLA O", out.o,
                     self.ref_o, tol)

        def launch() -> Any:
            return MF.mla_decode(self.q, self.cache, out, splits=splits, config=self.config)
        return Built({**self.point, "splits": splits}, launch, kernels, err)


def mla_problem(point: Point, generator: torch.Generator, device: str = "cuda",
                config: MF.MlaConfig | None = None) -> MlaProblem:
    """An MLA point's inputs: latent rows drawn once, paged, V = their first 512 columns."""
    dtype = DTYPES[point["dtype"]]
    b, heads, n_kv, d = point["batch"], point["heads"], point["n_kv"], point["d"]
    q = torch.randn(b, heads, d, dtype=dtype, device=device, generator=generator)
    latents = [torch.randn(n_kv, d, dtype=dtype, device=device, generator=generator)
               for _ in range(b)]
    ref = MF.reference_mla(q, latents)
    rows = [c[:, None] for c in latents]
    cache = KV.paged_cache(rows, rows, point["page_size"], generator=generator)
    cache.v = cache.k  # V is the first 512 columns of the latent rows: no V cache of its own
    return MlaProblem(point, q, cache, ref, config or MF.MlaConfig())


def build_fp8(point: Point, generator: torch.Generator, device: str = "cuda",
              config: MF.ScaledConfig | None = None) -> Built:
    """Q, K, V drawn in fp32 (× 3, so the scales are not 1), quantized per tensor (or per block,
    `fp8_scales` "block": build_fp8_blocks)."""
    if point.get("fp8_scales") == "block":
        return build_fp8_blocks(point, generator, device, config)
    heads, n, d = point["batch"] * point["heads"], point["n"], point["d"]
    dtype = FP8_DTYPES.get(point["dtype"], torch.float16)
    raw = [3 * torch.randn(heads, n, d, device=device, generator=generator) for _ in range(3)]
    (q, sq), (k, sk), (v, sv) = (MF.quantize(t, dtype) for t in raw)
    del raw
    v_t = v.transpose(1, 2).contiguous()
    descales = torch.tensor([sq, sk, sv], dtype=torch.float32, device=device)
    o = torch.full((heads, n, d), math.nan, dtype=torch.float16, device=device)
    cfg = config or MF.ScaledConfig()
    kernels = MF.attention_scaled(q, k, v_t, o, descales, causal=point["causal"], config=cfg)
    # the check: 2 heads, every row (a float64 n × n score matrix per head)
    ref = MF.reference_scaled(q[:2], k[:2], v[:2], (sq, sk, sv), point["causal"])
    tol = FP8_TOLERANCE[point["dtype"]] if dtype != torch.float16 else 2e-3
    err = _close(point, "scaled O", o[:2], ref, tol)

    def launch() -> Any:
        return MF.attention_scaled(q, k, v_t, o, descales, causal=point["causal"], config=cfg)
    return Built(point, launch, kernels, err,
                 {"block_m": cfg.block_m, "block_n": cfg.block_n, "num_warps": cfg.num_warps,
                  "num_stages": cfg.num_stages, "scales": [sq, sk, sv]})


def build_fp8_blocks(point: Point, generator: torch.Generator, device: str = "cuda",
                     config: MF.ScaledConfig | None = None) -> Built:
    """FA3 §3.3 block quantization: Q per B_r-row block, K and V per B_c-row block, each block
    drawn at its own magnitude (0.25-16 × a unit normal, so that the scales differ), the fp32
    scales read from HBM by the kernel (one per Q_i program, one with every K_j and V_j)."""
    heads, n, d = point["batch"] * point["heads"], point["n"], point["d"]
    dtype = FP8_DTYPES[point["dtype"]]
    cfg = config or MF.ScaledConfig()
    mags = torch.tensor([0.25, 4.0, 1.0, 16.0], device=device)
    raw = []
    for block in (cfg.block_m, cfg.block_n, cfg.block_n):
        pick = torch.randint(0, 4, (heads, n // block, 1, 1), device=device, generator=generator)
        x = torch.randn(heads, n // block, block, d, device=device, generator=generator)
        raw.append((x * mags[pick]).reshape(heads, n, d))
    (q, sq), (k, sk), (v, sv) = (MF.quantize_blocks(t, dtype, b) for t, b in zip(
        raw, (cfg.block_m, cfg.block_n, cfg.block_n), strict=True))
    del raw
    v_t = v.transpose(1, 2).contiguous()
    o = torch.full((heads, n, d), math.nan, dtype=torch.float16, device=device)
    scales = (sq, sk, sv)
    kernels = MF.attention_block_scaled(q, k, v_t, o, scales, causal=point["causal"], config=cfg)
    ref = MF.reference_block_scaled(q[:2], k[:2], v[:2], (sq[:2], sk[:2], sv[:2]),
                                    (cfg.block_m, cfg.block_n), point["causal"])
    err = _close(point, "block-scaled O", o[:2], ref, FP8_TOLERANCE[point["dtype"]])

    def launch() -> Any:
        return MF.attention_block_scaled(q, k, v_t, o, scales, causal=point["causal"],
                                         config=cfg)
    return Built(point, launch, kernels, err,
                 {"block_m": cfg.block_m, "block_n": cfg.block_n, "num_warps": cfg.num_warps,
                  "num_stages": cfg.num_stages, "scale_elements": sum(t.numel() for t in scales)})
