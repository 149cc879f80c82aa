"""`iosim measure`: run one implementation at the user's shape on this GPU, check it against a
reference, time it, and set the measurement beside iosim's prediction (imports torch).

Runs: torch SDPA with one backend forced (sdpa-flash, sdpa-cudnn, sdpa-efficient), FlexAttention
compiled (flex), eager PyTorch (torch-naive) and the project's Triton kernel (iosim-triton).
The output is checked on fresh random data against attention computed in fp32 before anything is
timed; timing is `triton.testing.do_bench`'s median; the kernels one call launches (names and
device times) come from torch.profiler. DRAM and L2 bytes need Nsight Compute: `iosim measure`
reads them kernel by kernel through impl_ncu.count_kernels when ncu is found.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from iosim.calibrate import CalibrationError
from iosim.inputs.implementations import Implementation
from iosim.inputs.workload import Workload

TOLERANCE = {"fp16": 2e-2, "bf16": 5e-2, "fp32": 1e-3}
"""Largest max-abs error against the fp32 reference, relative to the reference's max-abs."""

FLEX_RECOMPILE_LIMIT = 1024
"""Shapes one process may compile flex_attention for before torch gives up compiling it."""

_SDPA_BACKENDS = {"sdpa-flash": "FLASH_ATTENTION", "sdpa-cudnn": "CUDNN_ATTENTION",
                  "sdpa-efficient": "EFFICIENT_ATTENTION"}


def _tensors(w: Workload, torch: Any, *, batch: int | None = None) -> tuple[Any, Any, Any]:
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[w.dtype]
    b = w.batch if batch is None else batch
    q = torch.randn(b, w.heads, w.n, w.d, device="cuda", dtype=dtype)
    k = torch.randn(b, w.kv_heads, w.n_kv, w.d, device="cuda", dtype=dtype)
    v = torch.randn(b, w.kv_heads, w.n_kv, w.d, device="cuda", dtype=dtype)
    return q, k, v


def _causal_mask(w: Workload, torch: Any) -> Any:
    """Bottom-right aligned (query i sees keys j <= i + n_kv - n), as iosim's Workload."""
    i = torch.arange(w.n, device="cuda")[:, None]
    j = torch.arange(w.n_kv, device="cuda")[None, :]
    return j <= i + (w.n_kv - w.n)


def reference(q: Any, k: Any, v: Any, w: Workload, torch: Any) -> Any:
    """Attention in fp32 through torch (K, V repeated per query-head group; causal if the workload
    is), the reference a measured implementation is checked against."""
    g = w.group_size
    kf = k.float().repeat_interleave(g, 1)
    vf = v.float().repeat_interleave(g, 1)
    s = q.float() @ kf.transpose(-2, -1) / math.sqrt(w.d)
    if w.causal:
        s = s.masked_fill(~_causal_mask(w, torch), float("-inf"))
    return torch.softmax(s, -1) @ vf


def make_runner(impl: Implementation, w: Workload, q: Any, k: Any, v: Any) -> Callable[[], Any]:
    """A no-argument function that runs the implementation once and returns O (b, h, n, d)."""
    import torch

    g, scale = w.group_size, 1.0 / math.sqrt(w.d)
    if impl.runs == "sdpa":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention as sdpa

        backend = getattr(SDPBackend, _SDPA_BACKENDS.get(impl.name, "FLASH_ATTENTION"))
        mask = None
        causal = w.causal and w.n == w.n_kv
        if w.causal and w.n != w.n_kv:
            from torch.nn.attention.bias import causal_lower_right

            mask = causal_lower_right(w.n, w.n_kv)

        def run() -> Any:
            with sdpa_kernel(backend):
                return sdpa(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=g > 1)
        return run
    if impl.runs == "eager":
        keep = _causal_mask(w, torch) if w.causal else None

        def run() -> Any:
            kk = k.repeat_interleave(g, 1) if g > 1 else k
            vv = v.repeat_interleave(g, 1) if g > 1 else v
            s = q @ kk.transpose(-2, -1) * scale
            if keep is not None:
                s = s.masked_fill(~keep, float("-inf"))
            return s.softmax(-1) @ vv
        return run
    if impl.runs == "flex":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        block = None
        if w.causal:
            offset = w.n_kv - w.n
            block = create_block_mask(lambda b, h, i, j: j <= i + offset, None, None, w.n, w.n_kv)
        # every new shape recompiles flex_attention; past dynamo's recompile limit (8) torch
        # falls back to the unfused eager path, which materialises the scores (measured on the
        # H200: points 7 and 8 of tests/data/h200-impl-flex5.json ran 200+ eager kernels, 199 ms
        # and 7 ms), so a run over many shapes raises the limit
        for limit in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, limit):
                setattr(torch._dynamo.config, limit, max(getattr(torch._dynamo.config, limit),
                                                         FLEX_RECOMPILE_LIMIT))
        # each shape is timed the way a user's process runs it: compiled alone, statically. A
        # process that kept every earlier shape's graph paid more per call on host (guards of
        # every cache entry: 100 -> 199 us dispatch) and ran slower kernels (dynamo's automatic
        # dynamic shapes after the second shape: 1.18 -> 1.48 ms), benchmarks/flex-host-probe-h200
        compiled = _compiled_flex(w, torch, flex_attention)
        return lambda: compiled(q, k, v, block_mask=block, enable_gqa=g > 1)
    if impl.runs == "iosim-triton":
        from iosim.calibrate import kernels as K

        row = next((r for r in impl.forward_tiles if w.d <= r.d_max), None)
        if row is None or w.n != w.n_kv or w.n % row.block_q:
            raise CalibrationError(f"iosim-triton runs N = N_kv, a multiple of its BLOCK_M "
                                   f"({row.block_q if row else '?'}); got N {w.n}, N_kv {w.n_kv}")
        config = K.AttentionConfig(row.block_q, row.block_kv, row.warps, row.stages or 3)
        bh = w.batch * w.heads
        o = torch.empty(bh, w.n, w.d, device="cuda", dtype=q.dtype)
        lse = torch.empty(bh, w.n, device="cuda", dtype=torch.float32)

        def run() -> Any:
            kk = (k.repeat_interleave(g, 1) if g > 1 else k).reshape(bh, w.n, w.d)
            vv = (v.repeat_interleave(g, 1) if g > 1 else v).reshape(bh, w.n, w.d)
            K.attention_fwd(q.reshape(bh, w.n, w.d), kk, vv, o, lse, causal=w.causal,
                            config=config)
            return o.view(w.batch, w.heads, w.n, w.d)
        return run
    raise CalibrationError(f"{impl.name}: iosim cannot run '{impl.runs}' implementations")


