"""One H200 run: every shipped implementation over the validation set, checked, timed, recorded.

    cd <repo> && PYTHONPATH=$PWD python3 benchmarks/impl_validation_h200.py OUT.json [SECONDS [SET]]

SET is `validation` (default) or `fit` (the per-implementation fit set, FIT).

For each point of VALIDATION (none of them used by any fit: the fitted profile in
configs/gpus/h200.yaml comes from tests/data/h200-calibration.json's grid, batch·heads 16-256
at N 1024-16384 powers of two, d 64/128, fp16) and each implementation that accepts the shape,
`iosim calibrate --impl`'s runner (iosim/calibrate/impl_run.py:measure_impls) checks the output
against fp32 attention (iosim/calibrate/measure.py:check), then times it with
triton.testing.do_bench (median) and lists its kernels with torch.profiler. A point an
implementation refuses is recorded with the one-line reason. The run stops starting new points
after SECONDS (default 200) so that it ends inside the device call's limit.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from iosim.calibrate import CalibrationError
from iosim.calibrate.env import device_info
from iosim.calibrate.impl_run import FIT_GRID, gpu_runner, measure_impls
from iosim.calibrate.impl_run import FLEX_POINTS as FIT_FLEX
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

IMPLS = ("sdpa-flash", "iosim-triton", "sdpa-efficient", "sdpa-cudnn", "torch-naive", "flex")


def _w(n: int, n_kv: int | None = None, *, d: int = 128, heads: int = 16, kv: int | None = None,
       batch: int = 1, dtype: str = "fp16", causal: bool = False) -> Workload:
    return Workload(n, n_kv=n_kv, d=d, heads=heads, kv_heads=kv, batch=batch, dtype=dtype,
                    causal=causal)


VALIDATION = (
    # batch·heads below one wave, and around it
    _w(4096, heads=1), _w(4096, heads=4), _w(8192, heads=8, d=64), _w(2048, heads=32, batch=2),
    _w(16384, heads=2, d=64), _w(1024, heads=132), _w(4096, heads=66, d=64),
    # GQA ratios
    _w(4096, heads=32, kv=8, batch=2), _w(2048, heads=32, kv=4, batch=4, dtype="bf16"),
    _w(8192, heads=16, kv=2, causal=True), _w(4096, heads=64, kv=8, d=64),
    # N not a power of two
    _w(1000, heads=32, batch=4), _w(3000, heads=16, batch=2, d=64), _w(5000, heads=8, causal=True),
    _w(12288, heads=8, d=64, dtype="bf16"), _w(6144, heads=16, causal=True, dtype="bf16"),
    # chunked prefill (n != n_kv)
    _w(512, 8192, heads=32), _w(1024, 16384, heads=16, causal=True), _w(256, 32768, heads=32, kv=8),
    _w(2048, 4096, heads=16, d=64, causal=True),
    # head dims 64 / 128 / 256, fp16 and bf16, causal
    _w(4096, heads=16, d=256), _w(4096, heads=16, d=256, causal=True, dtype="bf16"),
    _w(2048, heads=32, d=256, batch=2), _w(8192, heads=16, d=64, causal=True),
    _w(8192, heads=16, d=128, causal=True, dtype="bf16"), _w(16384, heads=16, d=128),
    _w(4096, heads=32, d=64, batch=4, dtype="bf16"), _w(2048, heads=16, d=128, batch=8, causal=True),
    # decoding: query length 1, KV up to 131,072
    _w(1, 4096, heads=32, kv=8, batch=8), _w(1, 16384, heads=32, kv=8, batch=4),
    _w(1, 32768, heads=32, kv=8), _w(1, 65536, heads=32, kv=8, batch=2),
    _w(1, 131072, heads=32, kv=8), _w(1, 131072, heads=8, kv=1, d=64, batch=4),
    _w(1, 8192, heads=16, batch=16, dtype="bf16"), _w(1, 65536, heads=64, kv=8, d=64),
    # K/V larger than the L2 (60 MiB)
    _w(32768, heads=8, d=128), _w(65536, heads=2, d=128, causal=True),
    _w(131072, heads=1, d=64), _w(32768, heads=16, kv=4, d=128, causal=True, dtype="bf16"),
    _w(16384, heads=32, d=64, batch=2), _w(24576, heads=8, d=128, dtype="bf16"),
)
FLEX_POINTS = (0, 7, 13, 16, 20, 28)
"""FlexAttention compiles per shape (tens of seconds): it runs a subset."""

FIT = FIT_GRID
"""The per-implementation fit set (`iosim calibrate --impl`'s grid, iosim/calibrate/impl_run.py):
shapes none of VALIDATION has."""
SETS = {"validation": (VALIDATION, FLEX_POINTS), "fit": (FIT, FIT_FLEX)}


def main() -> None:
    out_path = sys.argv[1]
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 200.0
    set_name = sys.argv[3] if len(sys.argv) > 3 else "validation"
    points, flex_points = SETS[set_name]

    def save(record: dict[str, Any], entry: dict[str, Any]) -> None:
        print(entry["impl"], entry["index"], entry.get("time_s", entry.get("refused")), flush=True)
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)

    record = measure_impls([get_implementation(n) for n in IMPLS], gpu_runner(),
                           device=device_info(), command=" ".join(sys.argv), grid=points,
                           flex_points=flex_points, set_name=set_name, budget_s=budget,
                           on_point=save)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except CalibrationError as exc:
        sys.exit(f"Error: {exc}")
