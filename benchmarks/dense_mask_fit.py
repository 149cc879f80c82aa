"""sdpa-cudnn's dense causal mask figures fitted on the seen H200 records (no GPU): the mask
kernels' rates and cuDNN's time per 128 × 128 block with the bias (analysis/dense_mask.py), by
calibrate/dense_mask_fit.py.

    python benchmarks/dense_mask_fit.py [--judge RECORD.json ...]

Without arguments: the fit on SEEN, each call's error in sample and leave-one-out, and each
figure's sensitivity (the calls' median error when it moves ±10 %). With --judge: the shipped
figures (configs/gpus/h200.yaml) on those records' calls, nothing refitted.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from iosim.analysis.dense_mask import MASK_KERNELS, TILE, dense_block_rounds
from iosim.calibrate import dense_mask_fit as F
from iosim.inputs.gpus import resolve_hardware

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
SEEN = ("fit2", "validation", "validation2", "validation3", "validation4", "validation5",
        "validation6")
"""Every H200 record with a causal chunked-prefill sdpa-cudnn call before the lead's round 10."""


def points(paths: list[Path]) -> list[tuple[str, object, dict[str, float]]]:
    out = []
    for path in paths:
        for w, times in F.dense_points(json.loads(path.read_text())["points"]):
            out.append((path.stem.removeprefix("h200-impl-"), w, times))
    return out


def errors(data: list, hw: object, terms: dict[str, float]) -> list[tuple[str, object, float]]:
    """(record, workload, error of the mask kernels + the attention kernel) per call."""
    out = []
    for name, w, times in data:
        counted = F._counted_bytes(w, hw, "sdpa-cudnn")
        predicted = sum(counted[k] / terms[f"{k}_rate"] for k in MASK_KERNELS)
        bucket = F.head_dim_bucket(w.d)
        predicted += (dense_block_rounds(w, hw.sm_count) * math.ceil(w.n_kv / TILE)
                      * terms[f"dense_block_s_d{bucket}"])
        measured = sum(times[k] for k in (*MASK_KERNELS, "attn"))
        out.append((name, w, predicted / measured - 1))
    return out


def _line(errs: list[float]) -> str:
    a = [abs(e) for e in errs]
    within = sum(x <= 0.12 for x in a)
    return f"median {statistics.median(a):.1%}, worst {max(a):.1%}, {within}/{len(a)} within ±12 %"


def main() -> None:
    hw = resolve_hardware("h200").hardware
    if sys.argv[1:2] == ["--judge"]:
        data = points([Path(p) for p in sys.argv[2:]])
        terms = dict(hw.measured.impls["sdpa-cudnn"].terms)
        errs = errors(data, hw, terms)
        for name, w, e in errs:
            print(f"{name:14} b{w.batch} h{w.heads}/{w.kv_heads} N{w.n}/{w.n_kv} d{w.d} {w.dtype}: {e:+.1%}")
        print("judged (shipped figures):", _line([e for *_, e in errs]))
        return
    data = points([DATA / f"h200-impl-{s}.json" for s in SEEN])
    fitted = F.fit_dense_mask([(w, t) for _, w, t in data], hw)
    for k, v in fitted.items():
        print(f"{k}: {v:.4g}")
    errs = errors(data, hw, fitted)
    for name, w, e in errs:
        print(f"{name:14} b{w.batch} h{w.heads}/{w.kv_heads} N{w.n}/{w.n_kv} d{w.d} {w.dtype}: {e:+.1%}")
    print("in sample:", _line([e for *_, e in errs]))
    loo = []
    for i in range(len(data)):
        rest = [(w, t) for j, (_, w, t) in enumerate(data) if j != i]
        terms = F.fit_dense_mask(rest, hw)
        if any(k not in terms for k in fitted):
            print(f"leave-one-out: {data[i][0]} is its bucket's only call: not judged")
            continue
        loo += [e for *_, e in errors([data[i]], hw, terms)]
    print("leave-one-out:", _line(loo))
    for k in fitted:
        for f in (0.9, 1.1):
            moved = errors(data, hw, {**fitted, k: fitted[k] * f})
            print(f"  {k} x{f}: {_line([e for *_, e in moved])}")


if __name__ == "__main__":
    main()
