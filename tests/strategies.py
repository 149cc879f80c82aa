"""Hypothesis strategies shared by the count tests: small workloads and block sizes."""

from __future__ import annotations

from hypothesis import strategies as st

from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload


@st.composite
def workloads(draw: st.DrawFn, *, max_n: int = 300, max_instances: int = 4,
              unfused: bool = True) -> Workload:
    """Small workloads: uneven lengths, n != n_kv, causal or not, GQA/MQA, batch; V's own head
    dim, MLA's latent cache and FP8 with its scales (issue 14) now and then."""
    n = draw(st.integers(1, max_n))
    n_kv = draw(st.one_of(st.just(n), st.integers(1, max_n)))
    kv_heads = draw(st.integers(1, 2))
    group = draw(st.integers(1, 3))
    heads = kv_heads * group
    batch = draw(st.integers(1, max(1, max_instances // heads)))
    ops = draw(st.sets(st.sampled_from(["scale", "mask", "dropout"]))) if unfused else set()
    d = draw(st.integers(1, 8))
    d_v = draw(st.one_of(st.none(), st.none(), st.integers(1, 8)))
    latent = kv_heads == 1 and draw(st.integers(0, 5)) == 0
    if latent:
        d_v = draw(st.integers(1, 6))
        d = d_v + draw(st.integers(1, 3))
    dtype = draw(st.sampled_from(["fp16", "fp32", "fp16", "fp32", "fp8_e4m3"]))
    scales = draw(st.sampled_from(["tensor", "block"])) if dtype == "fp8_e4m3" else None
    return Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv_heads,
                    batch=batch, causal=draw(st.booleans()), unfused=tuple(ops),
                    dtype=dtype, d_v=d_v, latent_kv=latent, fp8_scales=scales)


@st.composite
def tilings(draw: st.DrawFn, workload: Workload, *, min_block: int = 1) -> Tiling:
    """Block sizes from 1 row to past the sequence, so last blocks are often uneven."""
    block_q = draw(st.integers(min_block, max(min_block, workload.n + 5)))
    block_kv = draw(st.integers(min_block, max(min_block, workload.n_kv + 5)))
    return Tiling(block_q, block_kv, 0, "test", "given")
