"""What attention is asked to do: the Workload (sizes, dtype, mask, pass), validated on creation.

Its errors name the parameter in Python's terms (`kv_heads=3 does not divide heads=4`); the
CLI spells them as flags. How the tiled algorithms cut a workload into blocks is tiling.py."""

from __future__ import annotations

import math
from typing import Literal

from iosim.errors import IosimError, WorkloadError, arg
from iosim.inputs import api_values, decoding, excerpts, limits
from iosim.inputs.limits import MAX_LENGTH
from iosim.inputs.units import DTYPE_BYTES, FP8_DTYPES, FP8_OUTPUT_DTYPE
from iosim.record import Record, replace

Pass = Literal["fwd", "bwd", "fwdbwd"]
PASSES: tuple[str, ...] = ("fwd", "bwd", "fwdbwd")
UNFUSED_OPS: tuple[str, ...] = ("scale", "mask", "dropout")
"""Extra N×N elementwise kernels of an unfused standard pipeline (FlashAttention fuses them)."""
PACKINGS: tuple[str, ...] = ("varlen", "document")
"""Workload.packing: FlashAttention-2 varlen blocks, or FlexAttention's document mask."""
FP8_SCALES: tuple[str, ...] = ("tensor", "block")
"""Granularity of FP8 descale factors: one per (batch, KV head) of each of Q, K, V (as
FlashAttention-3's q_descale/k_descale/v_descale), or one per block of rows of each."""


