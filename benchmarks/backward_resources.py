"""Registers, spills and shared memory of the Triton backward's compiled kernels (issue 10).

    python3 benchmarks/backward_resources.py OUT.json

Launches the shipped tiles once per (d, causal, even N, dtype) on a small problem, then reads
every compiled variant from the kernels' JIT caches; programs per SM follow from them as in
calibrate/fit.py's programs_per_sm (65,536 registers, 64 warps, 227 KiB shared memory per SM).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(out: str) -> int:
    import torch

    from iosim.algorithms.triton_bwd import TRITON_BWD_TILES
    from iosim.calibrate import bench_bwd as BB
    from iosim.calibrate import kernels_bwd as KB

    for d in TRITON_BWD_TILES:
        for causal in (False, True):
            for n in (1024, 1000):
                for dtype in ("fp16", "bf16"):
                    p = BB.BwdPoint(n, d, 1, 4, 2, causal, dtype)
                    q, k, v, do = BB.random_inputs(p)
                    o, lse = BB.flash_forward(q, k, v, p)
                    KB.attention_bwd(q, k, v, o, do, lse, causal=causal,
                                     config=BB.config_of(TRITON_BWD_TILES[d]))
    torch.cuda.synchronize()
    rows = []
    for name in ("_iosim_bwd_preprocess_kernel", "_iosim_bwd_dkdv_kernel", "_iosim_bwd_dq_kernel",
                 "_iosim_bwd_sum_groups_kernel"):
        fn = getattr(KB, name)
        for cache in fn.device_caches.values():
            for key, compiled in cache[0].items():
                compiled._init_handles()
                rows.append({"kernel": name, "key": str(key)[:300], "regs": compiled.n_regs,
                             "spills": compiled.n_spills,
                             "shared_bytes": compiled.metadata.shared,
                             "num_warps": compiled.metadata.num_warps})
    Path(out).write_text(json.dumps(rows, indent=1))
    for r in rows:
        print(r["kernel"], r["regs"], r["spills"], r["shared_bytes"], r["num_warps"])
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main(sys.argv[1]))
