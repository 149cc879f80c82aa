"""What attention is asked to do: the Workload (sizes, dtype, mask, pass), validated on creation.

Its errors name the parameter in Python's terms (`kv_heads=3 does not divide heads=4`); the
CLI spells them as flags. How the tiled algorithms cut a workload into blocks is tiling.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Literal

from iosim.errors import WorkloadError, arg
from iosim.inputs import decoding, limits
from iosim.inputs.limits import MAX_LENGTH
from iosim.inputs.units import DTYPE_BYTES

Pass = Literal["fwd", "bwd", "fwdbwd"]
PASSES: tuple[str, ...] = ("fwd", "bwd", "fwdbwd")
UNFUSED_OPS: tuple[str, ...] = ("scale", "mask", "dropout")
"""Extra N×N elementwise kernels of an unfused standard pipeline (FlashAttention fuses them)."""


@dataclass(frozen=True, slots=True, init=False)
class Workload:
    """One attention call: batch × query heads of (n × n_kv) attention with head dimension d.

    Causal masking is bottom-right aligned when n != n_kv (query i sees keys j <= i + n_kv - n),
    as in FlashAttention-2 since v2.1, so decoding (n = 1) sees every key.
    """

    n: int
    n_kv: int
    """Key/value length (None, the default, becomes n)."""
    d: int
    heads: int
    kv_heads: int
    """Key/value heads for GQA/MQA (None, the default, becomes heads)."""
    batch: int
    dtype: str
    causal: bool
    pass_: Pass
    unfused: tuple[str, ...]
    sparsity: float
    """Block-sparse FlashAttention (Prop. 4): the fraction s of non-zero blocks, 0 < s <= 1.
    Tiled kernels visit only the blocks of the mask in iosim/algorithms/blockmask.py; standard
    attention stays dense."""
    page_size: int | None = None
    """Paged KV cache: tokens per page, reached through an int32 block table (None: contiguous).
    Rules in iosim/inputs/decoding.py."""
    prefix_len: int | None = None
    suffix_lens: tuple[int, ...] | None = None
    """A shared-prefix decoding batch: request b attends to prefix_len + suffix_lens[b] keys,
    the first prefix_len shared by all (iosim/inputs/decoding.py)."""

    def __init__(self, n: int, n_kv: int | None = None, d: int = 64, heads: int = 1,
                 kv_heads: int | None = None, batch: int = 1, dtype: str = "fp16",
                 causal: bool = False, pass_: Pass = "fwd", unfused: tuple[str, ...] = (),
                 sparsity: float = 1.0, page_size: int | None = None,
                 prefix_len: int | None = None,
                 suffix_lens: tuple[int, ...] | None = None) -> None:
        """Sizes in tokens and heads, `dtype` of Q, K, V, O; raises WorkloadError, naming the
        parameter, for a workload that cannot exist."""
        values = dict(n=n, n_kv=n if n_kv is None else n_kv, d=d, heads=heads,
                      kv_heads=heads if kv_heads is None else kv_heads, batch=batch, dtype=dtype,
                      causal=causal, pass_=pass_, unfused=unfused, sparsity=sparsity,
                      page_size=page_size, prefix_len=prefix_len, suffix_lens=suffix_lens)
        for name, value in values.items():
            object.__setattr__(self, name, value)
        self._validate()

    def _validate(self) -> None:
        for name in ("n", "d", "heads", "batch", "n_kv", "kv_heads"):
            _check_positive_int(name, getattr(self, name))
        for name, high in (("n", MAX_LENGTH), ("n_kv", MAX_LENGTH), ("d", limits.MAX_HEAD_DIM),
                           ("heads", limits.MAX_HEADS), ("kv_heads", limits.MAX_HEADS),
                           ("batch", limits.MAX_BATCH)):
            limits.check_int(name, getattr(self, name), high=high, error=WorkloadError)
        limits.check_workload_size(self.n, self.n_kv, self.d, self.batch, self.heads,
                                   error=WorkloadError)
        if self.heads % self.kv_heads:
            raise WorkloadError(
                f"{arg('kv_heads', self.kv_heads)} does not divide {arg('heads', self.heads)}; "
                f"GQA/MQA needs heads = groups × kv-heads (e.g. "
                f"{arg('kv_heads', _a_divisor(self.heads, self.kv_heads))})"
            )
        if self.dtype not in DTYPE_BYTES:
            raise WorkloadError(f"unknown dtype '{self.dtype}'; use one of {', '.join(DTYPE_BYTES)}",
                                param="dtype")
        if self.pass_ not in PASSES:
            raise WorkloadError(f"unknown pass '{self.pass_}'; use one of {', '.join(PASSES)}",
                                param="pass_")
        bad = [op for op in self.unfused if op not in UNFUSED_OPS]
        if bad:
            raise WorkloadError(f"unknown unfused op '{bad[0]}'; use any of {', '.join(UNFUSED_OPS)}",
                                param="unfused")
        object.__setattr__(self, "unfused", tuple(op for op in UNFUSED_OPS if op in self.unfused))
        if (isinstance(self.sparsity, bool) or not isinstance(self.sparsity, (int, float))
                or not 0 < self.sparsity <= 1):
            raise WorkloadError(f"{arg('sparsity')} must be a fraction of non-zero blocks in (0, 1], "
                                f"got {limits.excerpt(self.sparsity)}; e.g. {arg('sparsity', 0.25)}")
        object.__setattr__(self, "sparsity", float(self.sparsity))
        self._validate_decoding()

    def _validate_decoding(self) -> None:
        object.__setattr__(self, "page_size", decoding.check_page_size(self.page_size))
        if self.page_size is not None and self.sparsity != 1:
            raise WorkloadError(f"a paged KV cache is modelled with a dense mask; drop "
                                f"{arg('sparsity')} or {arg('page_size')}", param="sparsity")
        prefix, suffixes = decoding.check_shared_prefix(
            self.prefix_len, self.suffix_lens, n=self.n, n_kv=self.n_kv, batch=self.batch,
            sparsity=self.sparsity, pass_=self.pass_, page_size=self.page_size)
        object.__setattr__(self, "prefix_len", prefix)
        object.__setattr__(self, "suffix_lens", suffixes)

    @property
    def sparsity_fraction(self) -> tuple[int, int]:
        """s as a fraction p/q (q <= 10^6) so that block-mask counts are exact integers."""
        f = Fraction(self.sparsity).limit_denominator(10**6)
        return f.numerator, f.denominator

    @property
    def element_bytes(self) -> int:
        """Bytes per element of the workload's dtype."""
        return DTYPE_BYTES[self.dtype]

    @property
    def group_size(self) -> int:
        """Query heads per KV head (1 = MHA, heads = MQA)."""
        return self.heads // self.kv_heads

    def describe(self) -> str:
        """One line for headers: batch, heads, N, d, dtype, pass, mask, sparsity."""
        kv = f" (kv {self.n_kv})" if self.n_kv != self.n else ""
        heads = f"{self.heads} heads" + (f" / {self.kv_heads} kv" if self.kv_heads != self.heads else "")
        mask = "causal" if self.causal else "non-causal"
        sparse = f", block-sparse s = {self.sparsity:g}" if self.sparsity != 1 else ""
        return (f"batch {self.batch} × {heads}, N {self.n}{kv}, d {self.d}, {self.dtype}, "
                f"{_PASS_NAMES[self.pass_]}, {mask}{sparse}"
                f"{decoding.describe(self.page_size, self.prefix_len, self.suffix_lens)}")

    def with_(self, **changes: object) -> Workload:
        """A copy with the given fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


_PASS_NAMES = {"fwd": "forward", "bwd": "backward", "fwdbwd": "forward+backward"}


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"{arg(name)} must be a whole number, got {value!r}")
    if value < 1:
        raise WorkloadError(f"{arg(name)} must be at least 1, got {value}")


def _a_divisor(heads: int, near: int) -> int:
    small = [k for k in range(1, math.isqrt(heads) + 1) if heads % k == 0]  # O(√heads)
    divisors = small + [heads // k for k in small]
    return min(divisors, key=lambda k: (abs(k - near), k))