class Workload(Record, init=False):
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
    window: int | None
    """Sliding-window (local) attention: query i sits at key position p_i = i + n_kv − n; causal,
    it sees the W keys p_i − W < j <= p_i (Hugging Face `sliding_window = W`, FlashAttention-2
    `window_size = (W − 1, 0)`); non-causal, the keys |j − p_i| < W (FA2 `window_size =
    (W − 1, W − 1)`). None: no window. docs/variants-masks.md has the mappings."""
    seqlens: tuple[int, ...] | None
    """Packed variable-length sequences (FlashAttention varlen `cu_seqlens`): sum(seqlens) == n
    == n_kv, batch 1; attention stays within a sequence (causal and window apply inside each).
    None: one sequence of n tokens per batch element."""
    packing: str
    """How kernels cut packed sequences into blocks: "varlen" (FlashAttention-2 varlen: each
    sequence from its own first token, blocks never straddle two) or "document" (FlexAttention's
    document mask over one packed sequence: blocks straddle, a straddling block is visited)."""
    d_v: int
    """Head dimension of V, O, dO and dV (None, the default, becomes d); d stays the Q·K head
    dimension (MLA prefill: d = 192, d_v = 128)."""
    latent_kv: bool
    """MLA absorbed decoding: K and V are one latent cache tensor of one KV head, V its first
    d_v columns, so V is never read from HBM apart from K (needs kv_heads = 1 and d > d_v)."""
    fp8_scales: str | None
    """FP8 descale factors read from HBM: "tensor" or "block" (FP8_SCALES); needs an fp8_e4m3 or
    fp8_e5m2 dtype. None with such a dtype becomes "tensor"."""
    page_size: int | None
    """Paged KV cache: tokens per page, reached through an int32 block table (None: contiguous).
    Rules in iosim/inputs/decoding.py."""
    prefix_len: int | None
    suffix_lens: tuple[int, ...] | None
    """A shared-prefix decoding batch: request b attends to prefix_len + suffix_lens[b] keys,
    the first prefix_len shared by all (iosim/inputs/decoding.py)."""

    def __init__(self, n: int, n_kv: int | None = None, d: int = 64, heads: int = 1,
                 kv_heads: int | None = None, batch: int = 1, dtype: str = "fp16",
                 causal: bool = False, pass_: Pass = "fwd", unfused: tuple[str, ...] = (),
                 sparsity: float = 1.0, window: int | None = None,
                 seqlens: tuple[int, ...] | None = None, packing: str = "varlen",
                 d_v: int | None = None,
                 latent_kv: bool = False, fp8_scales: str | None = None,
                 page_size: int | None = None, prefix_len: int | None = None,
                 suffix_lens: tuple[int, ...] | None = None) -> None:
        """Sizes in tokens and heads, `dtype` of Q, K, V (and O, except for FP8); raises
        WorkloadError, naming the parameter, for a workload that cannot exist."""
        for field, given, choices in (("dtype", dtype, tuple(DTYPE_BYTES)),
                                      ("pass_", pass_, PASSES), ("packing", packing, PACKINGS),
                                      ("fp8_scales", fp8_scales, (None, *FP8_SCALES))):
            if not isinstance(given, str) and not (given is None and None in choices):
                # a list or an array here would reach `in` tests that raise TypeError
                raise WorkloadError(f"unknown {arg(field)} {excerpts.excerpt(given)}; use one of "
                                    f"{', '.join(c for c in choices if c)}", param=field)
        if fp8_scales is None and dtype in FP8_DTYPES:
            fp8_scales = "tensor"
        # numpy's ints and floats (np.arange, array indexing) become Python ones; a flag must be
        # a bool (causal="no" is truthy: taken as True it would count a causal mask)
        whole = api_values.as_whole
        n, n_kv, d, heads, kv_heads, batch = (whole(n), whole(n_kv), whole(d), whole(heads),
                                              whole(kv_heads), whole(batch))
        window, d_v, page_size, prefix_len = (whole(window), whole(d_v), whole(page_size),
                                              whole(prefix_len))
        causal = api_values.check_flag("causal", causal, error=WorkloadError)
        latent_kv = api_values.check_flag("latent_kv", latent_kv, error=WorkloadError)
        unfused = unfused_names(unfused)
        sparsity = api_values.as_real(sparsity)
        if type(suffix_lens).__name__ == "ndarray":  # its entries; a 0-d array its one number
            suffix_lens = suffix_lens.tolist()  # type: ignore[union-attr]
        values = dict(n=n, n_kv=n if n_kv is None else n_kv, d=d, heads=heads,
                      kv_heads=heads if kv_heads is None else kv_heads, batch=batch, dtype=dtype,
                      causal=causal, pass_=pass_, unfused=unfused, sparsity=sparsity,
                      window=window, seqlens=seqlens, packing=packing,
                      d_v=d if d_v is None else d_v, latent_kv=latent_kv, fp8_scales=fp8_scales,
                      page_size=page_size, prefix_len=prefix_len, suffix_lens=suffix_lens)
        for name, value in values.items():
            object.__setattr__(self, name, value)
        self._validate()

    def _validate(self) -> None:
        for name in ("n", "d", "heads", "batch", "n_kv", "kv_heads", "d_v"):
            _check_positive_int(name, getattr(self, name))
        for name, high in (("n", MAX_LENGTH), ("n_kv", MAX_LENGTH), ("d", limits.MAX_HEAD_DIM),
                           ("d_v", limits.MAX_HEAD_DIM),
                           ("heads", limits.MAX_HEADS), ("kv_heads", limits.MAX_HEADS),
                           ("batch", limits.MAX_BATCH)):
            api_values.check_int(name, getattr(self, name), high=high, error=WorkloadError)
        if self.heads % self.kv_heads:
            raise WorkloadError(
                f"{arg('kv_heads', self.kv_heads)} does not divide {arg('heads', self.heads)}; "
                f"GQA/MQA needs heads = groups × KV heads (e.g. "
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
            from iosim.inputs.suggest import did_you_mean  # difflib: only for a mistake

            raise WorkloadError(f"unknown unfused op '{bad[0]}'.{did_you_mean(bad[0], UNFUSED_OPS)}"
                                f" Use any of {', '.join(UNFUSED_OPS)}", param="unfused")
        object.__setattr__(self, "unfused", tuple(op for op in UNFUSED_OPS if op in self.unfused))
        if (isinstance(self.sparsity, bool) or not isinstance(self.sparsity, (int, float))
                or not 0 < self.sparsity <= 1):
            raise WorkloadError(f"{arg('sparsity')} must be a fraction of non-zero blocks in (0, 1], "
                                f"got {excerpts.excerpt(self.sparsity)}; e.g. {arg('sparsity', 0.25)}")
        object.__setattr__(self, "sparsity", float(self.sparsity))
        if self.sparsity_fraction[0] == 0:  # s = 1e-9 was counted as s = 0/1: no block visited,
            raise WorkloadError(  # and a causal flash2's utilisation 0 timed it at inf s
                f"{arg('sparsity', excerpts.excerpt(self.sparsity))} is below the "
                f"1/{SPARSITY_DENOMINATOR:,} that block-mask counts resolve (s is counted as a "
                f"fraction p/q, q <= {SPARSITY_DENOMINATOR:,}); use at least "
                f"{arg('sparsity', 1 / SPARSITY_DENOMINATOR)}")
        self._validate_masks()
        self._validate_variants()
        self._validate_decoding()

    def _validate_masks(self) -> None:
        """window and seqlens (docs/variants-masks.md); the bounds are in inputs/limits.py."""
        if self.window is not None:
            api_values.check_int("window", self.window, high=MAX_LENGTH, error=WorkloadError)
            if self.window > self.n_kv:
                raise WorkloadError(
                    f"{arg('window', self.window)} is longer than the {arg('n_kv', self.n_kv)} "
                    f"keys; a window that covers every key is no window: leave {arg('window')} "
                    f"out, or use at most {arg('window', self.n_kv)}", param="window")
        if self.seqlens is not None:
            lengths = limits.check_seqlens(self.seqlens, error=WorkloadError)
            object.__setattr__(self, "seqlens", lengths)
            total = sum(lengths)
            if total != self.n:
                raise WorkloadError(f"{arg('seqlens')} add up to {total:,} tokens, not "
                                    f"{arg('n', self.n)}; give lengths that sum to {arg('n')}, or "
                                    f"{arg('n', total)}", param="seqlens")
            if self.n_kv != self.n:
                raise WorkloadError(f"{arg('seqlens')} pack queries and keys alike (sum = n = "
                                    f"n_kv), got {arg('n_kv', self.n_kv)} with "
                                    f"{arg('n', self.n)}; leave {arg('n_kv')} unset",
                                    param="seqlens")
            if self.batch != 1:
                raise WorkloadError(f"{arg('seqlens')} pack the whole batch into one row of n "
                                    f"tokens, got {arg('batch', self.batch)}; use "
                                    f"{arg('batch', 1)} (the sequences are the batch)",
                                    param="seqlens")
        if self.packing not in PACKINGS:
            raise WorkloadError(f"unknown {arg('packing')} {excerpts.excerpt(self.packing)}; use "
                                f"one of {', '.join(PACKINGS)}", param="packing")
        if self.packing != "varlen" and self.seqlens is None:
            raise WorkloadError(f"{arg('packing', self.packing)} says how packed sequences are "
                                f"cut into blocks; give {arg('seqlens')} too, or leave "
                                f"{arg('packing')} out", param="packing")
        if self.masked and self.fp8_scales is not None:
            name = "window" if self.window is not None else "seqlens"
            raise WorkloadError(f"{arg(name)} with FP8 scales ({arg('dtype', self.dtype)}) is not "
                                f"modelled yet (the scales' tiles under a mask); use fp16 or bf16 "
                                f"with {arg(name)}", param=name)
        if (self.window is not None or self.seqlens is not None) and self.sparsity != 1:
            name = "window" if self.window is not None else "seqlens"
            raise WorkloadError(f"{arg(name)} does not combine with a block-sparse "
                                f"{arg('sparsity', self.sparsity)} (the block-sparse mask is "
                                f"numbered over the causal grid only); use {arg('sparsity', 1)}",
                                param=name)

    @property
    def masked(self) -> bool:
        """Whether a window or packed sequences skip tiles (algorithms/masks.py)."""
        return self.window is not None or self.seqlens is not None

    def _validate_variants(self) -> None:
        """MLA's latent cache and FP8's scales (issue 14 items 4-5)."""
        if self.latent_kv and self.kv_heads != 1:
            raise WorkloadError(
                f"{arg('latent_kv')} needs one latent KV head that every query head reads, got "
                f"{arg('kv_heads', self.kv_heads)}; use {arg('kv_heads', 1)} (MLA: d = 576, "
                f"d_v = 512)")
        if self.latent_kv and self.pass_ != "fwd":
            raise WorkloadError(
                f"{arg('latent_kv')} is MLA's absorbed decoding, an inference (forward) kernel; "
                f"use {arg('pass_', 'fwd')}, or train with the decompressed per-head K and V "
                f"(e.g. {arg('d', 192)} {arg('d_v', 128)})", param="latent_kv")
        if self.latent_kv and self.d <= self.d_v:
            raise WorkloadError(
                f"{arg('latent_kv')} needs {arg('d', self.d)} > {arg('d_v', self.d_v)}: V is "
                f"the first d_v columns of the latent K (MLA: d = 512 + 64 rope dims = 576, "
                f"d_v = 512)", param="d_v")
        if self.fp8_scales is not None and self.dtype not in FP8_DTYPES:
            raise WorkloadError(
                f"{arg('fp8_scales', self.fp8_scales)} needs an FP8 dtype, got "
                f"{arg('dtype', self.dtype)}; use {arg('dtype', FP8_DTYPES[0])} or drop "
                f"{arg('fp8_scales')}", param="fp8_scales")
        if self.fp8_scales is not None and self.fp8_scales not in FP8_SCALES:
            raise WorkloadError(f"unknown {arg('fp8_scales')} '{excerpts.clip(self.fp8_scales)}'; "
                                f"use one of {', '.join(FP8_SCALES)}", param="fp8_scales")
        if self.dtype in FP8_DTYPES and self.pass_ != "fwd":
            raise WorkloadError(
                f"{arg('dtype', self.dtype)} is modelled for the forward pass only (as "
                f"FlashAttention-3's FP8 kernels run it), got {arg('pass_', self.pass_)}; use "
                f"{arg('pass_', 'fwd')} or a 16-bit dtype", param="dtype")

    def _validate_decoding(self) -> None:
        object.__setattr__(self, "page_size", decoding.check_page_size(self.page_size,
                                                                       self.pass_))
        if self.page_size is not None and self.sparsity != 1:
            raise WorkloadError(f"a paged KV cache is modelled with a dense mask; drop "
                                f"{arg('sparsity')} or {arg('page_size')}", param="sparsity")
        prefix, suffixes = decoding.check_shared_prefix(
            self.prefix_len, self.suffix_lens, n=self.n, n_kv=self.n_kv, batch=self.batch,
            sparsity=self.sparsity, pass_=self.pass_, page_size=self.page_size)
        object.__setattr__(self, "prefix_len", prefix)
        object.__setattr__(self, "suffix_lens", suffixes)
        decoding.refuse_unmodelled(self.page_size, self.prefix_len, window=self.window,
                                   seqlens=self.seqlens, latent_kv=self.latent_kv,
                                   fp8=self.fp8_scales is not None,
                                   dropout="dropout" in self.unfused)

    @property
    def sparsity_fraction(self) -> tuple[int, int]:
        """s as a fraction p/q (q <= SPARSITY_DENOMINATOR) so that block-mask counts are exact
        integers."""
        if self.sparsity == 1:  # dense, as most workloads are: fractions is imported only for a
            return 1, 1  # sparsity (start-up time)
        from fractions import Fraction

        f = Fraction(self.sparsity).limit_denominator(SPARSITY_DENOMINATOR)
        return f.numerator, f.denominator

    @property
    def element_bytes(self) -> int:
        """Bytes per element of the workload's dtype."""
        return DTYPE_BYTES[self.dtype]

    @property
    def output_dtype(self) -> str:
        """Dtype of O: the input dtype, except FP8 inputs, whose forward writes bf16 (as
        FlashAttention-3's FP8 forward does)."""
        return FP8_OUTPUT_DTYPE if self.dtype in FP8_DTYPES else self.dtype

    @property
    def output_element_bytes(self) -> int:
        """Bytes per element of O (and of the backward's dO, dQ, dK, dV)."""
        return DTYPE_BYTES[self.output_dtype]

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
        window = f", window {self.window}" if self.window is not None else ""
        packed = (f", {len(self.seqlens)} packed sequences (longest {max(self.seqlens)}"
                  f"{', document mask' if self.packing == 'document' else ''})"
                  if self.seqlens is not None else "")
        d_v = f" (d_v {self.d_v})" if self.d_v != self.d else ""
        latent = ", latent KV" if self.latent_kv else ""
        dtype = self.dtype + (f" ({self.fp8_scales} scales, O {self.output_dtype})"
                              if self.fp8_scales else "")
        return (f"batch {self.batch} × {heads}, N {self.n}{kv}, d {self.d}{d_v}{latent}, "
                f"{dtype}, {_PASS_NAMES[self.pass_]}, {mask}{sparse}{window}{packed}"
                f"{decoding.describe(self.page_size, self.prefix_len, self.suffix_lens)}")

    def with_(self, **changes: object) -> Workload:
        """A copy with the given fields changed (validated again)."""
        return replace(self, **changes)


SPARSITY_DENOMINATOR = 10**6
"""The largest denominator q of the fraction p/q a sparsity is counted as (1e-6 is the
smallest s above 0)."""


def unfused_names(unfused: object, *, error: type[IosimError] = WorkloadError
                  ) -> tuple[str, ...]:
    """`unfused` as a tuple of op names: None, '' or an empty list is none; a numpy array is
    refused by as_names (its truth value was a ValueError)."""
    if unfused is None or (isinstance(unfused, (str, tuple, list)) and not unfused):
        return ()
    return api_values.as_names("unfused", unfused, error=error)


WORKLOAD_EXAMPLE = "iosim.Workload(4096, d=128)"
"""How a Workload is made, for the message refusing something else in its place."""


def mask_fields(workload: Workload) -> dict[str, object]:
    """The JSON keys of a workload's mask: "window" and "seqlens", each only when set (so that
    every output without a mask stays byte-for-byte what it was)."""
    fields: dict[str, object] = {}
    if workload.window is not None:
        fields["window"] = workload.window
    if workload.seqlens is not None:
        fields["seqlens"] = list(workload.seqlens)
        fields["packing"] = workload.packing
    return fields


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
