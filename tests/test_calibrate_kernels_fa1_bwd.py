"""Algorithm 4 in Triton (calibrate/kernels_fa1_bwd.py) against torch autograd in fp32.

Under Triton's interpreter on the CPU (TRITON_INTERPRET=1, small sizes, fp16), compiled on a GPU
(bf16 too). Skipped cleanly without torch or triton.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
if not GPU:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton's first import (see test_calibrate_kernels)
pytest.importorskip("triton")

from iosim.calibrate import CalibrationError  # noqa: E402
from iosim.calibrate import bench_bwd as BB  # noqa: E402
from iosim.calibrate import bench_fa1_bwd as BF  # noqa: E402
from iosim.calibrate import kernels_fa1_bwd as FA1  # noqa: E402
from iosim.calibrate.kernels import KernelInputError  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"
DTYPES = ["fp16"] + (["bf16"] if GPU else [])
SMALL = FA1.Fa1Tiles(16, 32)
"""B_r ≠ B_c, so that the causal start ⌊j·B_c/B_r⌋ is not j."""


@pytest.fixture(autouse=True)
def _on_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BB, "DEVICE", DEVICE)


@pytest.mark.parametrize(("n", "d", "heads", "kv_heads", "causal", "tiles"), [
    (64, 32, 2, 2, False, SMALL),    # every block full, several passes over dQ
    (64, 32, 2, 2, True, SMALL),
    (77, 16, 2, 2, True, SMALL),     # masked last blocks (N not a multiple of any tile)
    (70, 16, 4, 2, False, FA1.Fa1Tiles(32, 16)),  # GQA g = 2, B_r > B_c
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_algorithm_4_matches_autograd(n: int, d: int, heads: int, kv_heads: int, causal: bool,
                                      tiles: FA1.Fa1Tiles, dtype: str) -> None:
    point = BB.BwdPoint(n, d, 1, heads, kv_heads, causal, dtype)
    errors = BF.check_flash1(point, tiles)  # raises over the dtype's tolerance
    assert set(errors) == {"dQ", "dK", "dV"}
    assert max(errors.values()) < BB.TOLERANCE[dtype]


def test_missing_row_statistics_are_refused() -> None:
    q, do = (torch.randn(2, 32, 16, dtype=torch.float16) for _ in range(2))
    k, v = (torch.randn(2, 32, 16, dtype=torch.float16) for _ in range(2))
    with pytest.raises(KernelInputError, match="row statistics l and m are missing"):
        FA1.flash1_bwd(q, k, v, q.clone(), do, None, torch.zeros(2, 32), causal=False)


def test_tiles_that_are_not_powers_of_two_are_refused() -> None:
    q, do = (torch.randn(2, 32, 16, dtype=torch.float16) for _ in range(2))
    stats = torch.zeros(2, 32)
    with pytest.raises(KernelInputError, match="powers of two"):
        FA1.flash1_bwd(q, q, q, q, do, stats, stats, causal=False, tiles=FA1.Fa1Tiles(24, 32))


def test_a_wrong_kernel_fails_its_check_before_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = FA1.flash1_bwd

    def off_by_a_bit(*args, **kwargs):  # type: ignore[no-untyped-def]
        dq, dk, dv = real(*args, **kwargs)
        dq.mul_(1.01)
        return dq, dk, dv

    monkeypatch.setattr(FA1, "flash1_bwd", off_by_a_bit)
    with pytest.raises(CalibrationError, match=r"dQ at .* failed its check .*relative error"):
        BF.check_flash1(BB.BwdPoint(32, 16, 1, 1, 1, False), SMALL)
