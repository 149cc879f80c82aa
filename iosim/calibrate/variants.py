"""The issue-14 measurement points: build a point's inputs, check its output against a dense
masked reference in float64, and hand back the launches to time and count.

A point is a dict of iosim's workload terms (n, n_kv, d, heads, kv_heads, batch, dtype, causal,
window, seqlens, page_size, splits, prefix_len, suffix_lens) plus `kind`:
    flex     FlexAttention (torch.nn.attention.flex_attention, compiled) with a block mask from
             create_block_mask: a sliding window (`window`, causal or two-sided) or documents
             (`seqlens`, causal or not inside each)
    decode   one decoding step (n = 1) with kernels_variants.split_kv over a contiguous
             (page_size None) or paged cache, `splits` KV splits
    cascade  a batch sharing a prefix: `method` "cascade" (kernels_variants.cascade, with
             prefix_splits and suffix_splits) or "splitkv" (split_kv over each request's full KV,
             its prefix pages shared in the block table, `splits`)

Masks follow docs/variants (issue 14's interface): query i sits at key position p_i = i + n_kv − n;
causal + window W keeps p_i − W < j ≤ p_i (HF sliding_window = W, FA2 window_size = (W − 1, 0));
two-sided keeps |j − p_i| < W (FA2 window_size = (W − 1, W − 1)); documents keep pairs inside one
sequence of `seqlens` (and j ≤ i there when causal).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from iosim.calibrate import kernels_variants as KV
from iosim.record import Record, field

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
TOLERANCE = {"fp16": 2e-3, "bf16": 1e-2}
Point = dict[str, Any]


class WrongOutput(RuntimeError):
    """A kernel's output differs from the float64 reference: it must not be timed."""


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; infinite when out holds a NaN or an infinity."""
    out64, ref64 = out.double(), ref.double()
    if not torch.isfinite(out64).all():
        return math.inf
    return float((out64 - ref64).norm() / ref64.norm())


def require_close(point: Point, what: str, out: torch.Tensor, ref: torch.Tensor) -> float:
    """The relative error, or WrongOutput when it exceeds the dtype's tolerance."""
    err = rel_error(out, ref)
    if not err <= TOLERANCE[point["dtype"]]:
        raise WrongOutput(f"{point['id']}: {what} relative error {err:.3g} > "
                          f"{TOLERANCE[point['dtype']]}")
    return err


# ---------------------------------------------------------------------------------------------
# masks, as dense boolean predicates on index tensors (FlexAttention mask_mods and references)


def doc_ids(seqlens: list[int], device: Any) -> torch.Tensor:
    """The document index of every token of the packed sequences."""
    return torch.repeat_interleave(torch.arange(len(seqlens), device=device),
                                   torch.tensor(seqlens, device=device))


