"""MLA prefill's measurement points (benchmarks/mla_prefill_h200.py): build one on fresh random
data, check it against torch fp32 before anything is timed, hand back the launch.

A point is a dict of iosim's workload terms (n, d = the qk head dim, d_v, heads, batch, dtype,
causal; n_kv = n, kv_heads = heads) plus `kind` "mla_prefill" and `impl`:
    triton          kernels_mla_prefill.mla_prefill (our kernel, PrefillConfig's tiles)
    sdpa-efficient  torch's scaled_dot_product_attention restricted to the memory-efficient
                    backend, which takes a V head dim ≠ Q's (PyTorch sdp_utils.cpp
                    check_head_dim_size_mem_efficient: q and k equal, v only aligned)
    sdpa-cudnn      the same restricted to cuDNN's backend (refused by torch or cuDNN where it
                    cannot run the shape: the run records the reason)
SDPA's flash backend requires one head dim for q, k and v (sdp_utils.cpp
check_head_dim_size_flash), so it is not a point: the run records its refusal once.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from iosim.calibrate import kernels_mla_prefill as MP
from iosim.calibrate.variants import DTYPES, Built, Point, require_close

SDPA_BACKENDS = {"sdpa-efficient": "EFFICIENT_ATTENTION", "sdpa-cudnn": "CUDNN_ATTENTION",
                 "sdpa-flash": "FLASH_ATTENTION"}
CHECK_HEADS = 2
"""Heads of batch 0 checked against torch fp32 (every row): an n × n fp32 score matrix each."""


def mla_prefill_point(pid: str, batch: int, n: int, heads: int, causal: bool, dtype: str,
                      impl: str = "triton", d: int = 192, d_v: int = 128) -> Point:
    """One MLA prefill point (DeepSeek-V3's head dims by default)."""
    return {"id": pid, "kind": "mla_prefill", "impl": impl, "batch": batch, "n": n, "n_kv": n,
            "heads": heads, "kv_heads": heads, "d": d, "d_v": d_v, "causal": causal,
            "dtype": dtype}


def _sdpa_call(point: Point, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Any:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    backend = getattr(SDPBackend, SDPA_BACKENDS[point["impl"]])

    def call() -> torch.Tensor:
        with sdpa_kernel([backend]):
            return scaled_dot_product_attention(q, k, v, is_causal=point["causal"])
    return call


def build(point: Point, generator: torch.Generator, device: str = "cuda",
          config: MP.PrefillConfig | None = None) -> Built:
    """The point's Q, K (batch·heads, n, d) and V (…, d_v) drawn fresh, the implementation run
    once on NaN-poisoned outputs and checked on CHECK_HEADS heads against torch fp32
    (WrongOutput if not within the dtype's tolerance), its launch handed back."""
    dtype = DTYPES[point["dtype"]]
    b, h, n, d, d_v = point["batch"], point["heads"], point["n"], point["d"], point["d_v"]
    q, k = (torch.randn(b * h, n, d, dtype=dtype, device=device, generator=generator)
            for _ in range(2))
    v = torch.randn(b * h, n, d_v, dtype=dtype, device=device, generator=generator)
    if point["impl"] == "triton":
        cfg = config or MP.PrefillConfig()
        o = torch.full((b * h, n, d_v), math.nan, dtype=dtype, device=device)
        lse = torch.full((b * h, n), math.nan, dtype=torch.float32, device=device)

        def launch() -> Any:
            return MP.mla_prefill(q, k, v, o, lse, causal=point["causal"], config=cfg)
        kernels = launch()
        out = o
        info: dict[str, Any] = {"block_m": cfg.block_m, "block_n": cfg.block_n,
                                "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
        graphable = True
    else:
        call = _sdpa_call(point, *(t.view(b, h, n, -1) for t in (q, k, v)))
        out = call().reshape(b * h, n, d_v)
        launch, kernels, info, graphable = call, [], {}, False
    ref = MP.reference(q[:CHECK_HEADS], k[:CHECK_HEADS], v[:CHECK_HEADS], point["causal"])
    err = require_close(point, f"{point['impl']} O", out[:CHECK_HEADS], ref)
    return Built(point, launch, kernels, err, info, graphable)
