"""The decoding fields of a Workload: a paged KV cache and a shared-prefix batch, validated.

* `page_size` P: the KV cache is stored in pages of P tokens, reached through a block table
  (one int32 page index per page of each request), as vLLM's PagedAttention, FlashInfer and
  FlashAttention-2's `flash_attn_with_kvcache(block_table=...)` store it. A request of N_kv
  tokens holds ⌈N_kv/P⌉ pages, its last one partly filled.
* `prefix_len` L and `suffix_lens` (s_0, ..., s_{B−1}): a decoding batch of B requests (one query
  token each) whose KV caches share their first L tokens and then hold s_b tokens of their own;
  request b attends to L + s_b keys. The workload's `batch` is B and its `n_kv` the longest
  request, L + max(s_b) (what a padded cache or FA2's `seqlen_k` is sized for).

The rules live here, not in workload.py, so that each field's checks are written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from iosim.errors import WorkloadError, arg
from iosim.inputs import api_values, excerpts, limits


def check_page_size(page_size: object, pass_: str = "fwd") -> int | None:
    """None (a contiguous cache) or a whole number of tokens per page, 1..MAX_PAGE_SIZE, for a
    forward pass: a paged KV cache is what inference reads; no backward runs over one."""
    if page_size is None:
        return None
    size = api_values.check_int("page_size", page_size, high=limits.MAX_PAGE_SIZE,
                            what="tokens per KV-cache page", error=WorkloadError)
    if pass_ != "fwd":
        raise WorkloadError(f"a paged KV cache ({arg('page_size', size)}) is read by inference, "
                            f"a forward pass; no backward runs over one: use "
                            f"{arg('pass_', 'fwd')} or drop {arg('page_size')}",
                            param="page_size")
    return size


def check_shared_prefix(prefix_len: object, suffix_lens: object, *, n: int, n_kv: int,
                        batch: int, sparsity: float, pass_: str = "fwd",
                        page_size: int | None = None
                        ) -> tuple[int | None, tuple[int, ...] | None]:
    """(prefix_len, suffix_lens) checked together and against the decoding shape they need."""
    if prefix_len is None and suffix_lens is None:
        return None, None
    if prefix_len is None or suffix_lens is None:
        missing = "prefix_len" if prefix_len is None else "suffix_lens"
        raise WorkloadError(f"a shared-prefix batch needs both {arg('prefix_len')} and "
                            f"{arg('suffix_lens')}; give {arg(missing)} too (e.g. "
                            f"{arg('prefix_len', 512)}, {arg('suffix_lens', '(16, 40, 9)')})",
                            param=missing)
    prefix = api_values.check_int("prefix_len", prefix_len, high=limits.MAX_LENGTH,
                              what="shared prefix tokens", error=WorkloadError)
    suffixes = _suffixes(suffix_lens)
    if n != 1:
        raise WorkloadError(f"a shared-prefix batch is a decoding step: one query token per "
                            f"request; use {arg('n', 1)} (got {arg('n', n)})", param="n")
    if batch != len(suffixes):
        raise WorkloadError(f"{arg('suffix_lens')} lists {len(suffixes)} requests but "
                            f"{arg('batch', batch)}; the batch is one request per suffix "
                            f"(use {arg('batch', len(suffixes))})", param="batch")
    longest = prefix + max(suffixes)
    if n_kv != longest:
        raise WorkloadError(f"{arg('n_kv', n_kv)} must be the longest request, prefix_len + "
                            f"max(suffix_lens) = {prefix} + {max(suffixes)} = {longest}; use "
                            f"{arg('n_kv', longest)}", param="n_kv")
    if pass_ != "fwd":
        raise WorkloadError(f"a shared-prefix batch is a decoding (forward) step; use "
                            f"{arg('pass_', 'fwd')}", param="pass_")
    if page_size is not None:
        raise WorkloadError(f"a shared-prefix batch is modelled over a contiguous cache; drop "
                            f"{arg('page_size')}", param="page_size")
    if sparsity != 1:
        raise WorkloadError(f"a shared-prefix batch is modelled dense; drop {arg('sparsity')}",
                            param="sparsity")
    return prefix, suffixes


def _suffixes(value: object) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise WorkloadError(f"{arg('suffix_lens')} must be a list of whole numbers of tokens, "
                            f"one per request, got {excerpts.excerpt(value)}; e.g. "
                            f"{arg('suffix_lens', '(16, 40, 9)')}")
    if not value:
        raise WorkloadError(f"{arg('suffix_lens')} is empty; give one suffix length per request "
                            f"(e.g. {arg('suffix_lens', '(16, 40, 9)')})")
    if len(value) > limits.MAX_REQUESTS:
        raise WorkloadError(f"{arg('suffix_lens')} lists {len(value):,} requests, beyond the "
                            f"{limits.MAX_REQUESTS:,} iosim models; split the batch")
    return tuple(api_values.check_int("suffix_lens", s, high=limits.MAX_LENGTH,
                                  what="tokens of one request's own suffix", error=WorkloadError)
                 for s in value)


def refuse_unmodelled(page_size: int | None, prefix_len: int | None, *, window: object,
                      seqlens: object, latent_kv: bool, fp8: bool = False,
                      dropout: bool = False) -> None:
    """The combinations iosim does not count yet: a paged cache or a shared prefix with a
    sliding window or packed sequences (their visited key ranges are not 0 .. n_i), and a
    shared prefix over MLA's latent cache or with dropout."""
    for name, value in (("page_size", page_size), ("prefix_len", prefix_len)):
        if value is None:
            continue
        for other, given in (("window", window), ("seqlens", seqlens)):
            if given is not None:
                raise WorkloadError(f"{arg(name)} with {arg(other)} is not modelled yet; drop "
                                    f"one of them", param=name)
    if prefix_len is not None and fp8:
        raise WorkloadError(f"{arg('prefix_len')} with an FP8 {arg('dtype')} (cascade's scales) "
                            f"is not modelled yet; use fp16 or bf16", param="prefix_len")
    if prefix_len is not None and dropout:  # cascade's executor draws no dropout mask: verify
        raise WorkloadError(  # found its output 4.8e-2 from standard attention's
            f"{arg('prefix_len')} with dropout in {arg('unfused')} is not modelled (a "
            f"shared-prefix batch is an inference step, and cascade runs no dropout); drop "
            f"dropout from {arg('unfused')}", param="prefix_len")
    if prefix_len is not None and latent_kv:
        raise WorkloadError(f"{arg('prefix_len')} with {arg('latent_kv')} (cascade over MLA's "
                            f"latent cache) is not modelled yet; drop one of them",
                            param="prefix_len")


def held_kv_rows(batch: Any, n_kv: Any, prefix_len: int | None,
                 suffix_lens: tuple[int, ...] | None) -> Any:
    """Rows of K (and of V) per KV head that a batch holds, over all its requests: batch × N_kv,
    or for a shared-prefix batch the prefix once and each request's own suffix (the pages the L2
    model and cascade read once). The footprint and the compulsory traffic both count these."""
    if prefix_len is not None and suffix_lens:
        return prefix_len + sum(suffix_lens)
    return batch * n_kv


def describe(page_size: int | None, prefix_len: int | None,
             suffix_lens: tuple[int, ...] | None) -> str:
    """The words Workload.describe adds for the decoding fields ('' when none is set)."""
    words = ""
    if page_size is not None:
        words += f", paged KV ({page_size} tokens/page)"
    if prefix_len is not None and suffix_lens is not None:
        words += (f", shared prefix {prefix_len} + suffixes {min(suffix_lens)}.."
                  f"{max(suffix_lens)}")
    return words
