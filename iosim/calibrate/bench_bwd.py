"""The backward on a GPU: check the Triton backward against torch autograd in fp32, then time it
beside torch SDPA's flash backward and eager PyTorch's (the standard path's) backward.

A point's check runs on fresh random data, at the timed N (or, above CHECK_N_MAX, at CHECK_N_MAX
plus the timed N's remainder mod 128, which keeps the masked code path), on one KV head and its
group of query heads, with NaN-poisoned outputs; a relative error over the dtype's tolerance (or
an unwritten element) raises CalibrationError before anything is timed. At the timed size the
gradients are compared with SDPA's as well (recorded, `agree_sdpa`).

Timing: `triton.testing.do_bench` medians (it zeroes a 256 MB buffer before every repeat), over
input sets rotated between repeats where two sets fit in RAM_FOR_ROTATION.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import triton.testing

from iosim.algorithms.triton_bwd import BackwardTiles
from iosim.calibrate import CalibrationError
from iosim.calibrate import kernels_bwd as KB
from iosim.calibrate.bench import TOLERANCE, TORCH_DTYPES, exact_fp32, rel_error
from iosim.record import Record, asdict

CHECK_N_MAX = 8192
ROTATION_BYTES = 4 << 30
"""Two input sets are rotated when one set is smaller than this."""
DEVICE = "cuda"


class BwdPoint(Record):
    """One backward point of the record: shape, GQA, causal, dtype."""

    n: int
    d: int
    batch: int
    heads: int
    kv_heads: int
    causal: bool
    dtype: str = "fp16"
    n_kv: int | None = None
    """Keys per head when they differ from the queries (SDPA and eager only; the Triton
    kernels are self-attention)."""

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.heads // self.kv_heads

    @property
    def keys(self) -> int:
        """Keys per head (N_kv)."""
        return self.n if self.n_kv is None else self.n_kv

    @property
    def id(self) -> str:
        """The point's id in the record ("fp16/n4096/d128/b4h32kv8/causal")."""
        mask = "causal" if self.causal else "full"
        keys = "" if self.n_kv is None or self.n_kv == self.n else f"nkv{self.n_kv}/"
        return (f"{self.dtype}/n{self.n}/{keys}d{self.d}/b{self.batch}h{self.heads}"
                f"kv{self.kv_heads}/{mask}")

    def fields(self) -> dict[str, Any]:
        """The point's fields as a dict (for the record's JSON)."""
        return asdict(self)


def config_of(tiles: BackwardTiles) -> KB.BackwardConfig:
    """The Triton backward's launch configuration for the model's backward tiles."""
    return KB.BackwardConfig(tiles.block_m1, tiles.block_n1, tiles.block_m2, tiles.block_n2,
                             tiles.num_warps, tiles.num_stages, tiles.pre_block)


def random_inputs(p: BwdPoint, n: int | None = None, batch: int | None = None, kv_heads: int | None = None
                  ) -> tuple[torch.Tensor, ...]:
    """q, do: (batch·heads, n, d); k, v: (batch·kv_heads, n_kv, d), fresh standard normals."""
    n, b, hkv = n or p.n, batch or p.batch, kv_heads or p.kv_heads
    keys = n if p.n_kv is None else p.n_kv
    dt = TORCH_DTYPES[p.dtype]
    q = torch.randn(b * hkv * p.group, n, p.d, dtype=dt, device=DEVICE)
    k = torch.randn(b * hkv, keys, p.d, dtype=dt, device=DEVICE)
    v = torch.randn(b * hkv, keys, p.d, dtype=dt, device=DEVICE)
    do = torch.randn_like(q)
    return q, k, v, do


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, causal: bool,
              group: int) -> tuple[torch.Tensor, ...]:
    """(O, L, dQ, dK, dV) in fp32 by torch autograd from the definition, one KV head at a time."""
    n, d = q.shape[1:]
    outs: list[list[torch.Tensor]] = [[], [], [], [], []]
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu_(1) if causal else None
    with exact_fp32():
        for kvh in range(k.shape[0]):
            qh = q[kvh * group:(kvh + 1) * group].float().requires_grad_()
            kh = k[kvh:kvh + 1].float().requires_grad_()
            vh = v[kvh:kvh + 1].float().requires_grad_()
            s = qh @ kh.transpose(1, 2) / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(mask, float("-inf"))
            lse = torch.logsumexp(s, dim=-1)
            o = torch.softmax(s, dim=-1) @ vh
            dq, dk, dv = torch.autograd.grad(o, (qh, kh, vh), do[kvh * group:(kvh + 1) * group].float())
            for store, value in zip(outs, (o, lse, dq, dk, dv), strict=True):
                store.append(value.detach())
            del s, o
    return tuple(torch.cat(x) for x in outs)


