"""The calibration's Triton kernels against torch, on fresh random data with poisoned outputs.

Without a CUDA GPU they run on the CPU under Triton's interpreter (TRITON_INTERPRET=1, small
sizes); on a GPU the same tests run compiled, and the `gpu`-marked ones add real sizes, bf16
(the interpreter's bf16 dot is not supported in Triton 3.6) and the bench's own checks.
"""

from __future__ import annotations

import math
import os

import pytest

# without torch these skip; .ci/run installs torch and triton after the README's commands and runs
# again every file whose tests skipped for want of them
pytestmark = pytest.mark.interpreter
torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
if not GPU:
    # before triton is first imported: triton.language's own jit functions (tl.sum, ...) are
    # decorated at import and must be interpreted too
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")

from iosim.calibrate import CalibrationError  # noqa: E402
from iosim.calibrate import kernels as K  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"
gpu = pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
DTYPES = [torch.float16] + ([torch.bfloat16] if GPU else [])
TOL = {torch.float16: 2e-3, torch.bfloat16: 1e-2}


def rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def nan(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=DEVICE)


def rand(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def reference_attention(q, k, v, causal):  # type: ignore[no-untyped-def]
    n, d = q.shape[-2:]
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(d)
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), -math.inf)
    return torch.softmax(s, dim=-1) @ v.double(), torch.logsumexp(s, dim=-1)


@pytest.mark.parametrize("n", [1000, 4096])
def test_copy_writes_every_element(n: int) -> None:
    src = rand(n, dtype=torch.float16)
    dst = nan(n, dtype=torch.float16)
    K.copy(src, dst, block=1024)
    assert torch.equal(src, dst)


def test_fill_writes_every_element() -> None:
    dst = nan(3000, dtype=torch.float16)
    K.fill(dst, 1.5, block=1024)
    assert bool((dst == 1.5).all())


