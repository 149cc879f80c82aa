"""The fused forward's causal/non-causal split on the FP8 record (issue 14: non-causal FP8 points
up to +18 % slow, causal ones up to −17 % fast, and the same at fp16 in the same kernel): two
candidate causes, each a term fitted on every FP8 and fp16-scaled point of
tests/data/h200-variants.json (all of them seen: an analysis, not a judgement; nothing shipped).

    python benchmarks/fp8_causal_split.py

Per point: the measured time against iosim's (flash2 at the kernel's 128 × 64 tiles, the
measured profile), and the waves of its grid (⌈programs / (programs per SM · SMs)⌉). Fitted,
least squares on relative errors, per family (fp8, fp16 through the same kernel):
    a · t + b                           the issue-14 calibration
    a · t + c₀ · waves + b              a program's fixed cost (the MLA prefill kernel's term)
    a · t + c₀ · waves + c_m · waves · 2 · causal + b
                                        and a cost per masked diagonal block (128 / 64 = 2 per
                                        causal program, in a loop of their own)
and the median residual of the causal and of the non-causal points under each.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import variants_compare as vc

import iosim

SECTIONS = ("fp8", "fp8_e5m2", "fp8_fresh", "fp8_block", "fp8_fresh2")


def main() -> int:
    record = json.loads(Path("tests/data/h200-variants.json").read_text())
    rows = []
    for section in SECTIONS:
        for p in record.get(section, []):
            if p.get("status") != "ok":
                continue
            est = iosim.compare(vc.workload(p), vc.GPU, algorithms=["flash2"],
                                profile="measured", **vc.FP8_TILES).algorithm("flash2")
            occ = est.occupancy[0]
            waves = math.ceil(occ.programs / (occ.per_sm * occ.sm_count))
            rows.append((p["dtype"] == "fp16", bool(p["causal"]), p["time_s"], est.time_s, waves))
    for family, fp16 in (("fp8", False), ("fp16 (same kernel)", True)):
        sel = [r for r in rows if r[0] == fp16]
        measured = np.array([r[2] for r in sel])
        raw = np.array([r[3] for r in sel]) / measured - 1
        print(f"{family}: {len(sel)} points; raw: causal median "
              f"{np.median(raw[[r[1] for r in sel]]):+.1%}, non-causal "
              f"{np.median(raw[[not r[1] for r in sel]]):+.1%}")
        features = {"a · t + b": lambda r: [r[3], 1.0],
                    "a · t + c₀ · waves + b": lambda r: [r[3], r[4], 1.0],
                    "… + c_m · masked blocks": lambda r: [r[3], r[4], 2 * r[4] * r[1], 1.0]}
        for label, f in features.items():
            design = np.array([f(r) for r in sel]) / measured[:, None]
            if fp16:  # 6 points: no launch floor of their own
                design = design[:, :-1]
            coef, *_ = np.linalg.lstsq(design, np.ones(len(sel)), rcond=None)
            res = design @ coef - 1
            causal = res[[r[1] for r in sel]]
            other = res[[not r[1] for r in sel]]
            print(f"  {label:26s} coefficients {', '.join(f'{c:.3g}' for c in coef)}: causal "
                  f"median {np.median(causal):+.1%}, non-causal {np.median(other):+.1%}, "
                  f"within ±15 % {int(np.sum(abs(res) <= 0.15))} of {len(sel)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
