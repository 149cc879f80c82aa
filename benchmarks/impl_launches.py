"""The launch data of each implementation's kernels, for Nsight Compute to record (one process).

    ncu --csv --metrics launch__grid_size,launch__block_size,launch__registers_per_thread,\\
        launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,\\
        dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \\
        python3 benchmarks/impl_launches.py

Runs each of LAUNCHES once (after one warm-up call outside the profiled range is not possible
under ncu, so every launch is recorded; the printed markers say which rows belong to which
implementation and shape). tests/test_implementations.py holds each profile's declared tiles,
warps and split rule to these rows.

With `--evict` (run ncu with `--cache-control none`) every call runs between two evict kernels
(iosim/calibrate/kernels.py:evict, 8× the L2): the call starts from a cold, clean L2, and the
DRAM writes of the evict after it are the dirty lines its kernels left in L2, so that its DRAM
writes are counted in full (calibrate/ncu.py's protocol; ncu's default cache control flushes
before each kernel and drops those write-backs). The evict's own 256 KB of partial sums are the
only bytes not the call's.
"""

from __future__ import annotations

import sys

import torch

from iosim.calibrate.measure import _tensors, make_runner
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload

LAUNCHES = (
    ("sdpa-flash", Workload(4096, d=64, heads=16)),
    ("sdpa-flash", Workload(4096, d=128, heads=16, causal=True)),
    ("sdpa-flash", Workload(4096, d=256, heads=16)),
    ("sdpa-flash", Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8)),
    ("sdpa-flash", Workload(4096, d=128, heads=1)),
    ("sdpa-efficient", Workload(4096, d=64, heads=16)),
    ("sdpa-efficient", Workload(4096, d=128, heads=16)),
    ("sdpa-cudnn", Workload(4096, d=64, heads=16)),
    ("sdpa-cudnn", Workload(4096, d=128, heads=16, causal=True)),
    ("torch-naive", Workload(2048, d=64, heads=8, kv_heads=2, causal=True)),
)
MORE_LAUNCHES = (
    # issue 11, round 3: decode and chunked-prefill splits, cuDNN's decode kernel, the
    # project's kernel, the eager path at decode
    ("sdpa-flash", Workload(1, n_kv=131072, d=64, heads=8, kv_heads=1, batch=4)),
    ("sdpa-flash", Workload(256, n_kv=32768, d=128, heads=32, kv_heads=8)),
    ("sdpa-flash", Workload(4096, d=128, heads=4)),
    ("sdpa-cudnn", Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8)),
    ("sdpa-cudnn", Workload(2048, n_kv=4096, d=64, heads=16, causal=True)),
    ("sdpa-efficient", Workload(4096, d=256, heads=16)),
    ("iosim-triton", Workload(4096, d=128, heads=4)),
    ("iosim-triton", Workload(4096, d=256, heads=16)),
    ("torch-naive", Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8)),
    ("torch-naive", Workload(4096, d=128, heads=16)),
)


def main() -> None:
    evicting = "--evict" in sys.argv
    if evicting:
        from iosim.calibrate import kernels as K

        buffer, partials = K.evict_buffers()
    for name, w in LAUNCHES + (MORE_LAUNCHES if evicting else ()):
        impl = get_implementation(name)
        q, k, v = _tensors(w, torch)
        run = make_runner(impl, w, q, k, v)
        if impl.runs == "iosim-triton":
            run()  # compile outside the recorded launches
        print(f"@@ {name} n={w.n} n_kv={w.n_kv} d={w.d} heads={w.heads} kv={w.kv_heads} "
              f"batch={w.batch} causal={w.causal}", flush=True)
        if evicting:
            K.evict(buffer, partials)
        torch.cuda.nvtx.range_push(name)
        run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        if evicting:
            K.evict(buffer, partials)
            torch.cuda.synchronize()
        print("@@ end", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
