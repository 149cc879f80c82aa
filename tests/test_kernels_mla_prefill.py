"""MLA prefill's forward (kernels_mla_prefill: qk head dim ≠ v head dim, any N) against a dense
float64 reference written here, on fresh random data with poisoned outputs (its tiles against
iosim's counts: tests/test_mla_prefill_tiles.py, which needs no torch).

Without a CUDA GPU the kernel runs on the CPU under Triton's interpreter (tiny shapes, fp16: the
interpreter's bf16 dot is not supported in Triton 3.6); on a GPU bf16 runs too.
"""

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

from iosim.calibrate import kernels_mla_prefill as MP  # noqa: E402
from iosim.calibrate.kernels import KernelInputError  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"
SMALL = MP.PrefillConfig(32, 16, 4, 1)


def dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 O and natural-log logsumexp, head by head, from the definition."""
    s = q.double() @ k.double().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(s, -1) @ v.double(), torch.logsumexp(s, -1)


@pytest.mark.parametrize(("n", "d_qk", "d_v", "causal", "dtype"), [
    (50, 48, 32, False, torch.float16),   # 48 = 32 + 16; N not a multiple of either block
    (50, 48, 32, True, torch.float16),
    pytest.param(50, 48, 32, True, torch.bfloat16,
                 marks=pytest.mark.skipif(not GPU, reason="the interpreter has no bf16 dot")),
    (64, 32, 16, True, torch.float16),    # d_qk a power of two: one dot; N a multiple of blocks
])
def test_prefill_matches_dense(n: int, d_qk: int, d_v: int, causal: bool, dtype: torch.dtype
                               ) -> None:
    gen = torch.Generator().manual_seed(n + d_qk + causal)
    heads = 2
    q, k = (torch.randn(heads, n, d_qk, generator=gen) for _ in range(2))
    v = torch.randn(heads, n, d_v, generator=gen)
    o = torch.full((heads, n, d_v), math.nan, dtype=dtype, device=DEVICE)
    lse = torch.full((heads, n), math.nan, dtype=torch.float32, device=DEVICE)
    q_, k_, v_ = (t.to(dtype).to(DEVICE) for t in (q, k, v))
    MP.mla_prefill(q_, k_, v_, o, lse, causal=causal, config=SMALL)
    ref_o, ref_lse = dense(q_.cpu(), k_.cpu(), v_.cpu(), causal)
    tol = 2e-3 if dtype == torch.float16 else 1e-2
    err = float((o.cpu().double() - ref_o).norm() / ref_o.norm())
    assert err < tol
    assert torch.allclose(lse.cpu().double(), ref_lse, atol=1e-3)


def test_head_dims_refused() -> None:
    with pytest.raises(KernelInputError, match="qk head dim 200"):
        MP.split_head_dim(200)
    assert MP.split_head_dim(192) == (128, 64)
    assert MP.split_head_dim(128) == (128, 0)
    q = torch.zeros(1, 16, 48, dtype=torch.float16)
    v = torch.zeros(1, 16, 24, dtype=torch.float16)
    with pytest.raises(KernelInputError, match="v head dim 24"):
        MP.mla_prefill(q, q, v, v.clone(), torch.zeros(1, 16), causal=False, config=SMALL)
