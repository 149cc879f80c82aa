"""The Triton kernels folded onto kernels_common.py's helpers, against their versions before the
fold: each one checked against float64, and old and new compared (outputs, PTX, registers, time).

    python3 benchmarks/kernels_fold_h200.py OLD_DIR OUT.json [SECONDS]

OLD_DIR holds the modules as they were before the fold, as a package `old_kernels`
(kernels.py, kernels_variants.py, kernels_mla_fp8.py from `git show main:iosim/calibrate/...`,
their imports of each other pointed at old_kernels). For every folded kernel and two shapes
each: the new version's error against a float64 reference, the largest difference between the
old and the new output (the fold is meant to change no bit), whether the two PTX texts are equal
once the source-location lines are dropped, their registers and spills, and do_bench medians
old, new, old, new (interleaved; the spread of the two old runs is the noise). Stops starting new
rows after SECONDS (default 95). Under TRITON_INTERPRET=1 it runs on the CPU at tiny shapes, as
a dry run (no timing, no PTX).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"


def _ptx_of(fn: Any) -> list[tuple[str, tuple[tuple[str, int], ...], int, int]]:
    """Each compiled specialisation of a @triton.jit function (Triton 3.6's
    JITFunction.device_caches): its PTX without debug lines (locations, files, inline-scope
    labels, debug sections), the histogram of its instruction opcodes, registers, spills."""
    found = []
    for cache in getattr(fn, "device_caches", {}).values():
        kernels = cache[0] if isinstance(cache, tuple) else cache
        for kernel in getattr(kernels, "values", lambda: [])():
            text = getattr(kernel, "asm", {}).get("ptx", "").split("\t.section\t.debug")[0]
            lines = [line.strip() for line in text.splitlines()
                     if not re.match(r"\s*(\.loc|\.file|//|\$L__tmp\d+:)", line)]
            ops = Counter(line.split()[0] for line in lines
                          if line.endswith(";") and not line.startswith((".", "}", "{")))
            found.append(("\n".join(lines), tuple(sorted(ops.items())),
                          int(getattr(kernel, "n_regs", -1)), int(getattr(kernel, "n_spills", -1))))
    return found


def _bench(call: Callable[[], Any]) -> float:
    from triton.testing import do_bench
    return float(do_bench(call, warmup=10, rep=40, return_mode="median"))


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖ / ‖b‖ in float64 (the interpreter tests' measure)."""
    return float((a.double() - b.double()).norm() / b.double().norm())


def _compare(name: str, shape: str, run_old: Callable[[], torch.Tensor],
             run_new: Callable[[], torch.Tensor], reference: torch.Tensor, tol: float,
             fns: tuple[Any, Any], view: Callable[[torch.Tensor], torch.Tensor] = lambda t: t
             ) -> dict[str, Any]:
    """One row: the new output's relative error against `reference` (on `view` of it), the
    largest old-new difference, PTX equality, registers and spills, and the times."""
    new = view(run_new()).double().clone()
    old = view(run_old()).double().clone()
    row: dict[str, Any] = {"kernel": name, "shape": shape, "rel_err_new": _rel(new, reference),
                           "tol": tol, "max_old_new_diff": float((new - old).abs().max())}
    row["correct"] = row["rel_err_new"] <= tol
    if not INTERPRET:
        times = [_bench(run_old), _bench(run_new), _bench(run_old), _bench(run_new)]
        row["ms_old"], row["ms_new"] = min(times[0], times[2]), min(times[1], times[3])
        row["ms_runs"] = times
        row["noise_pct"] = 100 * abs(times[0] - times[2]) / min(times[0], times[2])
        row["new_vs_old_pct"] = 100 * (row["ms_new"] / row["ms_old"] - 1)
        old_ptx, new_ptx = _ptx_of(fns[0]), _ptx_of(fns[1])
        both = bool(old_ptx and new_ptx)
        row["ptx_equal"] = {p[0] for p in old_ptx} == {p[0] for p in new_ptx} if both else None
        row["ptx_same_ops"] = {p[1] for p in old_ptx} == {p[1] for p in new_ptx} if both else None
        row["ptx_new_sha1"] = sorted(hashlib.sha1(p[0].encode()).hexdigest()[:10]
                                     for p in new_ptx)
        row["regs_spills_old"] = sorted((p[2], p[3]) for p in old_ptx)
        row["regs_spills_new"] = sorted((p[2], p[3]) for p in new_ptx)
    return row


