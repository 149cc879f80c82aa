"""Which of the variant points (calibrate/variants_points.py) each run of benchmarks/variants_h200.py
times: every section on the H200 (FULL), a few points of each (QUICK, `--quick`), and a dry run's
tiny shapes on the CPU under Triton's interpreter (TINY: the script's logic, not the GPU's speed).
"""

from __future__ import annotations

from typing import Any

from iosim.calibrate.variants_points import (
    CASCADE,
    CASCADE_FRESH,
    CASCADE_FRESH2,
    CASCADE_FRESH3,
    CASCADE_FRESH4,
    CASCADE_FRESH5,
    CASCADE_FRESH6,
    CASCADE_FRESH7,
    CASCADE_JUDGE,
    DECODE,
    DECODE_FRESH,
    DECODE_FRESH2,
    DECODE_FRESH3,
    DECODE_JUDGE,
    FLEX,
    FLEX2,
    FP8,
    FP8_BLOCK,
    FP8_E5M2,
    FP8_FRESH,
    FP8_FRESH2,
    FP8_FRESH3,
    MLA,
    MLA_FRESH,
    MLA_FRESH2,
    MLA_FRESH3,
    MLA_FRESH4,
    PAGED,
    Point,
    fp8_point,
    mla_point,
)

QUICK = {"flex": FLEX[:2] + FLEX[13:14], "flex2": FLEX2[:1], "decode": DECODE[:2],
         "paged": PAGED[:1],
         "cascade": CASCADE[:2], "mla": MLA[:1], "fp8": FP8[:1] + FP8[6:7], "repeat": DECODE[:1],
         "decode_judge": DECODE_JUDGE[:2], "cascade_judge": CASCADE_JUDGE[:2],
         "decode_fresh": DECODE_FRESH[:1], "cascade_fresh": CASCADE_FRESH[:1],
         "fp8_e5m2": FP8_E5M2[:1], "cascade_fresh2": CASCADE_FRESH2[:1],
         "decode_fresh2": DECODE_FRESH2[:1], "cascade_fresh3": CASCADE_FRESH3[:1],
         "mla_fresh": MLA_FRESH[:1], "fp8_fresh": FP8_FRESH[:1], "fp8_block": FP8_BLOCK[:1],
         "fp8_fresh2": FP8_FRESH2[:2], "mla_fresh2": MLA_FRESH2[:1],
         "mla_fresh3": MLA_FRESH3[:1], "cascade_fresh4": CASCADE_FRESH4[:1],
         "decode_fresh3": DECODE_FRESH3[:1], "cascade_fresh5": CASCADE_FRESH5[:1],
         "mla_fresh4": MLA_FRESH4[:1], "fp8_fresh3": FP8_FRESH3[:1],
         "cascade_fresh6": CASCADE_FRESH6[:1], "cascade_fresh7": CASCADE_FRESH7[:1]}
FULL = {"flex": FLEX, "flex2": FLEX2, "decode": DECODE, "paged": PAGED, "cascade": CASCADE,
        "mla": MLA, "fp8": FP8,
        "repeat": [DECODE[1], DECODE[5], DECODE[9]],
        "decode_judge": DECODE_JUDGE, "cascade_judge": CASCADE_JUDGE,
        "decode_fresh": DECODE_FRESH, "cascade_fresh": CASCADE_FRESH, "fp8_e5m2": FP8_E5M2,
        "cascade_fresh2": CASCADE_FRESH2, "decode_fresh2": DECODE_FRESH2,
        "cascade_fresh3": CASCADE_FRESH3, "mla_fresh": MLA_FRESH, "fp8_fresh": FP8_FRESH,
        "fp8_block": FP8_BLOCK, "fp8_fresh2": FP8_FRESH2, "mla_fresh2": MLA_FRESH2,
        "mla_fresh3": MLA_FRESH3, "cascade_fresh4": CASCADE_FRESH4,
        "decode_fresh3": DECODE_FRESH3, "cascade_fresh5": CASCADE_FRESH5,
        "mla_fresh4": MLA_FRESH4, "fp8_fresh3": FP8_FRESH3, "cascade_fresh6": CASCADE_FRESH6,
        "cascade_fresh7": CASCADE_FRESH7}
"""`repeat`: decode shapes timed again at every split count (the run-to-run spread)."""


def _tiny(p: Point, **changes: Any) -> Point:
    return {**p, "id": "tiny-" + p["id"], "d": 32, **changes}