def check_triton(p: BwdPoint, tiles: BackwardTiles) -> dict[str, float]:
    """Relative errors of dQ, dK, dV against fp32 autograd; CalibrationError when over tolerance."""
    n = p.n if p.n <= CHECK_N_MAX else CHECK_N_MAX + p.n % 128
    q, k, v, do = random_inputs(p, n=n, batch=1, kv_heads=1)
    o, lse, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, p.causal, p.group)
    poisoned = tuple(torch.full_like(t, float("nan")) for t in (q, k, v))
    dq, dk, dv = KB.attention_bwd(q, k, v, o.to(q.dtype), do, lse.float().contiguous(),
                                  causal=p.causal, config=config_of(tiles),
                                  out=poisoned)  # type: ignore[arg-type]
    tol = TOLERANCE[p.dtype]
    errors = {}
    for name, out, ref in (("dQ", dq, dq_ref), ("dK", dk, dk_ref), ("dV", dv, dv_ref)):
        err = rel_error(out, ref)
        if not math.isfinite(err) or err > tol:
            unwritten = int((~torch.isfinite(out)).sum().item())
            detail = (f"{unwritten} elements unwritten or not finite" if unwritten
                      else f"relative error {err:.2e} > {tol:.0e}")
            raise CalibrationError(f"Triton backward {name} at {p.id} (checked at N = {n}) failed "
                                   f"its check against torch autograd ({detail}); not timing a "
                                   "wrong kernel")
        errors[name] = err
    return errors


def flash_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: BwdPoint
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """O and the natural-log logsumexp, from SDPA's flash forward (K/V expanded for GQA)."""
    shape = (p.batch, p.heads, p.n, p.d)
    kv = (p.batch, p.kv_heads, p.n, p.d)
    k4 = k.view(kv).repeat_interleave(p.group, dim=1) if p.group > 1 else k.view(kv)
    v4 = v.view(kv).repeat_interleave(p.group, dim=1) if p.group > 1 else v.view(kv)
    out = torch.ops.aten._scaled_dot_product_flash_attention(q.view(shape), k4, v4, 0.0, p.causal)
    o, lse = out[0], out[1]
    return o.reshape(p.batch * p.heads, p.n, p.d).contiguous(), \
        lse[..., :p.n].reshape(p.batch * p.heads, p.n).float().contiguous()


@contextmanager
def flash_backend() -> Iterator[None]:
    """A context in which torch SDPA runs its flash backend only."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        yield


def sdpa_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor,
                  p: BwdPoint) -> tuple[Callable[[], Any], str]:
    """A closure running SDPA's flash backward once (graph kept), and how GQA was given to it."""
    shape, kv = (p.batch, p.heads, p.n, p.d), (p.batch, p.kv_heads, p.keys, p.d)
    q4 = q.view(shape).detach().requires_grad_()
    do4 = do.view(shape)
    variant = "native"
    try:
        k4, v4 = (t.view(kv).detach().requires_grad_() for t in (k, v))
        with flash_backend():
            o4 = torch.nn.functional.scaled_dot_product_attention(
                q4, k4, v4, is_causal=p.causal, enable_gqa=p.group > 1)
    except RuntimeError:
        # the flash backend without GQA support: K/V expanded to every query head (no group sum)
        variant = "expanded"
        k4, v4 = (t.view(kv).repeat_interleave(p.group, 1).detach().requires_grad_()
                  for t in (k, v))
        with flash_backend():
            o4 = torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=p.causal)
    inputs = (q4, k4, v4)
    return (lambda: torch.autograd.grad(o4, inputs, do4, retain_graph=True)), variant


def eager_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor,
                   p: BwdPoint) -> Callable[[], Any]:
    """Eager PyTorch attention (S = QKᵀ·τ, mask, softmax, PV in the input dtype) and its backward:
    the standard path's backward kernels as PyTorch launches them."""
    qh, kh, vh = (t.detach().requires_grad_() for t in (q, k, v))
    ke = kh.repeat_interleave(p.group, 0) if p.group > 1 else kh
    ve = vh.repeat_interleave(p.group, 0) if p.group > 1 else vh
    s = torch.matmul(qh, ke.transpose(1, 2)) * (1.0 / math.sqrt(p.d))
    if p.causal:
        s = s.masked_fill(torch.ones(p.n, p.keys, dtype=torch.bool, device=q.device).triu_(1),
                          float("-inf"))
    o = torch.matmul(torch.softmax(s, dim=-1), ve)
    return lambda: torch.autograd.grad(o, (qh, kh, vh), do, retain_graph=True)