def test_evict_sums_each_block() -> None:
    buf = rand(3000, dtype=torch.float16)
    out = nan(2, dtype=torch.float32)
    K.evict(buf, out, block=2048)
    ref = torch.stack([buf[:2048].float().sum(), buf[2048:].float().sum()])
    assert torch.allclose(out, ref, rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm_matches_torch(transposed: bool, dtype: torch.dtype) -> None:
    a = rand(3, 64, 32, dtype=dtype)
    b = rand(3, 96, 32, dtype=dtype).transpose(1, 2) if transposed else rand(3, 32, 96, dtype=dtype)
    c = nan(3, 64, 96, dtype=dtype)
    K.bmm(a, b, c, K.MatmulConfig(32, 32, 16, 2, 4, 2))
    assert rel(c, a.double() @ b.double()) < TOL[dtype]


def test_bmm_refuses_sizes_off_the_blocks() -> None:
    a, b, c = rand(1, 60, 32, dtype=torch.float16), rand(1, 32, 64, dtype=torch.float16), nan(
        1, 60, 64, dtype=torch.float16)
    with pytest.raises(K.KernelInputError, match="M = 60 is not a multiple of its block 32"):
        K.bmm(a, b, c, K.MatmulConfig(32, 32, 16, 2, 4, 2))


@pytest.mark.parametrize(("block_m", "block_n"), [(32, 32), (64, 32)])
def test_qk_rows_matches_torch(block_m: int, block_n: int) -> None:
    q, k = rand(2, 64, 32, dtype=torch.float16), rand(2, 96, 32, dtype=torch.float16)
    s = nan(2, 64, 96, dtype=torch.float16)
    K.qk_rows(q, k, s, K.RowsConfig(block_m, block_n, 4, 2))
    assert rel(s, q.double() @ k.double().transpose(1, 2)) < TOL[torch.float16]


@pytest.mark.parametrize("n_cols", [100, 256])
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_rows_matches_torch(n_cols: int, dtype: torch.dtype) -> None:
    s = rand(16, n_cols, dtype=dtype) * 4
    p = nan(16, n_cols, dtype=dtype)
    K.softmax_rows(s, p, 0.125)
    assert rel(p, torch.softmax(s.double() * 0.125, dim=-1)) < TOL[dtype]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("block_m", "block_n", "d"), [(64, 32, 64), (32, 32, 32), (64, 64, 16)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_attention_matches_definition(causal: bool, block_m: int, block_n: int, d: int,
                                            dtype: torch.dtype) -> None:
    heads, n = 3, 128
    q, k, v = (rand(heads, n, d, dtype=dtype) for _ in range(3))
    o, lse = nan(heads, n, d, dtype=dtype), nan(heads, n, dtype=torch.float32)
    K.attention_fwd(q, k, v, o, lse, causal=causal, config=K.AttentionConfig(block_m, block_n, 4, 2))
    ref_o, ref_lse = reference_attention(q, k, v, causal)
    assert rel(o, ref_o) < TOL[dtype]
    assert rel(lse, ref_lse) < (1e-5 if dtype == torch.float16 else 1e-4)


def test_fused_attention_refuses_n_off_the_blocks() -> None:
    q = rand(1, 96, 16, dtype=torch.float16)
    with pytest.raises(K.KernelInputError, match="n = 96 must be a multiple of BLOCK_M = 64"):
        K.attention_fwd(q, q, q, q.clone(), nan(1, 96, dtype=torch.float32), causal=False,
                        config=K.AttentionConfig(64, 32, 4, 2))


def test_a_wrong_output_stops_the_run_before_timing() -> None:
    from iosim.calibrate.bench import require_close

    ref = torch.ones(4, 4)
    with pytest.raises(CalibrationError, match="3 elements unwritten or not finite"):
        require_close("a kernel", torch.tensor([[1.0, math.nan, math.nan, math.nan]] + [[1.0] * 4] * 3),
                      ref, "fp16")
    with pytest.raises(CalibrationError, match=r"relative error 2\.50e-01 > 2e-03"):
        require_close("a kernel", ref * 1.25, ref, "fp16")
    assert require_close("a kernel", ref, ref, "fp16") == 0.0


def test_the_bench_runs_a_tiny_plan_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check of a calibration run, on the CPU (the interpreter) or the GPU, tiny sizes."""
    from iosim.calibrate import bench as B
    from iosim.calibrate.plan import FusedConfig, Plan, Shape

    monkeypatch.setattr(B, "DEVICE", DEVICE)
    monkeypatch.setattr(B, "CHECK_HEADS", 1)
    monkeypatch.setattr(B.Bench, "time", lambda self, fn: (fn(), 1e-3, 1e-3, 1e-3)[1:])
    plan = Plan(quick=True, copy_bytes=1 << 16, matmul_size=256, matmul_dtypes=("fp16",),
                standard=(Shape(128, 32, 1, 2, False),),
                fused=(Shape(128, 32, 1, 2, False), Shape(128, 32, 1, 2, True)),
                fused_configs={32: (FusedConfig(64, 32, 4, 2),)}, warmup_ms=1, rep_ms=1)
    seen = []
    measured = list(B.Bench(plan, seen.append).run())
    kernels = [m.kernel for m in measured]
    assert kernels[:8] == ["copy", "torch_copy", "read", "torch_read", "write", "torch_write",
                           "matmul", "torch_matmul"]
    assert kernels.count("qk") == 2 and kernels.count("attn_fwd") == 2
    assert all(m.rel_error is None or m.rel_error < 2e-3 for m in measured)
    assert len(seen) == len(measured)


# --- on a GPU: real sizes, through the bench's own checks ------------------------------------


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_bench_checks_fused_configs_at_real_size(d: int, causal: bool) -> None:
    from iosim.calibrate.bench import Bench
    from iosim.calibrate.plan import FUSED_CONFIGS, Shape, make_plan

    bench = Bench(make_plan(quick=True))
    bench.time = lambda fn: (1.0, 1.0, 1.0)  # type: ignore[method-assign]  (checks only)
    shape = Shape(2048, d, 1, 4, causal)
    measured = list(bench.fused(shape, FUSED_CONFIGS[d]))
    assert all(m.rel_error is not None and m.rel_error < 2e-3 for m in measured)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("d", [64, 128])
def test_bench_checks_standard_path_at_real_size(d: int) -> None:
    from iosim.calibrate.bench import Bench
    from iosim.calibrate.plan import Shape, make_plan

    bench = Bench(make_plan(quick=True))
    bench.time = lambda fn: (1.0, 1.0, 1.0)  # type: ignore[method-assign]
    measured = list(bench.standard(Shape(2048, d, 1, 4, False)))
    assert [m.kernel for m in measured] == ["qk", "qk", "softmax", "pv"]
    assert all(m.rel_error is not None and m.rel_error < 2e-3 for m in measured)
