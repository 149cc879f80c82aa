"""Do written bytes reach DRAM once? A probe for the write residue of issue 11's DRAM judge.

    ncu --csv --page raw --clock-control none --cache-control none \\
        --metrics dram__bytes_read.sum,dram__bytes_write.sum \\
        python3 benchmarks/l2_writeback_probe.py > PROBE.csv
    python benchmarks/l2_writeback_probe.py --judge PROBE.csv      # no GPU

The fused prefill kernels' counted DRAM writes (their own and the dirty lines the next evict
wrote back) exceeded O by 0.5-30 MB on the H200 (tests/data/h200-impl-dram3.csv). This target
writes SIZES bytes with one streaming kernel (kernels.py:fill, every line written whole, once)
between two evict kernels, as the DRAM judge runs a call: if a pure write also counts more
than its bytes, the excess is the L2's, not the attention kernels'.
"""

from __future__ import annotations

import sys
from pathlib import Path

from iosim.calibrate.ncu import EVICT, parse_raw_csv

SIZES_MB = (1, 2, 4, 8, 16, 32, 48, 64, 128)


def target() -> None:
    import torch

    from iosim.calibrate import kernels as K

    buffer, partials = K.evict_buffers()
    for mb in SIZES_MB:
        dst = torch.empty(mb << 20, dtype=torch.uint8, device="cuda").view(torch.float16)
        K.evict(buffer, partials)
        K.fill(dst, 1.0)
        K.evict(buffer, partials)
        torch.cuda.synchronize()
        print(f"@@ fill {mb} MiB", flush=True)


def judge(path: Path) -> list[tuple[int, float, float]]:
    """(MiB written, the fill's DRAM writes + the next evict's, their ratio to the bytes)."""
    launches = parse_raw_csv(path.read_text(), ("dram__bytes_write.sum",))
    out, pos = [], 0
    for mb in SIZES_MB:
        while launches[pos]["kernel"] != EVICT:
            pos += 1
        fill, after = launches[pos + 1], launches[pos + 2]
        pos += 3
        written = fill["dram__bytes_write.sum"] + after["dram__bytes_write.sum"]
        out.append((mb, written, written / (mb << 20)))
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--judge":
        for mb, written, ratio in judge(Path(sys.argv[2])):
            print(f"fill {mb:4} MiB: DRAM writes {written / 2**20:8.2f} MiB ({ratio:.2f}x)")
    else:
        target()
