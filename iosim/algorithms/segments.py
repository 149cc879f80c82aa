"""Ragged decoding batches: a shared-prefix batch's requests each attend to their own length.

A shared-prefix batch (inputs/decoding.py) is B requests of one query token each; request b
attends to L + s_b keys (the shared prefix, then its own suffix). An algorithm that does not
know the prefix is shared (standard attention, split-KV) runs every request over its own full
KV, as a varlen kernel does (FA2 `flash_attn_with_kvcache(cache_seqlens=...)`, FlashInfer's
batch decode): one launch whose loops run per request over that request's keys. iosim writes
that launch as one Kernel with `segments` (loopnest.Segment): requests of equal length in a row
share a segment. Its tensors keep the batch-major layout [B, heads, rows, d], request b reading
rows 0 .. L + s_b − 1 of its own K and V (a padded or paged cache; the rows past them are
never read).

Split-KV over a ragged batch cuts each request's key blocks into the same number of splits,
⌈T_c(b)/splits⌉ blocks each (iosim's choice: FA2 sizes the splits by the longest request,
params.seqlen_k, and lets a short request's last splits exit empty).
"""

from __future__ import annotations

from itertools import groupby

from iosim.algorithms.loopnest import Kernel, Segment
from iosim.errors import IosimError, arg
from iosim.inputs.workload import Workload
from iosim.record import replace


def request_segments(workload: Workload) -> tuple[Segment, ...]:
    """One segment per run of consecutive requests with the same KV length L + s_b."""
    assert workload.prefix_len is not None and workload.suffix_lens is not None
    out: list[Segment] = []
    start = 0
    for length, run in groupby(workload.prefix_len + s for s in workload.suffix_lens):
        count = len(list(run))
        out.append(Segment(start, count, workload.n, length))
        start += count
    return tuple(out)


def per_request(kernels: tuple[Kernel, ...], workload: Workload) -> tuple[Kernel, ...]:
    """The kernels as ragged launches over the requests of a shared-prefix batch (unchanged
    for any other workload)."""
    if workload.suffix_lens is None:
        return kernels
    segments = request_segments(workload)
    return tuple(replace(k, segments=segments) for k in kernels)


def refuse_shared_prefix(algorithm: str, workload: Workload) -> None:
    """Raises for a shared-prefix batch that `algorithm` does not model."""
    if workload.prefix_len is not None:
        raise IosimError(f"{algorithm} does not model a shared-prefix decoding batch; use "
                         f"standard, splitkv or cascade, or drop {arg('prefix_len')} and "
                         f"{arg('suffix_lens')}", param="prefix_len")