def forward_rows(old: Any, new: Any) -> list[Callable[[], dict[str, Any]]]:
    """attention_fwd (kernels.py): its key loop is now kernels_common._iosim_attn_rows."""
    shapes = [(2, 2, 128, 64)] if INTERPRET else [(4, 16, 4096, 128), (8, 16, 2048, 64)]
    rows = []
    for batch, heads, n, d in shapes:
        for causal in (False, True):
            def row(batch: int = batch, heads: int = heads, n: int = n, d: int = d,
                    causal: bool = causal) -> dict[str, Any]:
                g = torch.Generator(device=DEVICE).manual_seed(0)
                q, k, v = (torch.randn(batch * heads, n, d, generator=g, device=DEVICE,
                                       dtype=torch.float16) for _ in range(3))
                cfg_new = new.AttentionConfig(32, 32, 4, 1) if INTERPRET else new.AttentionConfig()
                cfg_old = old.AttentionConfig(32, 32, 4, 1) if INTERPRET else old.AttentionConfig()
                o, lse = torch.empty_like(q), torch.empty(batch * heads, n, device=DEVICE)
                o2, lse2 = torch.empty_like(q), torch.empty_like(lse)

                def run_new() -> torch.Tensor:
                    new.attention_fwd(q, k, v, o, lse, causal=causal, config=cfg_new)
                    return o

                def run_old() -> torch.Tensor:
                    old.attention_fwd(q, k, v, o2, lse2, causal=causal, config=cfg_old)
                    return o2
                sub = slice(0, 2)  # the float64 reference on two heads
                ref = torch.nn.functional.scaled_dot_product_attention(
                    q[sub].double(), k[sub].double(), v[sub].double(), is_causal=causal)
                return _compare("attention_fwd", f"bh{batch * heads} n{n} d{d} "
                                f"{'causal' if causal else 'full'} fp16", run_old, run_new,
                                ref, 2e-3, (old._iosim_attn_fwd_kernel, new._iosim_attn_fwd_kernel),
                                lambda t: t[sub])
            rows.append(row)
    return rows


def scaled_rows(old: Any, new: Any) -> list[Callable[[], dict[str, Any]]]:
    """attention_scaled (kernels_mla_fp8.py): now the forward's key loop with V transposed."""
    fp8 = torch.float8_e4m3fn
    shapes = [(2, 128, 64)] if INTERPRET else [(64, 4096, 128), (128, 2048, 128)]
    rows = []
    for heads, n, d in shapes:
        for causal in (False, True):
            def row(heads: int = heads, n: int = n, d: int = d, causal: bool = causal
                    ) -> dict[str, Any]:
                g = torch.Generator(device=DEVICE).manual_seed(1)
                q, k, v = (torch.randn(heads, n, d, generator=g, device=DEVICE)
                           for _ in range(3))
                dtype = torch.float16 if INTERPRET else fp8
                (qq, sq), (kq, sk), (vq, sv) = (new.quantize(t, dtype) for t in (q, k, v))
                v_t = vq.transpose(1, 2).contiguous()
                descales = torch.tensor([sq, sk, sv], dtype=torch.float32, device=DEVICE)
                cfg = new.ScaledConfig(32, 32, 4, 1) if INTERPRET else new.ScaledConfig()
                cfg_old = old.ScaledConfig(32, 32, 4, 1) if INTERPRET else old.ScaledConfig()
                o = torch.empty(heads, n, d, dtype=torch.float16, device=DEVICE)
                o2 = torch.empty_like(o)

                def run_new() -> torch.Tensor:
                    new.attention_scaled(qq, kq, v_t, o, descales, causal=causal, config=cfg)
                    return o

                def run_old() -> torch.Tensor:
                    old.attention_scaled(qq, kq, v_t, o2, descales, causal=causal, config=cfg_old)
                    return o2
                sub = slice(0, 2)
                ref = new.reference_scaled(qq[sub].float(), kq[sub].float(), vq[sub].float(),
                                           (sq, sk, sv), causal)
                return _compare("attention_scaled", f"h{heads} n{n} d{d} "
                                f"{'causal' if causal else 'full'} "
                                f"{'fp16' if INTERPRET else 'fp8e4m3'}", run_old, run_new, ref,
                                2e-3 if INTERPRET else 4e-2,
                                (old._iosim_attn_scaled_kernel, new._iosim_attn_scaled_kernel),
                                lambda t: t[sub])
            rows.append(row)
    return rows


