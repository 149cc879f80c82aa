"""Check each kernel against torch on fresh random data, then time it: the GPU half of a calibration.

Every kernel's output is poisoned with NaN before its check, so an element it fails to write
fails the check; a kernel whose relative error ‖out − ref‖/‖ref‖ exceeds its dtype's tolerance
stops the run (CalibrationError) before anything is timed. Checks run at the timed N and d on
two heads (the code path is the same; the fp32 reference of 16 heads of N = 16,384 would need
32 GiB). Timing is `triton.testing.do_bench`'s median over repeats, after its warm-up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import torch
import triton
import triton.testing

from iosim.calibrate import CalibrationError
from iosim.calibrate import kernels as K
from iosim.calibrate.plan import FusedConfig, Plan, Shape
from iosim.calibrate.records import CHECK_TOLERANCE, Measurement

TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
TOLERANCE = CHECK_TOLERANCE
"""Relative-error limits (records.CHECK_TOLERANCE: a record read back meets the same ones)."""
CHECK_HEADS = 2

Progress = Callable[[str], None]


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; NaN (an unwritten or broken element) stays NaN."""
    diff = (out.double() - ref.double()).norm().item()
    return float(diff / max(ref.double().norm().item(), 1e-300))


def require_close(what: str, out: torch.Tensor, ref: torch.Tensor, dtype: str) -> float:
    """The relative error of `out` against `ref`; CalibrationError when it exceeds the dtype's
    tolerance (nothing is timed before a kernel computes right)."""
    err = rel_error(out, ref)
    tol = TOLERANCE[dtype]
    if not math.isfinite(err) or err > tol:
        unwritten = int((~torch.isfinite(out)).sum().item())
        detail = f"{unwritten} elements unwritten or not finite" if unwritten else (
            f"relative error {err:.2e} > {tol:.0e}")
        raise CalibrationError(f"{what} failed its correctness check against torch ({detail}); "
                               "not timing a wrong kernel")
    return err


DEVICE = "cuda"
"""Where the bench allocates; tests set "cpu" to run it under Triton's interpreter."""


