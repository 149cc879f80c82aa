"""torch-naive's fallback PV GEMM (N_kv % 8 != 0) on H200 records, with the CUTLASS tile cuBLAS
picked (issue 11, round cudnn11; no GPU): per point the PV launch's torch.profiler device time,
estimates/eager_fallback.py's prediction, the tile in the kernel's name, and the rate each SM
streamed its tiles' operands at.

    python benchmarks/eager11_pv.py [RECORD.json ...]     (default: the seen records and eagerfresh11)

The name's tile `AxB` is cuBLAS's column-major view of O = PV (Oᵀ = Vᵀ Pᵀ): A along d, B along
the query rows. So tiles = ⌈d / A⌉ · ⌈N / B⌉ · batch · heads, the busiest SM holds
⌈tiles / SMs⌉ of them, and each tile streams (A + B) · N_kv elements of Vᵀ and Pᵀ. Per SM rate =
⌈tiles / SMs⌉ · (A + B) · N_kv · bytes / time. Kernels whose name carries no tile are listed
without a rate.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from iosim.calibrate.eager_fallback_fit import DATA, SEEN, gemm_times
from iosim.estimates.eager_fallback import fallback_gemm_s
from iosim.inputs.ints import cdiv
from iosim.inputs.workload import Workload

SMS = 132
TILE = re.compile(r"gemm_(?:f16|bf16)_(\d+)x(\d+)_")


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:]] or [
        *(DATA / f"h200-impl-{s}.json" for s in (*SEEN, "eagerfresh9")),
        DATA / "h200-impl-eagerfresh11.json"]
    print("record # shape parity | PV µs | predicted | error | tile | tiles | per-SM GB/s")
    for path in paths:
        for p in json.loads(path.read_text())["points"]:
            if p.get("impl") != "torch-naive" or "time_s" not in p:
                continue
            w = Workload(**p["workload"])
            if w.pass_ != "fwd" or w.n_kv % 8 == 0 or not p.get("kernels"):
                continue
            times = gemm_times(p["kernels"])
            if not times:
                continue
            parity = "odd" if w.n_kv % 2 else "even"
            measured, predicted = times["pv"], fallback_gemm_s("pv", parity, w)
            names = [k["name"] for k in p["kernels"] if "gemm" in k["name"].lower()]
            m = TILE.search(names[-1]) if names else None
            tile, tiles, rate = "-", "-", "-"
            if m:
                a, b = int(m.group(1)), int(m.group(2))
                count = cdiv(w.d_v, a) * cdiv(w.n, b) * w.batch * w.heads
                busiest = cdiv(count, SMS)
                tile, tiles = f"{a}x{b}", str(count)
                rate = f"{busiest * (a + b) * w.n_kv * w.element_bytes / measured / 1e9:.1f}"
            print(f"{path.stem.removeprefix('h200-impl-')} {p['index']} b{w.batch} h{w.heads}/"
                  f"{w.kv_heads} N {w.n}/{w.n_kv} d {w.d} {parity} | {measured * 1e6:.1f} | "
                  f"{predicted * 1e6:.1f} | {predicted / measured - 1:+.0%} | {tile} | {tiles} | "
                  f"{rate}")


if __name__ == "__main__":
    main()
