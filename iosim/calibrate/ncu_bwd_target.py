"""The program ncu profiles for the backward: `python -m iosim.calibrate.ncu_bwd_target SPEC MANIFEST`.

ncu runs it with `--profile-from-start off`: only what lies between cudaProfilerStart and Stop is
profiled, so the inputs (random numbers, SDPA's forward) are made unprofiled, and every kernel
of the measured backward is profiled whatever its name (torch's own kernels too). Each spec item:

    evict, <the backward's kernels>, evict                       (isolate: false)
    evict, preprocess, evict, dkdv, evict, dq, evict[, sum, evict] (Triton, isolate: true)

with `what` null (evict, evict: the protocol's own residue) or one of triton, sdpa (SDPA's
flash backward), eager (eager PyTorch's backward),
flash1 (Algorithm 4 in Triton, kernels_fa1_bwd.py: init, the one-program-per-head kernel[, sum]).
MANIFEST lists, per item, its id and how many evict kernels it launched; ncu's launches are cut
into the items' segments by the evict kernels (ncu_bwd.py).
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from iosim.algorithms.triton_bwd import BackwardTiles
from iosim.calibrate import bench_bwd as BB
from iosim.calibrate import kernels as K
from iosim.calibrate import kernels_bwd as KB
from iosim.calibrate.evict_target import read_spec, write_manifest


class Target:
    """The program ncu profiles for the backward: runs each point's kernels, an evict before each."""

    def __init__(self) -> None:
        self.buffer, self.partials = K.evict_buffers()
        self.evicts = 0

    def evict(self) -> None:
        """Evict L2 (read a buffer larger than it) and count it."""
        K.evict(self.buffer, self.partials)
        self.evicts += 1

    def run(self, item: dict[str, Any]) -> dict[str, Any]:
        """Run one point's backward kernels (after an evict each) and say what was launched."""
        what = item["what"]
        self.evicts = 0
        if what == "null":  # evict, evict: what the protocol itself leaves in a segment
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            self.evict()
            self.evict()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            return {"id": item["id"], "what": what, "isolate": False, "evicts": self.evicts}
        p = BB.BwdPoint(**item["point"])
        q, k, v, do = BB.random_inputs(p)
        torch.cuda.synchronize()
        if what == "flash1":
            from iosim.calibrate import bench_fa1_bwd as BF
            from iosim.calibrate import kernels_fa1_bwd as FA1

            q, k, v, o, do, row_sum, row_max = BF.timing_inputs(p)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            self.evict()
            FA1.flash1_bwd(q, k, v, o, do, row_sum, row_max, causal=p.causal,
                           tiles=FA1.Fa1Tiles(**item["tiles"]))
            self.evict()
        elif what == "triton":
            o, lse = BB.flash_forward(q, k, v, p)
            cfg = BB.config_of(BackwardTiles(**item["tiles"]))
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            self.evict()
            KB.attention_bwd(q, k, v, o, do, lse, causal=p.causal, config=cfg,
                             between=self.evict if item.get("isolate") else None)
            self.evict()
        else:
            fn = BB.sdpa_backward(q, k, v, do, p)[0] if what == "sdpa" else BB.eager_backward(
                q, k, v, do, p)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            self.evict()
            fn()
            self.evict()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        return {"id": item["id"], "what": what, "isolate": bool(item.get("isolate")),
                "evicts": self.evicts}


def main(argv: list[str]) -> int:
    """`ncu_bwd_target SPEC MANIFEST`: run every point of SPEC, write what was launched to MANIFEST."""
    spec_path, manifest_path = argv
    spec = read_spec(spec_path)
    target = Target()
    manifest = []
    for item in spec:
        manifest.append(target.run(item))
        torch.cuda.empty_cache()
    write_manifest(manifest_path, manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
