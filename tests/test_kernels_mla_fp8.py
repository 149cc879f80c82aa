"""MLA absorbed decoding and the per-tensor-descaled (FP8) forward against float64 references
written here, on fresh random data with poisoned outputs (Triton's interpreter without a GPU)."""

from __future__ import annotations

import math
import os

import pytest

pytestmark = pytest.mark.interpreter
torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
if not GPU:
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")

from iosim.calibrate import kernels_mla_fp8 as MF  # noqa: E402
from iosim.calibrate import kernels_variants as KV  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double().cpu() - b.double().cpu()).norm() / b.double().cpu().norm())


@pytest.mark.parametrize("splits", [1, 3])
def test_mla_decode_reads_v_as_the_first_512_latent_columns(splits: int) -> None:
    lengths, heads = [70, 33], 20
    q = torch.randn(len(lengths), heads, 576, dtype=torch.float16, device=DEVICE)
    latents = [torch.randn(n, 576, dtype=torch.float16, device=DEVICE) for n in lengths]
    rows = [c[:, None] for c in latents]
    cache = KV.paged_cache(rows, rows, 16)
    out = MF.mla_buffers(q, splits)
    out.o.fill_(math.nan)
    MF.mla_decode(q, cache, out, splits=splits, config=MF.MlaConfig(16, 16, 4, 1))
    for b, c in enumerate(latents):
        s = q[b].double().cpu() @ c.double().cpu().T * (128 + 64) ** -0.5
        ref = torch.softmax(s, -1) @ c[:, :512].double().cpu()
        assert rel(out.o[b], ref) < 2e-3


def dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("fp8", [False, True])
def test_scaled_forward_applies_the_three_descales(causal: bool, fp8: bool) -> None:
    """Per-tensor quantized Q, K, V (× 3 so the scales are not 1) against float64 attention of
    their dequantized values; e4m3 rounds P to 3 mantissa bits before P·V (2e-2 measured)."""
    heads, n, d = 2, 64, 32
    raw = [3 * torch.randn(heads, n, d) for _ in range(3)]
    if fp8:
        (q, sq), (k, sk), (v, sv) = (MF.quantize(t, torch.float8_e4m3fn) for t in raw)
    else:  # fp16 with a made-up scale on Q: the same descale path
        q, sq, (k, sk), (v, sv) = (raw[0] / 2).half(), 2.0, MF.quantize(raw[1], torch.float16), \
            MF.quantize(raw[2], torch.float16)
    ref = dense(q.double() * sq, k.double() * sk, v.double() * sv, causal)
    o = torch.full((heads, n, d), math.nan, dtype=torch.float16, device=DEVICE)
    MF.attention_scaled(q.to(DEVICE), k.to(DEVICE), v.transpose(1, 2).contiguous().to(DEVICE), o,
                        torch.tensor([sq, sk, sv], dtype=torch.float32, device=DEVICE),
                        causal=causal, config=MF.ScaledConfig(32, 16, 4, 1))
    assert rel(o, ref) < (4e-2 if fp8 else 2e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_block_scaled_forward_reads_a_scale_per_tile(causal: bool) -> None:
    """FA3 §3.3 block quantization: Q in blocks of B_r rows, K and V in blocks of B_c rows, each
    with its own fp32 scale (the blocks drawn at different magnitudes, so that one per-tensor
    scale would be wrong), against float64 attention of the block-dequantized values (tolerance
    as the per-tensor e4m3 test: P is rounded to e4m3 before P·V)."""
    heads, n, d, bm, bn = 2, 64, 32, 32, 16
    spread = torch.tensor([0.25, 4.0, 1.0, 16.0]).repeat_interleave(n // 4)[None, :, None]
    raw = [3 * torch.randn(heads, n, d) * spread for _ in range(3)]
    (q, sq), (k, sk), (v, sv) = (MF.quantize_blocks(t, torch.float8_e4m3fn, b)
                                 for t, b in zip(raw, (bm, bn, bn), strict=True))
    assert len(set(sk[0].tolist())) > 1  # the blocks' scales differ
    ref = MF.reference_block_scaled(q, k, v, (sq, sk, sv), (bm, bn), causal)
    o = torch.full((heads, n, d), math.nan, dtype=torch.float16, device=DEVICE)
    MF.attention_block_scaled(q.to(DEVICE), k.to(DEVICE),
                              v.transpose(1, 2).contiguous().to(DEVICE), o,
                              (sq.to(DEVICE), sk.to(DEVICE), sv.to(DEVICE)), causal=causal,
                              config=MF.ScaledConfig(bm, bn, 4, 1))
    assert rel(o, ref) < 4e-2
    # the same data under one scale per tensor is another function: the per-block path is used
    flat = MF.reference_scaled(q, k, v, (float(sq.mean()), float(sk.mean()), float(sv.mean())),
                               causal)
    assert rel(flat, ref) > 0.1