TINY = {
    "flex": [_tiny(FLEX[0], n=300, n_kv=300, heads=2, kv_heads=1, window=50),
             _tiny(FLEX[14], n=300, n_kv=300, heads=2, kv_heads=2, seqlens=[100, 17, 183])],
    "decode": [_tiny(DECODE[0], n_kv=200, heads=4, kv_heads=2, batch=2)],
    "paged": [_tiny(PAGED[0], n_kv=150, heads=2, kv_heads=2, batch=2)],
    "cascade": [_tiny(CASCADE[1], batch=3, prefix_len=96, suffix_lens=[5, 70, 1], heads=4,
                      kv_heads=2)],
    "mla": [{**mla_point("tiny-mla", 2, 70, 20), "dtype": "fp16"}],
    "fp8": [{**fp8_point("tiny-fp8", 128, True, "fp8_e4m3"), "heads": 2, "d": 32},
            {**fp8_point("tiny-fp16", 128, False, "fp16"), "heads": 2, "d": 32}],
    "repeat": [],
    "flex2": [],
    "decode_judge": [_tiny(DECODE_JUDGE[0], n_kv=150, heads=4, kv_heads=1, batch=2, d=64)],
    "cascade_judge": [_tiny(CASCADE_JUDGE[10], batch=3, prefix_len=48, suffix_lens=[3, 90, 20],
                            heads=4, kv_heads=4)],
    "decode_fresh": [_tiny(DECODE_FRESH[3], n_kv=130, heads=4, kv_heads=1, batch=2)],
    "cascade_fresh": [_tiny(CASCADE_FRESH[7], batch=3, prefix_len=64, suffix_lens=[7, 40, 1],
                            heads=4, kv_heads=1)],
    "fp8_e5m2": [{**fp8_point("tiny-fp8-e5m2", 128, True, "fp8_e5m2"), "heads": 2, "d": 32}],
    "cascade_fresh2": [_tiny(CASCADE_FRESH2[11], batch=3, prefix_len=32, suffix_lens=[5, 70, 20],
                             heads=4, kv_heads=2)],
    "decode_fresh2": [_tiny(DECODE_FRESH2[10], n_kv=140, heads=4, kv_heads=1, batch=2)],
    "cascade_fresh3": [_tiny(CASCADE_FRESH3[10], batch=3, prefix_len=48, suffix_lens=[9, 60, 2],
                             heads=4, kv_heads=2)],
    "mla_fresh": [{**mla_point("tiny-mla-fresh", 3, 90, 20), "dtype": "fp16"}],
    "fp8_fresh": [{**fp8_point("tiny-fp8-fresh", 128, False, "fp8_e5m2"), "heads": 2, "d": 32}],
    "fp8_block": [{**fp8_point("tiny-fp8-block", 256, True, "fp8_e4m3"), "heads": 2, "d": 32,
                   "fp8_scales": "block"}],
    "fp8_fresh2": [{**fp8_point("tiny-fp8-fresh2", 128, False, "fp8_e4m3"), "heads": 2, "d": 32},
                   {**fp8_point("tiny-fp8-fresh2-block", 256, True, "fp8_e5m2"), "heads": 2, "d": 32,
                    "fp8_scales": "block"}],
    "mla_fresh2": [{**mla_point("tiny-mla-fresh2", 2, 75, 20), "dtype": "fp16"}],
    "mla_fresh3": [{**mla_point("tiny-mla-fresh3", 2, 66, 20), "dtype": "fp16"}],
    "cascade_fresh4": [_tiny(CASCADE_FRESH4[1], batch=3, prefix_len=32, suffix_lens=[4, 50, 9],
                             heads=4, kv_heads=1)],
    "decode_fresh3": [_tiny(DECODE_FRESH3[4], n_kv=180, heads=40, kv_heads=1, batch=2)],
    "cascade_fresh5": [_tiny(CASCADE_FRESH5[4], batch=3, prefix_len=48, suffix_lens=[6, 30, 2],
                             heads=4, kv_heads=1)],
    "mla_fresh4": [{**mla_point("tiny-mla-fresh4", 2, 80, 40), "dtype": "fp16"}],
    "fp8_fresh3": [{**fp8_point("tiny-fp8-fresh3", 128, True, "fp8_e4m3"), "heads": 2, "d": 32}],
    "cascade_fresh6": [_tiny(CASCADE_FRESH6[3], batch=3, prefix_len=64, suffix_lens=[8, 40, 3],
                             heads=4, kv_heads=2)],
    "cascade_fresh7": [_tiny(CASCADE_FRESH7[4], batch=3, prefix_len=80, suffix_lens=[6, 50, 2],
                             heads=4, kv_heads=1)],
}
"""A dry run's points (CPU, Triton's interpreter): the script's logic, not the GPU's speed."""