def poisoned(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A tensor of NaNs on the device, so that an output element a kernel never writes shows."""
    return torch.full(shape, float("nan"), dtype=dtype, device=DEVICE)


def randn(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    """A standard-normal tensor on the device."""
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def empty(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised tensor on the device."""
    return torch.empty(*shape, dtype=dtype, device=DEVICE)


@contextmanager
def exact_fp32() -> Iterator[None]:
    """fp32 references without TF32 (PyTorch may enable it for matmuls)."""
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(O, logsumexp) in fp32 from the definition, head by head (bounded memory)."""
    n, d = q.shape[-2:]
    outs, lses = [], []
    with exact_fp32():
        for h in range(q.shape[0]):
            s = (q[h].float() @ k[h].float().T) / math.sqrt(d)
            if causal:
                s.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=s.device).triu_(1),
                               float("-inf"))
            lses.append(torch.logsumexp(s, dim=-1))
            outs.append(torch.softmax(s, dim=-1) @ v[h].float())
            del s
    return torch.stack(outs), torch.stack(lses)


def resources(handle: Any) -> dict[str, int]:
    """Registers per thread and shared memory per program of a launched Triton kernel."""
    metadata = getattr(handle, "metadata", None)
    return {"regs": int(getattr(handle, "n_regs", 0) or 0),
            "shared_bytes": int(getattr(metadata, "shared", 0) or 0)}


ROWS_CONFIG = K.RowsConfig(128, 128, 8, 3)
"""S = QKᵀ row strips: 128 query rows per program, K in 128-row blocks."""


def matmul_config(role: str, d: int = 0) -> K.MatmulConfig:
    """The Triton matmul's tile configuration for a role (the square ceiling, or the standard
    path's QKᵀ and PV at head dim `d`)."""
    if role == "square":
        return K.MatmulConfig(128, 256, 64, 8, 8, 3)
    if role == "qk":  # S = QKᵀ: M = N_q, N = N_kv, K = d
        return K.MatmulConfig(128, 128, min(64, d), 8, 8, 3)
    # O = PV: M = N_q, N = d, K = N_kv
    return K.MatmulConfig(128, d, 64, 8, 8 if d >= 128 else 4, 3)


class Bench:
    """Runs a Plan: checks then times every kernel, yielding Measurements."""

    def __init__(self, plan: Plan, progress: Progress | None = None) -> None:
        self.plan = plan
        self.progress = progress or (lambda _: None)

    def time(self, fn: Callable[[], Any]) -> tuple[float, float, float]:
        """(median, 20th, 80th percentile) seconds; do_bench zeroes a 256 MB buffer before each
        repeat, so every repeat starts with none of its inputs in L2."""
        ms = triton.testing.do_bench(fn, warmup=self.plan.warmup_ms, rep=self.plan.rep_ms,
                                     quantiles=[0.5, 0.2, 0.8])
        median, p20, p80 = (float(x) * 1e-3 for x in ms)
        return median, p20, p80

    def measure(self, id_: str, kernel: str, dtype: str, fn: Callable[[], Any], *, io_bytes: int,
                flops: int, rel_error: float | None, **fields: Any) -> Measurement:
        """Time `fn` (median seconds) and record it as one Measurement with its bytes, FLOPs and error."""
        self.progress(id_)
        median, p20, p80 = self.time(fn)
        return Measurement(id=id_, kernel=kernel, dtype=dtype, time_s=median, time_p20_s=p20,
                           time_p80_s=p80, io_bytes=io_bytes, flops=flops, rel_error=rel_error,
                           **fields)

    def run(self) -> Iterator[Measurement]:
        """Every measurement of the plan: the copy ceilings, the matmuls, the standard path and the
        fused kernel, one section after another (each section's tensors freed before the next)."""
        sections: list[Callable[[], list[Measurement]]] = [self.copies]
        sections += [partial(self.matmul, dtype) for dtype in self.plan.matmul_dtypes]
        sections += [partial(self.standard, s) for s in self.plan.standard]
        sections += [partial(self.fused, s, self.plan.fused_configs[s.d]) for s in self.plan.fused]
        for section in sections:
            yield from section()  # its tensors are freed when it returns
            if DEVICE == "cuda":
                torch.cuda.empty_cache()

    # -- ceilings ------------------------------------------------------------------------------

    def copies(self) -> list[Measurement]:
        """Streaming ceilings: copy (read + write), read only, write only; Triton and torch."""
        n = self.plan.copy_bytes // 2
        src = randn(n, dtype=torch.float16)
        dst = poisoned((n,), torch.float16)
        K.copy(src, dst)
        if not torch.equal(src, dst):
            raise CalibrationError("copy kernel failed its check (output differs from input); "
                                   "not timing a wrong kernel")
        block = 8192
        partials = poisoned((triton.cdiv(n, block),), torch.float32)
        K.evict(src, partials, block=block)
        ref = src[: (n // block) * block].view(-1, block).double().sum(dim=1)
        err_read = require_close("read (block sums)", partials[: ref.numel()], ref, "fp32")
        K.fill(dst, 1.5)
        if not bool((dst == 1.5).all()):
            raise CalibrationError("fill kernel failed its check (not every element written); "
                                   "not timing a wrong kernel")
        nbytes = src.numel() * src.element_size()
        return [
            # read n elements; write n elements
            self.measure(f"copy/{n}", "copy", "fp16", lambda: K.copy(src, dst),
                         io_bytes=2 * nbytes, flops=0, rel_error=0.0, size=n),
            self.measure(f"torch_copy/{n}", "torch_copy", "fp16", lambda: dst.copy_(src),
                         io_bytes=2 * nbytes, flops=0, rel_error=None, size=n),
            # read n elements; write one fp32 sum per 8192
            self.measure(f"read/{n}", "read", "fp16",
                         lambda: K.evict(src, partials, block=block),
                         io_bytes=nbytes + partials.numel() * 4, flops=0, rel_error=err_read,
                         size=n),
            self.measure(f"torch_read/{n}", "torch_read", "fp16", lambda: src.sum(),
                         io_bytes=nbytes, flops=0, rel_error=None, size=n),
            # write n elements
            self.measure(f"write/{n}", "write", "fp16", lambda: K.fill(dst, 1.5),
                         io_bytes=nbytes, flops=0, rel_error=0.0, size=n),
            self.measure(f"torch_write/{n}", "torch_write", "fp16", lambda: dst.fill_(1.5),
                         io_bytes=nbytes, flops=0, rel_error=None, size=n),
        ]

    def matmul(self, dtype: str) -> list[Measurement]:
        """The matmul ceiling in `dtype`: the Triton matmul and torch.matmul on the plan's square size."""
        s = self.plan.matmul_size
        tdt = TORCH_DTYPES[dtype]
        a, b = randn(1, s, s, dtype=tdt), randn(1, s, s, dtype=tdt)
        c = poisoned((1, s, s), tdt)
        cfg = matmul_config("square")
        res = resources(K.bmm(a, b, c, cfg))
        with exact_fp32():
            err = require_close(f"matmul {dtype} {s}³", c[0], a[0].float() @ b[0].float(), dtype)
        io = 3 * s * s * a.element_size()  # read A, B; write C
        flops = 2 * s**3
        return [
            self.measure(f"matmul/{dtype}/{s}", "matmul", dtype, lambda: K.bmm(a, b, c, cfg),
                         io_bytes=io, flops=flops, rel_error=err, size=s, block_m=cfg.block_m,
                         block_n=cfg.block_n, num_warps=cfg.num_warps,
                         num_stages=cfg.num_stages, **res),
            self.measure(f"torch_matmul/{dtype}/{s}", "torch_matmul", dtype,
                         lambda: torch.matmul(a[0], b[0], out=c[0]), io_bytes=io, flops=flops,
                         rel_error=None, size=s),
        ]

    # -- standard attention: three kernels -----------------------------------------------------

    def standard(self, shape: Shape) -> list[Measurement]:
        """The standard path at one shape: S = QKᵀ (two variants), softmax and PV, each checked
        against torch then timed."""
        errors = self._check_standard(shape)
        tdt = TORCH_DTYPES[shape.dtype]
        n, d, bh = shape.n, shape.d, shape.batch * shape.heads
        scale = 1.0 / math.sqrt(d)
        tiles_cfg, pv_cfg = matmul_config("qk", d), matmul_config("pv", d)
        q, k, v = (randn(bh, n, d, dtype=tdt) for _ in range(3))
        s = empty(bh, n, n, dtype=tdt)
        p = torch.empty_like(s)
        o = torch.empty_like(q)
        rows_res = resources(K.qk_rows(q, k, s, ROWS_CONFIG))  # real scores for the softmax
        tiles_res = resources(K.bmm(q, k.transpose(1, 2), s, tiles_cfg))
        K.softmax_rows(s.view(-1, n), p.view(-1, n), scale)  # real weights for O = PV
        pv_res = resources(K.bmm(p, v, o, pv_cfg))
        elt = q.element_size()
        common: dict[str, Any] = dict(n=n, d=d, batch=shape.batch, heads=shape.heads)
        base = f"{shape.dtype}/n{n}/d{d}"
        qk_io = (q.numel() + k.numel() + s.numel()) * elt
        return [
            # read Q, K; write S (row strips: the main S = QKᵀ kernel)
            self.measure(f"qk/{base}/rows", "qk", shape.dtype, lambda: K.qk_rows(q, k, s, ROWS_CONFIG),
                         io_bytes=qk_io, flops=2 * bh * n * n * d, rel_error=errors[0],
                         variant="rows", block_m=ROWS_CONFIG.block_m, block_n=ROWS_CONFIG.block_n,
                         num_warps=ROWS_CONFIG.num_warps, num_stages=ROWS_CONFIG.num_stages,
                         **rows_res, **common),
            # read Q, K; write S (2-D output tiles, batched-matmul style)
            self.measure(f"qk/{base}/tiles", "qk", shape.dtype,
                         lambda: K.bmm(q, k.transpose(1, 2), s, tiles_cfg),
                         io_bytes=qk_io, flops=2 * bh * n * n * d, rel_error=errors[1],
                         variant="tiles", block_m=tiles_cfg.block_m, block_n=tiles_cfg.block_n,
                         num_warps=tiles_cfg.num_warps, num_stages=tiles_cfg.num_stages,
                         **tiles_res, **common),
            # read S; write P
            self.measure(f"softmax/{base}", "softmax", shape.dtype,
                         lambda: K.softmax_rows(s.view(-1, n), p.view(-1, n), scale),
                         io_bytes=(s.numel() + p.numel()) * elt, flops=5 * bh * n * n,
                         rel_error=errors[2], num_warps=K.softmax_warps(n), **common),
            # read P, V; write O
            self.measure(f"pv/{base}", "pv", shape.dtype, lambda: K.bmm(p, v, o, pv_cfg),
                         io_bytes=(p.numel() + v.numel() + o.numel()) * elt,
                         flops=2 * bh * n * n * d, rel_error=errors[3], block_m=pv_cfg.block_m,
                         block_n=pv_cfg.block_n, num_warps=pv_cfg.num_warps,
                         num_stages=pv_cfg.num_stages, **pv_res, **common),
        ]

    def _check_standard(self, shape: Shape) -> tuple[float, float, float, float]:
        """The kernels on two heads of fresh data, each against torch in fp32."""
        tdt = TORCH_DTYPES[shape.dtype]
        n, d = shape.n, shape.d
        scale = 1.0 / math.sqrt(d)
        q, k, v = (randn(CHECK_HEADS, n, d, dtype=tdt) for _ in range(3))
        with exact_fp32():
            ref_s = q.float() @ k.float().transpose(1, 2)
        s = poisoned((CHECK_HEADS, n, n), tdt)
        K.bmm(q, k.transpose(1, 2), s, matmul_config("qk", d))
        err_tiles = require_close(f"S = QKᵀ tiles ({shape.label})", s, ref_s, shape.dtype)
        s = poisoned((CHECK_HEADS, n, n), tdt)
        K.qk_rows(q, k, s, ROWS_CONFIG)
        err_rows = require_close(f"S = QKᵀ rows ({shape.label})", s, ref_s, shape.dtype)
        del ref_s
        p, o = poisoned((CHECK_HEADS, n, n), tdt), poisoned((CHECK_HEADS, n, d), tdt)
        K.softmax_rows(s.view(-1, n), p.view(-1, n), scale)
        err_sm = require_close(f"softmax ({shape.label})", p,
                               torch.softmax(s.float() * scale, dim=-1), shape.dtype)
        K.bmm(p, v, o, matmul_config("pv", d))
        with exact_fp32():
            err_pv = require_close(f"O = PV ({shape.label})", o, p.float() @ v.float(), shape.dtype)
        return err_rows, err_tiles, err_sm, err_pv

    # -- fused attention -----------------------------------------------------------------------

    def fused(self, shape: Shape, configs: tuple[FusedConfig, ...]) -> list[Measurement]:
        """The fused forward at one shape in each tile configuration, and torch SDPA's flash kernel
        beside it, each checked then timed."""
        errors, err_sdpa = self._check_fused(shape, configs)
        tdt = TORCH_DTYPES[shape.dtype]
        n, d, causal = shape.n, shape.d, shape.causal
        bh = shape.batch * shape.heads
        flops = 4 * bh * n * n * d // (2 if causal else 1)
        common: dict[str, Any] = dict(n=n, d=d, batch=shape.batch, heads=shape.heads,
                                      causal=causal)
        q, k, v = (randn(bh, n, d, dtype=tdt) for _ in range(3))
        o = torch.empty_like(q)
        lse = empty(bh, n, dtype=torch.float32)
        io = (q.numel() + k.numel() + v.numel() + o.numel()) * q.element_size()
        base = f"{shape.dtype}/n{n}/d{d}/{'causal' if causal else 'full'}"
        out = []
        for cfg in configs:
            kcfg = K.AttentionConfig(cfg.block_m, cfg.block_n, cfg.num_warps, cfg.num_stages)
            res = resources(K.attention_fwd(q, k, v, o, lse, causal=causal, config=kcfg))
            # read Q, K, V; write O and the fp32 logsumexp
            out.append(self.measure(
                f"attn_fwd/{base}/{cfg.label}", "attn_fwd", shape.dtype,
                partial(K.attention_fwd, q, k, v, o, lse, causal=causal, config=kcfg),
                io_bytes=io + lse.numel() * lse.element_size(), flops=flops,
                rel_error=errors[cfg], block_m=cfg.block_m, block_n=cfg.block_n,
                num_warps=cfg.num_warps, num_stages=cfg.num_stages, **res, **common))
        q4, k4, v4 = (t.view(shape.batch, shape.heads, n, d) for t in (q, k, v))

        def sdpa() -> Any:
            with _flash_backend():
                return torch.nn.functional.scaled_dot_product_attention(q4, k4, v4,
                                                                        is_causal=causal)

        if err_sdpa is not None:
            out.append(self.measure(f"sdpa_flash/{base}", "sdpa_flash", shape.dtype, sdpa,
                                    io_bytes=io, flops=flops, rel_error=err_sdpa, **common))
        return out

    def _check_fused(self, shape: Shape, configs: tuple[FusedConfig, ...]
                     ) -> tuple[dict[FusedConfig, float], float | None]:
        """Every configuration (and SDPA) on two heads of fresh data against the definition."""
        tdt = TORCH_DTYPES[shape.dtype]
        n, d, causal = shape.n, shape.d, shape.causal
        q, k, v = (randn(CHECK_HEADS, n, d, dtype=tdt) for _ in range(3))
        ref_o, ref_lse = reference_attention(q, k, v, causal)
        errors = {}
        for cfg in configs:
            kcfg = K.AttentionConfig(cfg.block_m, cfg.block_n, cfg.num_warps, cfg.num_stages)
            o, lse = poisoned(tuple(q.shape), tdt), poisoned((CHECK_HEADS, n), torch.float32)
            K.attention_fwd(q, k, v, o, lse, causal=causal, config=kcfg)
            what = f"fused attention {cfg.label} ({shape.label})"
            errors[cfg] = require_close(what, o, ref_o, shape.dtype)
            require_close(what + " logsumexp", lse, ref_lse, shape.dtype)
        if DEVICE != "cuda":
            return errors, None  # SDPA's flash backend is CUDA-only
        with _flash_backend():
            sdpa_o = torch.nn.functional.scaled_dot_product_attention(
                q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=causal)[0]
        return errors, rel_error(sdpa_o, ref_o)


@contextmanager
def _flash_backend() -> Iterator[None]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        yield
