"""The MLA prefill points benchmarks/mla_prefill_h200.py times (DeepSeek-V3's head dims: qk 192 =
128 nope + 64 rope, v 128; config.json qk_nope_head_dim, qk_rope_head_dim, v_head_dim).

FIT is what the first device call measured and what any constant is fitted on; FRESH was
written with FIT, before either call, and is judged after the fit is frozen (tag mla5-frozen),
with no shape equal to a FIT shape. Both vary every axis the acceptance names: 128 heads (one
GPU) and the 16 or fewer a tensor-parallel shard keeps, batch · heads · query blocks below one
wave of 132 SMs, N not a power of two (masked last blocks), causal and not, fp16 and bf16, K
and V (batch · heads · N · 320 · 2 bytes) far beyond the 60 MiB L2 and within it.
Each shape runs on our Triton kernel ("triton") and on torch SDPA's backends that take
d_v ≠ d (variants_mla_prefill.SDPA_BACKENDS).
"""

from __future__ import annotations

from iosim.calibrate.variants import Point
from iosim.calibrate.variants_mla_prefill import mla_prefill_point

IMPLS = ("triton", "sdpa-efficient", "sdpa-cudnn")

_FIT_SHAPES = [
    # id, batch, n, heads, causal, dtype
    ("mlap-f-b1-4096-h128-c", 1, 4096, 128, True, "fp16"),      # K/V 336 MB
    ("mlap-f-b2-2000-h128", 2, 2000, 128, False, "bf16"),       # N % 64 = 16; K/V 328 MB
    ("mlap-f-b1-1000-h16-c", 1, 1000, 16, True, "fp16"),        # 8 × 16 = 128 programs < 1 wave
    ("mlap-f-b4-6144-h16-c", 4, 6144, 16, True, "bf16"),        # a TP-8 shard; K/V 252 MB
    ("mlap-f-b1-12000-h32", 1, 12000, 32, False, "fp16"),       # K/V 246 MB
    ("mlap-f-b16-500-h8", 16, 500, 8, False, "fp16"),           # ragged, K/V 41 MB (fits L2)
    ("mlap-f-b1-2500-h4-c", 1, 2500, 4, True, "bf16"),          # 20 × 4 = 80 programs
]
_FRESH_SHAPES = [
    ("mlap-j-b1-8192-h128-c", 1, 8192, 128, True, "bf16"),      # K/V 671 MB
    ("mlap-j-b3-3000-h128", 3, 3000, 128, False, "fp16"),       # N % 64 = 56; K/V 737 MB
    ("mlap-j-b1-1500-h10", 1, 1500, 10, False, "fp16"),         # 12 × 10 = 120 programs
    ("mlap-j-b2-9000-h16-c", 2, 9000, 16, True, "fp16"),        # K/V 184 MB
    ("mlap-j-b8-1200-h16-c", 8, 1200, 16, True, "bf16"),        # K/V 98 MB
    ("mlap-j-b1-20000-h8", 1, 20000, 8, False, "bf16"),         # K/V 102 MB
    ("mlap-j-b32-333-h4-c", 32, 333, 4, True, "fp16"),          # ragged, K/V 27 MB (fits L2)
]

_FRESH2_SHAPES = [
    # var6's judgement of `compare --profile measured`'s MLA prefill model (our kernel only),
    # written and committed before its device call (tag var6-frozen); none an earlier shape
    ("mlap-k-b1-6000-h128-c", 1, 6000, 128, True, "fp16"),      # N % 64 = 48; K/V 492 MB
    ("mlap-k-b2-5000-h64", 2, 5000, 64, False, "bf16"),         # K/V 410 MB
    ("mlap-k-b1-700-h24-c", 1, 700, 24, True, "fp16"),          # 6 × 24 = 144 programs, 2 waves
    ("mlap-k-b4-2222-h16", 4, 2222, 16, False, "bf16"),         # N % 64 = 46; K/V 91 MB
    ("mlap-k-b1-3333-h6-c", 1, 3333, 6, True, "bf16"),          # 27 × 6 = 162 programs
    ("mlap-k-b24-400-h8", 24, 400, 8, False, "fp16"),           # ragged, K/V 49 MB (fits L2)
    ("mlap-k-b1-16384-h20-c", 1, 16384, 20, True, "fp16"),      # K/V 210 MB
]


def _points(shapes: list[tuple[str, int, int, int, bool, str]],
            impls: tuple[str, ...] = IMPLS) -> list[Point]:
    return [mla_prefill_point(f"{pid}-{impl}", b, n, h, causal, dtype, impl)
            for pid, b, n, h, causal, dtype in shapes for impl in impls]


FIT = _points(_FIT_SHAPES)
FRESH = _points(_FRESH_SHAPES)
TINY = [mla_prefill_point("tiny-mlap-50-c", 1, 50, 2, True, "fp16", "triton", d=48, d_v=32),
        mla_prefill_point("tiny-mlap-70", 2, 70, 1, False, "fp16", "triton", d=48, d_v=32)]
"""A dry run's points (CPU, Triton's interpreter; SDPA's CUDA backends do not run there)."""
FRESH2 = _points(_FRESH2_SHAPES, ("triton",))
"""var6's fresh set: our kernel only, judged by `iosim compare --profile measured` itself
(measured.mla_prefill_time, fitted on FIT alone; benchmarks/mla_prefill_compare.py --fresh2)."""
SETS = {"fit": FIT, "fresh": FRESH, "fresh2": FRESH2}