_FLEX_COMPILED: dict[Workload, Any] = {}
"""The last shape flex_attention was compiled for and its compiled function: check and the
timing that follows it run the same compiled call (one compilation per shape, not two)."""


def _compiled_flex(w: Workload, torch: Any, flex_attention: Any) -> Any:
    """flex_attention compiled for this shape alone and statically: the process's earlier
    shapes dropped (torch._dynamo.reset()) unless it is the shape compiled last."""
    if w not in _FLEX_COMPILED:
        _FLEX_COMPILED.clear()
        torch._dynamo.reset()
        _FLEX_COMPILED[w] = torch.compile(flex_attention, dynamic=False)
    return _FLEX_COMPILED[w]


def check(impl: Implementation, w: Workload) -> float:
    """Run at the workload's shape on fresh data and check its first batch entry against the
    fp32 reference of that entry; raise unless it is close. (At the shape it is timed at: a
    compiled implementation compiles once for both.)"""
    import torch

    small = w.with_(batch=1)
    full = _tensors(w, torch)
    q, k, v = (t[:1] for t in full)
    try:
        out = make_runner(impl, w, *full)()[:1]
    except (RuntimeError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CalibrationError(f"{impl.name} refuses this shape on this machine (torch: "
                               f"{first[:160]}); its backend may be missing from this torch "
                               f"build: try another --impl, e.g. sdpa-flash") from None
    ref = reference(q, k, v, small, torch)
    err = float((out.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
    if not math.isfinite(err) or err > TOLERANCE[w.dtype]:
        raise CalibrationError(f"{impl.name} computed wrongly at this shape: max error {err:.3g} "
                               f"of the output's scale (tolerance {TOLERANCE[w.dtype]:g}); "
                               f"nothing timed")
    return err


CLEAR_BYTES = 256 << 20
"""What triton.testing.do_bench zeroes before every timed call (its L2 flush)."""


WARMUP_MS = 10
"""Milliseconds of calls do_bench runs before it times. In every validation record the first
timed points of an implementation's pass and the first call of a new kernel specialisation ran
12-131 µs per call slower than their own kernels' device time (the profiled call after
do_bench), where calls of their size elsewhere show 2-9 µs (tests/data/h200-impl-validation*.json;
docs/implementations.md, round 7). Round 7 timed validation6 with 100 ms (tag impl7-frozen) to
test whether an idle GPU's clocks caused it: the stalls stayed (iosim-triton #0, #6, sdpa-cudnn
#0, torch-naive #0, sdpa-flash #6), so the warm-up is back at do_bench's 10 ms and the
validation report prints each call's host gap beside the kernel model instead."""


def host_seconds(run: Callable[[], Any], *, calls: int = 20) -> float:
    """Median host time of one call: from the call to its return, the GPU idle and synchronised
    before each, so that no full launch queue stalls it. What the host spends dispatching a call
    (Python, the library's checks, the launches) whatever its kernels then take."""
    import time

    import torch

    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return sorted(times)[len(times) // 2]


def time_and_kernels(impl: Implementation, w: Workload, *, rep_ms: int = 60
                     ) -> tuple[float, list[dict[str, Any]]]:
    """(median seconds of one call, the kernels it launches: name and device seconds, each from
    a cold L2)."""
    import torch
    import triton

    q, k, v = _tensors(w, torch)
    run = make_runner(impl, w, q, k, v)
    run()
    torch.cuda.synchronize()
    median_ms = triton.testing.do_bench(run, warmup=WARMUP_MS, rep=rep_ms, return_mode="median")
    from torch.profiler import DeviceType, ProfilerActivity, profile

    # the profiled call starts from a cold L2, as every call do_bench timed (it zeroes 256 MB
    # before each), so that the kernels' device times are those of the timed calls
    torch.empty(CLEAR_BYTES // 4, dtype=torch.int32, device="cuda").zero_()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    kernels = [{"name": e.name, "time_s": e.device_time * 1e-6}
               for e in prof.events() if e.device_type == DeviceType.CUDA
               and e.device_time > 0]
    del q, k, v, run
    torch.cuda.empty_cache()  # give the memory back: measure's ncu run allocates its own
    return median_ms * 1e-3, kernels