def bench(fn: Callable[[], Any], warmup_ms: int = 25, rep_ms: int = 100) -> tuple[float, float, float]:
    """(median, 20th, 80th percentile) seconds of `fn` from triton.testing.do_bench."""
    ms = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, quantiles=[0.5, 0.2, 0.8])
    median, p20, p80 = (float(x) * 1e-3 for x in ms)
    return median, p20, p80


def _rotated(fns: Sequence[Callable[..., Any]]) -> Callable[[], Any]:
    cycle = itertools.cycle(fns)
    return lambda: next(cycle)()


def time_point(p: BwdPoint, tiles: BackwardTiles, *, eager: bool) -> dict[str, Any]:
    """Times of the Triton backward, SDPA's flash backward (and eager's): one record."""
    set_bytes = 2 * (p.heads + p.kv_heads) * p.batch * p.n * p.d * 2
    sets = 2 if set_bytes < ROTATION_BYTES else 1
    cfg = config_of(tiles)
    ours, theirs, eagers = [], [], []
    agree: dict[str, float] = {}
    variant = ""
    for index in range(sets):
        q, k, v, do = random_inputs(p)
        o, lse = flash_forward(q, k, v, p)
        sdpa_fn, variant = sdpa_backward(q, k, v, do, p)
        if index == 0:
            mine = KB.attention_bwd(q, k, v, o, do, lse, causal=p.causal, config=cfg)
            ref = sdpa_fn()
            ref_dk, ref_dv = ref[1], ref[2]
            if variant == "expanded":
                kv = (p.batch, p.kv_heads, p.group, p.n, p.d)
                ref_dk, ref_dv = (t.view(kv).sum(2) for t in (ref_dk, ref_dv))
            agree = {name: rel_error(m.reshape(r.shape), r)
                     for name, m, r in zip(("dQ", "dK", "dV"), mine, (ref[0], ref_dk, ref_dv),
                                           strict=True)}
            del mine, ref
        ours.append(lambda q=q, k=k, v=v, o=o, do=do, lse=lse: KB.attention_bwd(
            q, k, v, o, do, lse, causal=p.causal, config=cfg))
        theirs.append(sdpa_fn)
        if eager:
            eagers.append(eager_backward(q, k, v, do, p))
    record: dict[str, Any] = {"id": p.id, **p.fields(), "input_sets": sets,
                              "sdpa_gqa": variant, "agree_sdpa": agree}
    record["triton_s"], record["triton_p20_s"], record["triton_p80_s"] = bench(_rotated(ours))
    record["sdpa_s"], record["sdpa_p20_s"], record["sdpa_p80_s"] = bench(_rotated(theirs))
    if eagers:
        record["eager_s"], record["eager_p20_s"], record["eager_p80_s"] = bench(_rotated(eagers))
    record["speed_ratio"] = record["sdpa_s"] / record["triton_s"]
    return record


def time_torch(p: BwdPoint, *, eager: bool) -> dict[str, Any]:
    """Times of SDPA's flash backward (and eager PyTorch's) alone: no Triton kernel, so a point
    may have N_kv ≠ N. Eager's gradients are compared with SDPA's first (recorded, `agree_eager`)."""
    q, k, v, do = random_inputs(p)
    sdpa_fn, variant = sdpa_backward(q, k, v, do, p)
    record: dict[str, Any] = {"id": p.id, **p.fields(), "sdpa_gqa": variant}
    if eager:
        eager_fn = eager_backward(q, k, v, do, p)
        ref, mine = sdpa_fn(), eager_fn()
        if variant == "expanded":
            kv = (p.batch, p.kv_heads, p.group, p.keys, p.d)
            ref = (ref[0], *(t.view(kv).sum(2) for t in ref[1:]))
        record["agree_eager"] = {name: rel_error(m.reshape(r.shape), r) for name, m, r in
                                 zip(("dQ", "dK", "dV"), mine, ref, strict=True)}
        del ref, mine
        record["eager_s"], record["eager_p20_s"], record["eager_p80_s"] = bench(eager_fn)
    record["sdpa_s"], record["sdpa_p20_s"], record["sdpa_p80_s"] = bench(sdpa_fn)
    return record
