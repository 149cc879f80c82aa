"""Algorithm 4 (kernels_fa1_bwd.py) on a GPU: checked against torch autograd in fp32, then timed.

The check runs on fresh random data at the timed N (above CHECK_N_MAX at CHECK_N_MAX plus the
timed N's remainder mod 128, keeping the masked path), one KV head and its query heads, with
NaN-poisoned outputs, and with the forward's true row statistics (m = rowmax S, l = rowsum
exp(S − m), fp32): a relative error over the dtype's tolerance raises CalibrationError before
anything is timed. For timing and counting, l = 1 and m = the natural-log logsumexp of SDPA's
flash forward: the same P = exp(S − m)/l, and the same bytes and work.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from iosim.calibrate import CalibrationError
from iosim.calibrate import bench_bwd as BB
from iosim.calibrate import kernels_fa1_bwd as FA1
from iosim.calibrate.bench import TOLERANCE, exact_fp32, rel_error
from iosim.record import asdict

CHECK_N_MAX = 2048
"""Alg. 4's one program per head walks T_c·T_r tiles serially: the check stays short."""


def row_stats(q: torch.Tensor, k: torch.Tensor, causal: bool, group: int
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """(l, m) of the forward, fp32 (batch·heads, n): m = rowmax S, l = rowsum exp(S − m)."""
    n, d = q.shape[1:]
    ls, ms = [], []
    with exact_fp32():
        for kvh in range(k.shape[0]):
            s = q[kvh * group:(kvh + 1) * group].float() @ k[kvh:kvh + 1].float().transpose(1, 2)
            s = s / math.sqrt(d)
            if causal:
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu_(1),
                                  float("-inf"))
            m = s.amax(dim=-1)
            ms.append(m)
            ls.append(torch.exp(s - m[..., None]).sum(dim=-1))
    return torch.cat(ls).contiguous(), torch.cat(ms).contiguous()


def check_flash1(p: BB.BwdPoint, tiles: FA1.Fa1Tiles) -> dict[str, float]:
    """Relative errors of Alg. 4's dQ, dK, dV against fp32 autograd; CalibrationError over the
    dtype's tolerance or where an element is left unwritten."""
    n = p.n if p.n <= CHECK_N_MAX else CHECK_N_MAX + p.n % 128
    q, k, v, do = BB.random_inputs(p, n=n, batch=1, kv_heads=1)
    o, _, dq_ref, dk_ref, dv_ref = BB.reference(q, k, v, do, p.causal, p.group)
    row_sum, row_max = row_stats(q, k, p.causal, p.group)
    poisoned = tuple(torch.full_like(t, float("nan")) for t in (q, k, v))
    dq, dk, dv = FA1.flash1_bwd(q, k, v, o.to(q.dtype), do, row_sum, row_max, causal=p.causal, tiles=tiles,
                                out=poisoned)  # type: ignore[arg-type]
    tol = TOLERANCE[p.dtype]
    errors = {}
    for name, got, ref in (("dQ", dq, dq_ref), ("dK", dk, dk_ref), ("dV", dv, dv_ref)):
        err = rel_error(got, ref)
        if not math.isfinite(err) or err > tol:
            unwritten = int((~torch.isfinite(got)).sum().item())
            detail = (f"{unwritten} elements unwritten or not finite" if unwritten
                      else f"relative error {err:.2e} > {tol:.0e}")
            raise CalibrationError(f"flash1 backward (Alg. 4) {name} at {p.id} (checked at N = "
                                   f"{n}) failed its check against torch autograd ({detail}); "
                                   "not timing a wrong kernel")
        errors[name] = err
    return errors


def timing_inputs(p: BB.BwdPoint) -> tuple[torch.Tensor, ...]:
    """q, k, v, o, do, l, m of a timed point (O and m from SDPA's flash forward, l = 1)."""
    q, k, v, do = BB.random_inputs(p)
    o, lse = BB.flash_forward(q, k, v, p)
    return q, k, v, o, do, torch.ones_like(lse), lse


def time_flash1(p: BB.BwdPoint, tiles: FA1.Fa1Tiles) -> dict[str, Any]:
    """Alg. 4's time (do_bench median and quartiles) at one point: one record."""
    q, k, v, o, do, row_sum, row_max = timing_inputs(p)
    record: dict[str, Any] = {"id": p.id, **p.fields(), "tiles": asdict(tiles)}

    def fn() -> Any:
        return FA1.flash1_bwd(q, k, v, o, do, row_sum, row_max, causal=p.causal, tiles=tiles)

    record["flash1_s"], record["flash1_p20_s"], record["flash1_p80_s"] = BB.bench(
        fn, warmup_ms=5, rep_ms=50)
    return record