def mask_predicate(point: Point, device: Any) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """keep(q_idx, kv_idx) for the point's mask, broadcasting over index tensors."""
    n, n_kv, causal = point["n"], point.get("n_kv", point["n"]), point["causal"]
    window, seqlens = point.get("window"), point.get("seqlens")
    shift = n_kv - n
    if seqlens:
        doc = doc_ids(seqlens, device)

        def keep_doc(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            same = doc[q] == doc[k]
            return same & (k <= q) if causal else same
        return keep_doc
    if window:
        w = int(window)

        def keep_window(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            p = q + shift
            if causal:
                kept: torch.Tensor = (k <= p) & (k > p - w)
                return kept
            kept = (k - p < w) & (p - k < w)
            return kept
        return keep_window

    def keep_causal(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return (k <= q + shift) if causal else torch.ones_like(q + k, dtype=torch.bool)
    return keep_causal


def reference_rows(point: Point, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   rows: torch.Tensor, heads: list[int]) -> torch.Tensor:
    """float64 attention of the given query rows of the given heads (batch 0) under the mask."""
    keep = mask_predicate(point, q.device)
    group = q.shape[1] // k.shape[1]
    n_kv = k.shape[2]
    allowed = keep(rows[:, None], torch.arange(n_kv, device=q.device)[None, :])
    outs = []
    for h in heads:
        qh = q[0, h, rows].double()
        kh, vh = k[0, h // group].double(), v[0, h // group].double()
        s = (qh @ kh.T) / math.sqrt(q.shape[-1])
        s = s.masked_fill(~allowed, -math.inf)
        outs.append(torch.softmax(s, -1) @ vh)
    return torch.stack(outs)


def check_rows(n: int, generator: torch.Generator, device: Any) -> torch.Tensor:
    """The query rows a Flex check compares: the first and last 64, every document or window edge
    region by chance, and 384 drawn at random."""
    drawn = torch.randint(0, n, (384,), generator=generator, device=generator.device).cpu()
    edge = torch.cat([torch.arange(min(64, n)), torch.arange(max(0, n - 64), n)])
    rows: torch.Tensor = torch.unique(torch.cat([edge, drawn])).to(device)
    return rows


# ---------------------------------------------------------------------------------------------
# built points: a launch function, its kernels, and what the mask or layout visits


class Built(Record, frozen=False):
    """A checked point: its launch (no sync), the kernels it launches, its check's error."""
    point: Point
    launch: Callable[[], Any]
    kernels: list[str]
    rel_error: float
    info: dict[str, Any] = field(default_factory=dict)
    graphable: bool = True


_FLEX: dict[str, Any] = {}


def compiled_flex() -> Any:
    """torch.compile(flex_attention), once per process, with recompiles allowed per shape."""
    if "fn" not in _FLEX:
        import torch._dynamo
        from torch.nn.attention.flex_attention import flex_attention

        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 1024)
        _FLEX["fn"] = torch.compile(flex_attention, dynamic=False)
    return _FLEX["fn"]


def _eager_flex() -> Any:
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention


def build_flex(point: Point, generator: torch.Generator, device: str = "cuda") -> Built:
    """A Flex point: inputs, block mask, one compiled call checked on sampled rows."""
    from torch.nn.attention.flex_attention import create_block_mask

    dtype = DTYPES[point["dtype"]]
    b, h, h_kv, n, d = point["batch"], point["heads"], point["kv_heads"], point["n"], point["d"]
    n_kv = int(point.get("n_kv") or n)
    keep = mask_predicate(point, device)

    def mask_mod(b_: Any, h_: Any, q_idx: Any, kv_idx: Any) -> Any:
        return keep(q_idx, kv_idx)

    block = int(point.get("block_size", 128))
    # the eager mask builder materialises the n × n_kv mask (and int64 index tensors): compile it
    # for long sequences
    mask = create_block_mask(mask_mod, B=None, H=None, Q_LEN=n, KV_LEN=n_kv, device=device,
                             BLOCK_SIZE=block, _compile=n * n_kv > (1 << 28))
    q = torch.randn(b, h, n, d, dtype=dtype, device=device, generator=generator)
    k = torch.randn(b, h_kv, n_kv, d, dtype=dtype, device=device, generator=generator)
    v = torch.randn(b, h_kv, n_kv, d, dtype=dtype, device=device, generator=generator)
    flex = compiled_flex() if device == "cuda" else _eager_flex()
    gqa = h != h_kv

    def launch() -> Any:
        return flex(q, k, v, block_mask=mask, enable_gqa=gqa)

    out = launch()
    rows = check_rows(n, generator, device)
    heads = sorted({0, h - 1})
    ref = reference_rows(point, q, k, v, rows, heads)
    err = require_close(point, "flex O", out[0, heads][:, rows], ref)
    info = {"mask_block_size": list(mask.BLOCK_SIZE),
            "partial_blocks": int(mask.kv_num_blocks.sum()),
            "full_blocks": int(mask.full_kv_num_blocks.sum()) if mask.full_kv_num_blocks is not None
            else 0,
            "block_grid": [int(x) for x in mask.kv_num_blocks.shape[-1:]] + [
                math.ceil(n_kv / block)]}
    return Built(point, launch, ["flex"], err, info, graphable=False)


def _kv(lengths: list[int], h_kv: int, d: int, dtype: torch.dtype, generator: torch.Generator,
        device: str) -> list[torch.Tensor]:
    return [torch.randn(n, h_kv, d, dtype=dtype, device=device, generator=generator)
            for n in lengths]


def make_cache(keys: list[torch.Tensor], values: list[torch.Tensor], page_size: int | None,
               generator: torch.Generator, shared_pages: int = 0) -> KV.KVCache:
    """A contiguous cache (page_size None) or a paged one with pages in random order."""
    if page_size is None:
        return KV.contiguous_cache(keys, values)
    return KV.paged_cache(keys, values, page_size, shared_pages=shared_pages, generator=generator)


def _checked_split_kv(point: Point, q: torch.Tensor, cache: KV.KVCache, ref_o: torch.Tensor,
                      config: KV.DecodeConfig, splits: int, label: str, what: str,
                      fields: dict[str, Any]) -> Built:
    """Plain split-KV of q over `cache` at `splits` splits, its output (poisoned with NaN
    first) checked against ref_o (named `what`, the point's id followed by `label`), and the
    relaunch to time; the Built point is the point with `fields` added."""
    out = KV.decode_buffers(q, splits)
    out.o.fill_(math.nan)
    kernels = KV.split_kv(q, cache, out, splits=splits, config=config)
    err = require_close({**point, "id": f"{point['id']} {label}"}, what, out.o, ref_o)

    def launch() -> Any:
        return KV.split_kv(q, cache, out, splits=splits, config=config)
    return Built({**point, **fields}, launch, kernels, err)


class DecodeProblem(Record, frozen=False):
    """One decoding step's inputs (a query row per head, each request's KV), built once and
    launched at any split count."""

    point: Point
    q: torch.Tensor
    cache: KV.KVCache
    ref_o: torch.Tensor
    config: KV.DecodeConfig = field(default_factory=KV.DecodeConfig)

    def build(self, splits: int) -> Built:
        """Checked split-KV at `splits` splits (outputs poisoned first)."""
        return _checked_split_kv(self.point, self.q, self.cache, self.ref_o, self.config, splits,
                                 f"splits {splits}", "decode O", {"splits": splits})


def decode_problem(point: Point, generator: torch.Generator, device: str = "cuda") -> DecodeProblem:
    """A decode point's query rows, KV cache and float64 reference output."""
    dtype = DTYPES[point["dtype"]]
    b, h, h_kv, d = point["batch"], point["heads"], point["kv_heads"], point["d"]
    lengths = list(point["kv_lens"]) if point.get("kv_lens") else [point["n_kv"]] * b
    q = torch.randn(b, h_kv, h // h_kv, d, dtype=dtype, device=device, generator=generator)
    keys = _kv(lengths, h_kv, d, dtype, generator, device)
    values = _kv(lengths, h_kv, d, dtype, generator, device)
    ref_o, _ = KV.reference_decode(q, keys, values)
    cache = make_cache(keys, values, point.get("page_size"), generator)
    del keys, values
    return DecodeProblem(point, q, cache, ref_o)


class CascadeProblem(Record, frozen=False):
    """A batch sharing a prefix: the full per-request cache (prefix pages shared) for plain
    split-KV, and the prefix and suffix caches for cascade, over the same K/V values."""

    point: Point
    q: torch.Tensor
    full: KV.KVCache
    prefix: KV.KVCache
    suffix: KV.KVCache
    ref_o: torch.Tensor
    config: KV.DecodeConfig = field(default_factory=KV.DecodeConfig)
    prefix_config: KV.DecodeConfig = field(default_factory=lambda: KV.DecodeConfig(64))

    def build_splitkv(self, splits: int) -> Built:
        """Checked plain split-KV over each request's full (shared-prefix) KV."""
        return _checked_split_kv(self.point, self.q, self.full, self.ref_o, self.config, splits,
                                 f"splitkv {splits}", "split-KV O",
                                 {"method": "splitkv", "splits": splits})

    def build_cascade(self, prefix_splits: int, suffix_splits: int) -> Built:
        """Checked cascade at the given prefix and suffix split counts."""
        out = KV.decode_buffers(self.q, prefix_splits + suffix_splits)
        out.o.fill_(math.nan)
        kw = {"prefix_splits": prefix_splits, "suffix_splits": suffix_splits,
              "prefix_config": self.prefix_config, "config": self.config}
        kernels = KV.cascade(self.q, self.prefix, self.suffix, out, **kw)  # type: ignore[arg-type]
        err = require_close({**self.point, "id": f"{self.point['id']} cascade {prefix_splits}+"
                             f"{suffix_splits}"}, "cascade O", out.o, self.ref_o)

        def launch() -> Any:
            return KV.cascade(self.q, self.prefix, self.suffix, out, **kw)  # type: ignore[arg-type]
        return Built({**self.point, "method": "cascade", "prefix_splits": prefix_splits,
                      "suffix_splits": suffix_splits}, launch, kernels, err)


def cascade_problem(point: Point, generator: torch.Generator, device: str = "cuda") -> CascadeProblem:
    """A shared-prefix batch's inputs: full, prefix and suffix caches, one reference."""
    dtype = DTYPES[point["dtype"]]
    b, h, h_kv, d = point["batch"], point["heads"], point["kv_heads"], point["d"]
    prefix_len, suffix_lens, page = point["prefix_len"], list(point["suffix_lens"]), point["page_size"]
    if prefix_len % page:
        raise ValueError(f"{point['id']}: prefix_len {prefix_len} must be whole pages of {page}")
    q = torch.randn(b, h_kv, h // h_kv, d, dtype=dtype, device=device, generator=generator)
    pk, pv = _kv([prefix_len], h_kv, d, dtype, generator, device)[0], _kv(
        [prefix_len], h_kv, d, dtype, generator, device)[0]
    sk = _kv(suffix_lens, h_kv, d, dtype, generator, device)
    sv = _kv(suffix_lens, h_kv, d, dtype, generator, device)
    fk = [torch.cat([pk, s]) for s in sk]
    fv = [torch.cat([pv, s]) for s in sv]
    ref_o, _ = KV.reference_decode(q, fk, fv)
    full = make_cache(fk, fv, page, generator, shared_pages=prefix_len // page)
    prefix = make_cache([pk], [pv], page, generator)
    suffix = make_cache(sk, sv, page, generator)
    return CascadeProblem(point, q, full, prefix, suffix, ref_o)


def bytes_of(t: torch.Tensor) -> int:
    """A tensor's size in bytes."""
    return t.numel() * t.element_size()