def decode_rows(old: Any, new: Any) -> list[Callable[[], dict[str, Any]]]:
    """split_kv (kernels_variants.py): the split kernel on the shared softmax, range, result and
    paged-rows helpers; the combine after it is unchanged."""
    # (batch, kv_heads, g, d, keys, page size or None, splits)
    shapes = ([(2, 2, 4, 64, 300, 8, 3), (2, 2, 4, 64, 200, None, 1)] if INTERPRET else
              [(32, 8, 4, 128, 4096, 16, 4), (8, 8, 8, 128, 16384, None, 8)])
    rows = []
    for batch, kv_heads, group, d, keys, page, splits in shapes:
        def row(batch: int = batch, kv_heads: int = kv_heads, group: int = group, d: int = d,
                keys: int = keys, page: int | None = page, splits: int = splits
                ) -> dict[str, Any]:
            g = torch.Generator(device=DEVICE).manual_seed(2)
            q = torch.randn(batch, kv_heads, group, d, generator=g, device=DEVICE,
                            dtype=torch.float16)
            lens = [keys - 7 * i for i in range(batch)]
            ks = [torch.randn(n, kv_heads, d, generator=g, device=DEVICE, dtype=torch.float16)
                  for n in lens]
            vs = [torch.randn_like(k) for k in ks]
            cache = (new.paged_cache(ks, vs, page, generator=g) if page else
                     new.contiguous_cache(ks, vs))
            out_new, out_old = new.decode_buffers(q, splits), new.decode_buffers(q, splits)
            cfg = new.DecodeConfig()

            def run_new() -> torch.Tensor:
                new.split_kv(q, cache, out_new, splits=splits, config=cfg)
                return out_new.o

            def run_old() -> torch.Tensor:
                old.split_kv(q, cache, out_old, splits=splits, config=old.DecodeConfig())
                return out_old.o
            ref, _ = new.reference_decode(q, ks, vs)
            return _compare("split_kv", f"b{batch} kvh{kv_heads} g{group} d{d} L{keys} "
                            f"{'page ' + str(page) if page else 'contiguous'} splits {splits}",
                            run_old, run_new, ref, 2e-3,
                            (old._iosim_decode_split_kernel, new._iosim_decode_split_kernel))
        rows.append(row)
    return rows


