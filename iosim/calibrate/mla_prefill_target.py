"""The program ncu profiles for the MLA prefill points: `python -m
iosim.calibrate.mla_prefill_target SPEC.json MANIFEST.json` (benchmarks/mla_prefill_h200.py
builds SPEC: a list of {"count_id", "point"}).

Each point is built on fresh data and checked as in the timing phase, launched once to warm up,
then, with the profiler on (ncu runs with `--profile-from-start off`): evict, the launch, evict
(calibrate/ncu.py's protocol). MANIFEST lists the points profiled, in launch order.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch

from iosim.calibrate import kernels as K
from iosim.calibrate import variants_mla_prefill as VP


def main(argv: list[str]) -> int:
    """Profile every item of SPEC between evicts; write MANIFEST in launch order."""
    spec_path, manifest_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    gen = torch.Generator(device="cuda").manual_seed(1515)
    buffer, partials = K.evict_buffers()
    cudart = torch.cuda.cudart()
    manifest: list[dict[str, Any]] = []
    for item in spec:
        try:
            built = VP.build(item["point"], gen)
            built.launch()
            torch.cuda.synchronize()
        except Exception as exc:  # a point that cannot be built is left out, with its reason
            print(f"mla_prefill_target: {item['count_id']}: {type(exc).__name__}: {exc}",
                  flush=True)
            continue
        cudart.cudaProfilerStart()
        K.evict(buffer, partials)
        built.launch()
        K.evict(buffer, partials)
        torch.cuda.synchronize()
        cudart.cudaProfilerStop()
        manifest.append({"count_id": item["count_id"], "id": item["point"]["id"],
                         "rel_error": built.rel_error})
        del built
        torch.cuda.empty_cache()
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
