"""The program ncu profiles for the issue-14 points: `python -m iosim.calibrate.variants_target
SPEC.json MANIFEST.json` (benchmarks/variants_h200.py builds SPEC).

Each item is built and checked as in the timing phase, launched once to warm up (Flex compiles),
then, with the profiler on (ncu runs with `--profile-from-start off`): evict, the item's launch,
evict. MANIFEST lists the items in launch order; variants_h200.attach_launches splits ncu's
launches at the evicts.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch

from iosim.calibrate import kernels as K
from iosim.calibrate import variants as VA
from iosim.calibrate import variants_mla_fp8 as MF


def build(item: dict[str, Any], cache: dict[str, Any], gen: torch.Generator) -> VA.Built:
    """The item's point built and checked (decode and cascade inputs reused across items)."""
    point = item["point"]
    if point["kind"] in ("flex", "fp8"):
        cache.clear()
        torch.cuda.empty_cache()
        return (VA.build_flex if point["kind"] == "flex" else MF.build_fp8)(point, gen)
    if cache.get("id") != point["id"]:
        cache.clear()
        torch.cuda.empty_cache()
        problem: Any = (VA.decode_problem(point, gen) if point["kind"] == "decode"
                        else MF.mla_problem(point, gen) if point["kind"] == "mla"
                        else VA.cascade_problem(point, gen))
        cache.update(id=point["id"], problem=problem)
    problem = cache["problem"]
    if point["kind"] in ("decode", "mla"):
        return problem.build(item["splits"])  # type: ignore[no-any-return]
    if item["method"] == "splitkv":
        return problem.build_splitkv(item["splits"])  # type: ignore[no-any-return]
    return problem.build_cascade(item["prefix_splits"],  # type: ignore[no-any-return]
                                 item["suffix_splits"])


def main(argv: list[str]) -> int:
    """Profile every item of SPEC between evicts; write MANIFEST in launch order."""
    spec_path, manifest_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    gen = torch.Generator(device="cuda").manual_seed(1414)
    buffer, partials = K.evict_buffers()
    cudart = torch.cuda.cudart()
    manifest = []
    cache: dict[str, Any] = {}
    for item in spec:
        try:
            built = build(item, cache, gen)
            built.launch()
            torch.cuda.synchronize()
        except Exception as exc:  # a point that cannot be built is left out, with its reason
            print(f"variants_target: {item['count_id']}: {type(exc).__name__}: {exc}", flush=True)
            continue
        cudart.cudaProfilerStart()
        K.evict(buffer, partials)
        built.launch()
        K.evict(buffer, partials)
        torch.cuda.synchronize()
        cudart.cudaProfilerStop()
        manifest.append({"count_id": item["count_id"], "id": item["point"]["id"],
                         **{k: item[k] for k in ("splits", "method", "prefix_splits",
                                                 "suffix_splits") if k in item},
                         "kernels_expected": built.kernels, "rel_error": built.rel_error})
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
