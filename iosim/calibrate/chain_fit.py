"""Fit a resident grid's key-block chain (analysis/program_chain.py CHAIN_TERMS) on seen H200
records (issue 11, round cudnn11). Pure: no torch, no GPU.

    python -m iosim.calibrate.chain_fit [RECORD.json ...]

The points: every seen sdpa-efficient decode step (n = 1: one query block per head, so the
grid is b·h programs, one wave on the H200 for every seen step) with its fmha kernel's
torch.profiler device time. The chain is linear in (chain_block_s, 1 / chain_program_bandwidth):
t = blocks · a + blocks · block bytes · c, solved by least squares on the relative error (each
point weighted by 1 / its time). Prints the figures, each point's error, leave-one-out, each
figure's sensitivity (±10 %), and, not fitted, every seen resident prefill forward the chain
would time (its error under the chain).
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from iosim.calibrate.impl_run import timed_calls
from iosim.inputs.ints import cdiv
from iosim.inputs.workload import Workload

IMPL = "sdpa-efficient"
KERNEL_NAME = "fmha_cutlassF"
"""What the forward kernel's name contains (fmha_cutlassF_f16_aligned_64x64_rf_sm80...)."""
DATA = Path(__file__).parents[2] / "tests" / "data"
SEEN = ("fit", "fit2", "calibrate", "validation", "validation2", "validation3", "validation4",
        "validation5", "validation6")
"""Every H200 record with sdpa-efficient forwards before round cudnn11."""


def kernel_points(paths: Iterable[Path], decode: bool = True) -> list[tuple[str, Workload, float]]:
    """(record:index, workload, the fmha kernel's measured seconds) of every sdpa-efficient
    forward of the records: the decode steps (n = 1) or the others."""
    out = []
    for label, p in timed_calls(paths, IMPL):
        w = Workload(**p["workload"])
        if w.pass_ != "fwd" or (w.n == 1) != decode:
            continue
        t = sum(float(k["time_s"]) for k in p["kernels"] if KERNEL_NAME in k["name"])
        if t > 0:
            out.append((label, w, t))
    return out


def block_kv(w: Workload) -> int:
    """The implementation's key block at w's head dim (configs/impls/sdpa-efficient.yaml)."""
    from iosim.inputs.implementations_yaml import get_implementation

    impl = get_implementation(IMPL)
    return int(next(t.block_kv for t in impl.forward_tiles if w.d <= t.d_max))


def _columns(w: Workload) -> tuple[float, float]:
    blocks = cdiv(w.n_kv, block_kv(w))
    return float(blocks), float(blocks * block_kv(w) * (w.d + w.d_v) * w.element_bytes)


def fit_chain(points: Sequence[tuple[str, Workload, float]]) -> dict[str, float]:
    """CHAIN_TERMS by least squares on the relative error (module docstring)."""
    x = np.array([_columns(w) for _, w, _ in points])
    y = np.array([t for _, _, t in points])
    (a, c), *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    return {"chain_block_s": float(a), "chain_program_bandwidth": float(1.0 / c)}


def chain_errors(points: Sequence[tuple[str, Workload, float]], terms: Mapping[str, float]
                 ) -> list[float]:
    """(chain time − measured) / measured of each point under `terms`."""
    from iosim.analysis.program_chain import chain_time_s

    return [chain_time_s(w, block_kv(w), terms) / t - 1 for _, w, t in points]


def _summary(errs: Sequence[float]) -> str:
    a = [abs(e) for e in errs]
    return f"median {statistics.median(a):.1%}, worst {max(a):.1%}, {len(a)} points"


def main(argv: Sequence[str]) -> None:
    """Fit on the records `argv` (default SEEN) and print what the module docstring says."""
    from iosim.analysis.compare import compare
    from iosim.inputs.gpus import resolve_hardware

    paths = [Path(a) for a in argv] or [DATA / f"h200-impl-{s}.json" for s in SEEN]
    points = kernel_points(paths)
    terms = fit_chain(points)
    print(f"chain: {len(points)} seen sdpa-efficient decode steps")
    print(f"  chain_block_s: {terms['chain_block_s']:.4g} s")
    print(f"  chain_program_bandwidth: {terms['chain_program_bandwidth']:.4g} B/s")
    for (name, w, t), e in zip(points, chain_errors(points, terms), strict=True):
        print(f"  {name} b{w.batch} h{w.heads} N_kv {w.n_kv} d {w.d}: {t * 1e6:.1f} µs, {e:+.1%}")
    print(f"  in-sample: {_summary(chain_errors(points, terms))}")
    loo = [chain_errors([p], fit_chain([q for q in points if q is not p]))[0] for p in points]
    print(f"  leave one out: {_summary(loo)}")
    for k in terms:
        meds = [statistics.median(abs(e) for e in chain_errors(points, {**terms, k: terms[k] * s}))
                for s in (0.9, 1.1)]
        print(f"  sensitivity {k} ×0.9 / ×1.1: median {meds[0]:.1%} / {meds[1]:.1%}")
    h200 = resolve_hardware("h200").hardware
    print("resident prefill forwards the chain times (not fitted; the shipped figures):")
    for name, w, t in kernel_points(paths, decode=False):
        est = compare(w, h200, impl=IMPL, profile="measured").algorithms[-1]
        attn = est.kernels[0]
        if attn.timed_by == "chain":
            print(f"  {name} b{w.batch} h{w.heads} N {w.n}/{w.n_kv} d {w.d}"
                  f"{' causal' if w.causal else ''}: {t * 1e6:.1f} µs, chain "
                  f"{attn.time_s / t - 1:+.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
