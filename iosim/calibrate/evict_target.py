"""The loop of an ncu target program that profiles built points one launch each
(mla_prefill_target.py, variants_target.py), written once.

Each item is built and checked as in the timing phase and launched once to warm up (Flex
compiles); one that fails is left out, its reason printed. Then, with the profiler on (ncu runs
with `--profile-from-start off`): evict, the item's launch, evict (calibrate/ncu.py's
protocol), so that ncu's launches split back into items at the evict kernels. The manifest
lists the items profiled, in launch order.

torch is imported at module level: only the target programs, run under ncu on a GPU, import
this.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch

from iosim.calibrate import kernels as K

Item = dict[str, Any]


def profile_each(spec: list[Item], build: Callable[[Item], Any],
                 entry: Callable[[Item, Any], Item], name: str,
                 free_each: bool = False) -> list[Item]:
    """Profile every item of `spec` that `build` can make (its `.launch()`) between two evicts;
    `entry(item, built)` is its manifest entry; `free_each`: free what was built after each
    item (points built from scratch; False where `build` reuses inputs across items)."""
    buffer, partials = K.evict_buffers()
    cudart = torch.cuda.cudart()
    manifest = []
    for item in spec:
        try:
            built = build(item)
            built.launch()
            torch.cuda.synchronize()
        except Exception as exc:  # a point that cannot be built is left out, with its reason
            print(f"{name}: {item['count_id']}: {type(exc).__name__}: {exc}", flush=True)
            continue
        cudart.cudaProfilerStart()
        K.evict(buffer, partials)
        built.launch()
        K.evict(buffer, partials)
        torch.cuda.synchronize()
        cudart.cudaProfilerStop()
        manifest.append(entry(item, built))
        if free_each:
            del built
            torch.cuda.empty_cache()
    return manifest


def read_spec(path: str) -> list[Item]:
    """A target program's SPEC: the items its caller wrote (JSON list)."""
    with open(path) as f:
        spec: list[Item] = json.load(f)
    return spec


def write_manifest(path: str, manifest: list[Item]) -> None:
    """A target program's MANIFEST, in launch order, for its caller to split ncu's launches."""
    with open(path, "w") as f:
        json.dump(manifest, f)
