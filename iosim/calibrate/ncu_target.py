"""The program ncu profiles: `python -m iosim.calibrate.ncu_target SPEC.json MANIFEST.json`.

For each item of SPEC it allocates fresh random inputs and launches, with an evict kernel before
and after (see ncu.py):
    copy      evict, copy, evict
    standard  evict, S = QKᵀ (row strips), softmax, O = PV, evict  (one warm pipeline, as in a real run;
              `isolate: true` puts an evict between the three kernels as well)
    fused     evict, fused attention forward, evict
MANIFEST receives one entry per `_iosim_` launch, in launch order, so that ncu's rows can be
matched to the points they measure.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import torch

from iosim.calibrate import kernels as K
from iosim.calibrate.bench import ROWS_CONFIG, TORCH_DTYPES, matmul_config

NAMES = {"copy": "_iosim_copy_kernel", "evict": "_iosim_evict_kernel", "qk": "_iosim_qk_rows_kernel",
         "pv": "_iosim_bmm_kernel", "softmax": "_iosim_softmax_kernel",
         "attn_fwd": "_iosim_attn_fwd_kernel"}


class Target:
    """The program ncu profiles for the forward: runs each point's kernels, an evict before each."""

    def __init__(self) -> None:
        self.buffer, self.partials = K.evict_buffers()
        self.manifest: list[dict[str, str]] = []

    def launch(self, point: str, name: str, role: str = "kernel") -> None:
        """Note a launched kernel in the manifest (which point, which kernel, its role)."""
        self.manifest.append({"id": point, "kernel": NAMES[name], "name": name, "role": role})

    def evict(self, point: str) -> None:
        """Evict L2 and note the evict kernel in the manifest."""
        K.evict(self.buffer, self.partials)
        self.launch(point, "evict", "evict")

    def run(self, item: dict[str, Any]) -> None:
        """Run one point's kernels (the standard path or the fused kernel) after an evict each."""
        point, what = item["id"], item["what"]
        dtype = TORCH_DTYPES[item.get("dtype", "fp16")]
        if what == "copy":
            src = torch.randn(item["elements"], dtype=dtype, device="cuda")
            dst = torch.empty_like(src)
            self.evict(point)
            K.copy(src, dst)
            self.launch(point, "copy")
            self.evict(point)
            return
        n, d, bh = item["n"], item["d"], item["batch"] * item["heads"]
        q, k, v = (torch.randn(bh, n, d, dtype=dtype, device="cuda") for _ in range(3))
        o = torch.empty_like(q)
        if what == "standard":
            s = torch.empty(bh, n, n, dtype=dtype, device="cuda")
            p = torch.empty_like(s)
            isolate = bool(item.get("isolate", False))
            self.evict(point)
            K.qk_rows(q, k, s, ROWS_CONFIG)
            self.launch(point, "qk")
            if isolate:
                self.evict(point)
            K.softmax_rows(s.view(-1, n), p.view(-1, n), 1.0 / math.sqrt(d))
            self.launch(point, "softmax")
            if isolate:
                self.evict(point)
            K.bmm(p, v, o, matmul_config("pv", d))
            self.launch(point, "pv")
            self.evict(point)
        elif what == "fused":
            lse = torch.empty(bh, n, dtype=torch.float32, device="cuda")
            cfg = K.AttentionConfig(item["block_m"], item["block_n"], item["num_warps"],
                                    item["num_stages"])
            self.evict(point)
            K.attention_fwd(q, k, v, o, lse, causal=item["causal"], config=cfg)
            self.launch(point, "attn_fwd")
            self.evict(point)
        else:
            raise ValueError(f"unknown spec item {what!r}")
        torch.cuda.synchronize()


def main(argv: list[str]) -> int:
    """`ncu_target SPEC MANIFEST`: run every point of SPEC, write what was launched to MANIFEST."""
    spec_path, manifest_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    target = Target()
    for item in spec:
        target.run(item)
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    with open(manifest_path, "w") as f:
        json.dump(target.manifest, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
