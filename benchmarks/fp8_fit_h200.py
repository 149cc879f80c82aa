"""Fit the H200's one FP8 matmul rate (what configs/gpus/h200.yaml measured.peak_flops.fp8 held,
950 TFLOP/s, until fp8wire shipped benchmarks/fp8_mask_fit.py's per-mask rates) on the FP8
points seen before the fp8mla judgement.

    python benchmarks/fp8_fit_h200.py [tests/data/h200-variants.json]

The measured profile times the fused forward as (matmul FLOPs / r + elementwise FLOPs / the
fitted vector rate) / (fused efficiency · utilisation) (estimates/roofline.py). Every term but r
is this profile's own, fitted on fp16 kernels; r is the one constant fitted here: the value on
a 5 TFLOP/s grid that minimises Σ log(model / measured)² over the seen FP8 points (sections
SEEN). The points of the fresh section "fp8_fresh2" are never read here.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import variants_compare as vc

import iosim

SEEN = ("fp8", "fp8_e5m2", "fp8_fresh", "fp8_block")


def terms(record: dict) -> list[tuple[str, float, float, float, float]]:
    """(id, measured s, matmul FLOPs, elementwise s, efficiency · utilisation) per seen point."""
    out = []
    for section in SEEN:
        for p in record.get(section, []):
            if p.get("status") != "ok" or not p["dtype"].startswith("fp8"):
                continue
            c = iosim.compare(vc.workload(p), vc.GPU, algorithms=["flash2"], profile="measured",
                              **vc.FP8_TILES)
            k = c.algorithm("flash2").kernels[0]
            # the elementwise time the profile charges: its compute time less the matmul's
            matmul_s = k.matmul_flops / c.roofs.matmul_flops_per_s
            out.append((p["id"], p["time_s"], k.matmul_flops, k.compute_time_s - matmul_s,
                        k.efficiency * k.utilisation))
    return out


def main(argv: list[str]) -> int:
    record = json.loads(Path(argv[0] if argv else "tests/data/h200-variants.json").read_text())
    rows = terms(record)

    def errors(rate: float) -> list[float]:
        return [((mm / rate + ew) / eu) / t - 1 for _, t, mm, ew, eu in rows]

    best = min(range(500, 2000, 5),
               key=lambda r: sum(math.log(1 + e) ** 2 for e in errors(r * 1e12)))
    errs = errors(best * 1e12)
    print(f"fp8 matmul rate {best} TFLOP/s: {sum(abs(e) <= 0.15 for e in errs)} of {len(errs)} "
          f"seen points within ±15 %")
    for (pid, t, *_), e in zip(rows, errs, strict=True):
        print(f"  {pid:30s} {t * 1e3:8.3f} ms  {e:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
