"""What a calibration measures: the ceilings, the standard path and the fused kernel, on a grid.

Attention shapes keep batch · heads · N fixed at 2^18 (16 heads, batch = 2^14 / N), so every
point launches 2^18 / BLOCK_M ≥ 1,024 query-block programs (the H200 has 132 SMs: the kernels
fill the GPU at every N) and Q, K, V and O are 32 MiB (d = 64) or 64 MiB (d = 128) each, about
the size of the L2. The standard path's S and P are then 512 MiB (N = 1,024) to 8 GiB
(N = 16,384): they never fit in L2.

Efficiencies are fitted on N ∈ FIT_N and checked on the other N (the hold-out).
"""

from __future__ import annotations

from iosim.record import Record

TOKENS_TIMES_HEADS = 1 << 18
"""batch · heads · N of every attention point."""
HEADS = 16
FULL_N = (1024, 2048, 4096, 8192, 16384)
FULL_D = (64, 128)
QUICK_N = (1024, 4096)
QUICK_D = (128,)
FIT_N = (1024, 4096, 16384)
"""Efficiencies are fitted on these N; predictions at the others are the hold-out check."""


class FusedConfig(Record):
    """One launch configuration of the fused kernel (no autotuning: each is timed on its own)."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    @property
    def label(self) -> str:
        """"128x64/w8/s3": the tiles, warps and stages."""
        return f"{self.block_m}x{self.block_n}/w{self.num_warps}/s{self.num_stages}"


class Shape(Record):
    """One attention call: batch × heads of N × N attention with head dimension d."""

    n: int
    d: int
    batch: int
    heads: int
    causal: bool
    dtype: str = "fp16"

    @property
    def label(self) -> str:
        """"N=4096 d=64 4x16 full fp16": the shape for people."""
        mask = "causal" if self.causal else "full"
        return f"N={self.n} d={self.d} {self.batch}x{self.heads} {mask} {self.dtype}"


# Block shapes for the fused kernel per head dim; the first is the main configuration (the one
# the time fit uses); the others show the block-size effect. Picked from a sweep of 6 per d on
# the H200 against SDPA (benchmarks/NOTES.md).
FUSED_CONFIGS: dict[int, tuple[FusedConfig, ...]] = {
    64: (FusedConfig(128, 64, 8, 3), FusedConfig(128, 128, 4, 3), FusedConfig(64, 64, 4, 3)),
    128: (FusedConfig(128, 64, 8, 4), FusedConfig(128, 128, 8, 3), FusedConfig(64, 64, 4, 3)),
}
QK_VARIANTS = ("rows", "tiles")
"""S = QKᵀ as row strips (the main one: K streams past an on-chip Q_i) or as 2-D output tiles."""

# Extra points for the L2 model, counted by ncu only (not timed): the standard path with S and P
# small enough to stay in L2, and fused kernels whose per-head K/V approach or exceed L2.
L2_STANDARD = ((1024, 64, 8), (2048, 64, 4), (2048, 64, 8), (4096, 64, 2), (4096, 128, 4))
"""(N, d, batch·heads)"""
L2_FUSED = ((32768, 128, 8, False), (65536, 128, 2, False), (131072, 128, 1, False),
            (131072, 64, 1, True), (65536, 64, 4, False), (65536, 128, 2, True))
"""(N, d, batch·heads, causal)"""


class Plan(Record):
    """What one calibration run measures: the copy size (bytes), matmul size and dtypes, the
    standard path's and the fused kernel's shapes and configurations."""

    quick: bool
    copy_bytes: int
    matmul_size: int
    matmul_dtypes: tuple[str, ...]
    standard: tuple[Shape, ...]
    fused: tuple[Shape, ...]
    fused_configs: dict[int, tuple[FusedConfig, ...]]
    warmup_ms: int
    rep_ms: int

    @property
    def points(self) -> int:
        """How many timed measurements the plan makes (for the progress bar)."""
        ceilings = 6 + 2 * len(self.matmul_dtypes)
        standard = (2 + len(QK_VARIANTS)) * len(self.standard)
        fused = sum(len(self.fused_configs[s.d]) + 1 for s in self.fused)
        return ceilings + standard + fused


def attention_shape(n: int, d: int, causal: bool, dtype: str = "fp16") -> Shape:
    """A shape of N × d whose batch keeps batch · heads · N at the plan's token count."""
    heads = HEADS
    batch = max(1, TOKENS_TIMES_HEADS // (n * heads))
    return Shape(n, d, batch, heads, causal, dtype)


def make_plan(*, quick: bool) -> Plan:
    """The calibration plan: the full grid of N and d, or a few points with `quick`."""
    ns, ds = (QUICK_N, QUICK_D) if quick else (FULL_N, FULL_D)
    standard = tuple(attention_shape(n, d, False) for d in ds for n in ns)
    fused = tuple(attention_shape(n, d, causal) for d in ds for causal in (False, True) for n in ns)
    configs = {d: FUSED_CONFIGS[d][:1] if quick else FUSED_CONFIGS[d] for d in ds}
    return Plan(
        quick=quick,
        copy_bytes=(1 << 30) if quick else (2 << 30),
        matmul_size=8192,
        matmul_dtypes=("fp16",) if quick else ("fp16", "bf16"),
        standard=standard,
        fused=fused,
        fused_configs=configs,
        warmup_ms=10 if quick else 25,
        rep_ms=40 if quick else 100,
    )