def mla_rows(old: Any, new: Any, variants: Any) -> list[Callable[[], dict[str, Any]]]:
    """mla_decode (kernels_mla_fp8.py): the MLA split kernel on the shared helpers."""
    shapes = [(2, 16, 100, 16, 2)] if INTERPRET else [(32, 16, 4096, 64, 4), (8, 128, 8192, 64, 8)]
    rows = []
    for batch, heads, keys, page, splits in shapes:
        def row(batch: int = batch, heads: int = heads, keys: int = keys, page: int = page,
                splits: int = splits) -> dict[str, Any]:
            g = torch.Generator(device=DEVICE).manual_seed(3)
            width = new.D_LATENT + new.D_ROPE
            q = torch.randn(batch, heads, width, generator=g, device=DEVICE,
                            dtype=torch.float16) * 0.1
            lats = [torch.randn(keys - 5 * i, 1, width, generator=g, device=DEVICE,
                                dtype=torch.float16) * 0.1 for i in range(batch)]
            cache = variants.paged_cache(lats, lats, page, generator=g)
            out_new, out_old = new.mla_buffers(q, splits), new.mla_buffers(q, splits)
            cfg = new.MlaConfig(16, 16, 4, 1) if INTERPRET else new.MlaConfig()
            cfg_old = old.MlaConfig(16, 16, 4, 1) if INTERPRET else old.MlaConfig()

            def run_new() -> torch.Tensor:
                new.mla_decode(q, cache, out_new, splits=splits, config=cfg)
                return out_new.o

            def run_old() -> torch.Tensor:
                old.mla_decode(q, cache, out_old, splits=splits, config=cfg_old)
                return out_old.o
            ref = new.reference_mla(q, [c[:, 0] for c in lats])
            return _compare("mla_decode", f"b{batch} h{heads} L{keys} page {page} "
                            f"splits {splits}", run_old, run_new, ref, 2e-3,
                            (old._iosim_mla_split_kernel, new._iosim_mla_split_kernel))
        rows.append(row)
    return rows


def main() -> int:
    old_dir, out_path = sys.argv[1], sys.argv[2]
    budget = float(sys.argv[3]) if len(sys.argv) > 3 else 95.0
    start = time.monotonic()
    sys.path.insert(0, old_dir)
    if INTERPRET:  # the old tree's kernels predate kernels_common's own call: mend it here
        from iosim.calibrate.triton_interpreter import patch_interpreter
        patch_interpreter()
    import old_kernels.kernels as old_k
    import old_kernels.kernels_mla_fp8 as old_mf
    import old_kernels.kernels_variants as old_kv
    import triton

    import iosim.calibrate.kernels as new_k
    import iosim.calibrate.kernels_mla_fp8 as new_mf
    import iosim.calibrate.kernels_variants as new_kv
    header = {"command": " ".join(["python3", *sys.argv]), "torch": torch.__version__,
              "triton": triton.__version__,
              "device": torch.cuda.get_device_name(0) if not INTERPRET else "cpu (interpreter)",
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    jobs = (forward_rows(old_k, new_k) + scaled_rows(old_mf, new_mf) + decode_rows(old_kv, new_kv)
            + mla_rows(old_mf, new_mf, new_kv))
    rows: list[dict[str, Any]] = []
    for job in jobs:
        if time.monotonic() - start > budget:
            rows.append({"skipped": "time budget", "job": job.__doc__ or ""})
            continue
        try:
            rows.append(job())
        except Exception as err:  # record it and go on: one call, every row that can run
            rows.append({"failed": f"{type(err).__name__}: {err}"[:300]})
        with open(out_path, "w") as f:
            json.dump({**header, "rows": rows, "wall_s": time.monotonic() - start}, f, indent=1)
    print(f"{'kernel':<17} {'shape':<44} {'err':>8} {'old-new':>8} {'ptx=':>5} {'ops=':>5} "
          f"{'old ms':>8} {'new ms':>8} {'new/old':>8} {'noise':>6}")
    for r in rows:
        if "kernel" not in r:
            print(r)
            continue
        ms = (f"{r['ms_old']:8.4f} {r['ms_new']:8.4f} {r['new_vs_old_pct']:+7.1f}% "
              f"{r['noise_pct']:5.1f}%") if "ms_old" in r else "   (no timing: interpreter)"
        print(f"{r['kernel']:<17} {r['shape']:<44} {r['rel_err_new']:8.1e} "
              f"{r['max_old_new_diff']:8.1e} {r.get('ptx_equal', '-')!s:>5} "
              f"{r.get('ptx_same_ops', '-')!s:>5} {ms}")
    ok = all(r.get("correct") for r in rows if "kernel" in r)
    print(f"all correct: {ok}; wall {time.monotonic() - start:.1f} s")
    return 0 if ok and not any("failed" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
