"""The Triton backward (calibrate/kernels_bwd.py) against torch autograd, on fresh random data.

Without a CUDA GPU it runs on the CPU under Triton's interpreter (TRITON_INTERPRET=1, small
sizes, fp16: the interpreter's bf16 dot is not supported in Triton 3.6); on a GPU the same tests
run compiled, with bf16 too. Skipped cleanly without torch or triton.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
if not GPU:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton's first import (see test_calibrate_kernels)
pytest.importorskip("triton")

from iosim.algorithms.triton_bwd import BackwardTiles  # noqa: E402
from iosim.calibrate import CalibrationError  # noqa: E402
from iosim.calibrate import bench_bwd as BB  # noqa: E402
from iosim.calibrate import kernels_bwd as KB  # noqa: E402
from iosim.calibrate.kernels import KernelInputError  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"
DTYPES = ["fp16"] + (["bf16"] if GPU else [])
SMALL = BackwardTiles(16, 32, 32, 16, 4, 1, 32)
"""Small tiles, so that a short sequence still has several blocks of each kind."""


@pytest.fixture(autouse=True)
def _on_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BB, "DEVICE", DEVICE)


@pytest.mark.parametrize(("n", "d", "heads", "kv_heads", "causal"), [
    (128, 32, 2, 2, False),   # every block full
    (128, 32, 2, 2, True),
    (100, 32, 2, 2, True),    # masked last blocks (N not a multiple of any tile)
    (77, 16, 4, 1, False),    # MQA, uneven
    (96, 64, 4, 2, True),     # GQA g = 2, d = 64
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_matches_autograd(n: int, d: int, heads: int, kv_heads: int, causal: bool,
                                   dtype: str) -> None:
    point = BB.BwdPoint(n, d, 1, heads, kv_heads, causal, dtype)
    errors = BB.check_triton(point, SMALL)  # raises over the dtype's tolerance
    assert set(errors) == {"dQ", "dK", "dV"}
    assert max(errors.values()) < BB.TOLERANCE[dtype]


@pytest.mark.skipif(GPU, reason="interpreter only: the tutorial tiles at d = 128 are slow on CPU")
def test_shipped_tiles_match_autograd_on_a_short_sequence() -> None:
    from iosim.algorithms.triton_bwd import backward_tiles

    point = BB.BwdPoint(130, 64, 1, 1, 1, True)
    assert max(BB.check_triton(point, backward_tiles(64)).values()) < BB.TOLERANCE["fp16"]


def _inputs(n: int = 64, d: int = 16, heads: int = 2, kv_heads: int = 2):  # type: ignore[no-untyped-def]
    q, do = (torch.randn(heads, n, d, dtype=torch.float16) for _ in range(2))
    k, v = (torch.randn(kv_heads, n, d, dtype=torch.float16) for _ in range(2))
    lse = torch.zeros(heads, n, dtype=torch.float32)
    return q, k, v, q.clone(), do, lse


def test_a_missing_logsumexp_is_refused() -> None:
    q, k, v, o, do, _ = _inputs()
    with pytest.raises(KernelInputError, match=r"logsumexp .* is missing"):
        KB.attention_bwd(q, k, v, o, do, None, causal=False)


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: {**t, "lse": t["lse"][:, :10].contiguous()}, "lse must be the forward's"),
    (lambda t: {**t, "k": t["k"][:, :, :8].contiguous(), "v": t["v"][:, :, :8].contiguous()},
     "must have q's n"),
    (lambda t: {**t, "k": torch.randn(3, 64, 16, dtype=torch.float16),
                "v": torch.randn(3, 64, 16, dtype=torch.float16)}, "not a multiple of 3 KV"),
    (lambda t: {**t, "q": t["q"].float(), "o": t["o"].float(), "do": t["do"].float()},
     "fp16 or all bf16"),
])
def test_unsupported_inputs_are_refused(change, message: str) -> None:  # type: ignore[no-untyped-def]
    q, k, v, o, do, lse = _inputs()
    t = change({"q": q, "k": k, "v": v, "o": o, "do": do, "lse": lse})
    with pytest.raises(KernelInputError, match=message):
        KB.attention_bwd(t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"], causal=False)


def test_head_dim_off_the_list_is_refused() -> None:
    q, k, v, o, do, lse = _inputs(d=24)
    with pytest.raises(KernelInputError, match="head dim 24 is not one of"):
        KB.attention_bwd(q, k, v, o, do, lse, causal=False)


def test_a_wrong_kernel_fails_its_check_before_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = KB.attention_bwd

    def off_by_a_bit(*args, **kwargs):  # type: ignore[no-untyped-def]
        dq, dk, dv = real(*args, **kwargs)
        dv.mul_(1.01)
        return dq, dk, dv

    monkeypatch.setattr(KB, "attention_bwd", off_by_a_bit)
    with pytest.raises(CalibrationError, match=r"dV at .* failed its check .*relative error"):
        BB.check_triton(BB.BwdPoint(64, 16, 1, 1, 1, False), SMALL)


@pytest.mark.skipif(GPU, reason="the refusal of a machine without a CUDA GPU")
def test_the_h200_script_refuses_without_a_gpu_in_one_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "backward_h200.py"
    spec = importlib.util.spec_from_file_location("backward_h200", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("backward_h200: no CUDA GPU")
    assert not any((tmp_path / "out").iterdir())  # nothing written
