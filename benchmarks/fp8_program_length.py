"""Is the FP8 forward's causal/non-causal split a causal cost or a program-length effect?

    python benchmarks/fp8_program_length.py

Per point of the fused Triton forward (tests/data/h200-calibration.json's attn_fwd, fp16/bf16
at d = d_v, what the measured profile's fused efficiency was fitted on; and the FP8 and
fp16-scaled points of tests/data/h200-variants.json, all seen): iosim's raw error (flash2 at
the point's tiles, measured profile) against the mean key blocks a program walks (n_kv / B_c
non-causal; a causal program i walks i + 1 of them with B_r = B_c multiples, so the mean is
(blocks + 1) / 2 in units of B_r-rows). If causal and non-causal points at the same mean
program length share their error, the split is how long a program is (a fixed cost per
program that one fused efficiency averages), not anything a causal mask adds. Fits
error = α + β / mean key blocks on each family (least squares) and reports the causal and
non-causal medians of the residual. An analysis on seen data: nothing here is shipped.
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


def mean_key_blocks(n: int, n_kv: int, block_q: int, block_kv: int, causal: bool) -> float:
    """Mean key blocks per program over the query blocks (causal: up to the diagonal)."""
    q_blocks = math.ceil(n / block_q)
    if not causal:
        return math.ceil(n_kv / block_kv)
    return sum(min(math.ceil(n_kv / block_kv), math.ceil((i + 1) * block_q / block_kv))
               for i in range(q_blocks)) / q_blocks


def rows() -> dict[str, list[tuple[bool, float, float]]]:
    out: dict[str, list[tuple[bool, float, float]]] = {"fp16/bf16 calibration": [],
                                                       "fp8": [], "fp16 scaled": []}
    calib = json.loads(Path("tests/data/h200-calibration.json").read_text())
    for m in calib["measurements"]:
        if m["kernel"] != "attn_fwd":
            continue
        w = iosim.Workload(m["n"], d=m["d"], heads=m["heads"], batch=m["batch"],
                           dtype=m["dtype"], causal=m["causal"])
        est = iosim.compare(w, "h200", algorithms=["flash2"], profile="measured",
                            block_q=m["block_m"], block_kv=m["block_n"]).algorithm("flash2")
        out["fp16/bf16 calibration"].append((m["causal"], mean_key_blocks(
            m["n"], m["n"], m["block_m"], m["block_n"], m["causal"]),
            est.time_s / m["time_s"] - 1))
    record = json.loads(Path("tests/data/h200-variants.json").read_text())
    for section in SECTIONS:
        for p in record.get(section, []):
            if p.get("status") != "ok":
                continue
            w = vc.workload(p)
            est = iosim.compare(w, vc.GPU, algorithms=["flash2"], profile="measured",
                                **vc.FP8_TILES).algorithm("flash2")
            t = est.tiling
            family = "fp16 scaled" if p["dtype"] == "fp16" else "fp8"
            out[family].append((bool(p["causal"]), mean_key_blocks(
                w.n, w.n_kv, t.block_q, t.block_kv, w.causal), est.time_s / p["time_s"] - 1))
    return out


def main() -> int:
    for family, sel in rows().items():
        causal = np.array([r[0] for r in sel])
        blocks = np.array([r[1] for r in sel])
        err = np.array([r[2] for r in sel])
        print(f"{family}: {len(sel)} points; raw median causal {np.median(err[causal]):+.1%}, "
              f"non-causal {np.median(err[~causal]):+.1%}")
        for lo, hi in ((0, 16), (16, 64), (64, 256), (256, 1e9)):
            on = (blocks >= lo) & (blocks < hi)
            c, nc = err[on & causal], err[on & ~causal]
            print(f"  mean key blocks {lo:>4}-{hi if hi < 1e9 else '':<4}: causal "
                  f"{len(c):2d} median {np.median(c) if len(c) else float('nan'):+.1%}, "
                  f"non-causal {len(nc):2d} median "
                  f"{np.median(nc) if len(nc) else float('nan'):+.1%}")
        design = np.stack([np.ones(len(sel)), 1 / blocks], axis=1)
        coef, *_ = np.linalg.lstsq(design, err, rcond=None)
        res = err - design @ coef
        print(f"  error ≈ {coef[0]:+.3f} {coef[1]:+.3f} / blocks: residual median causal "
              f"{np.median(res[causal]):+.1%}, non-causal {np.median(res[~causal]):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
