"""The program ncu profiles for the issue-14 points: `python -m iosim.calibrate.variants_target
SPEC.json MANIFEST.json` (benchmarks/variants_h200.py builds SPEC).

Each item is built and checked as in the timing phase, launched once to warm up (Flex compiles),
then, with the profiler on (ncu runs with `--profile-from-start off`): evict, the item's launch,
evict (the loop is evict_target.py's). MANIFEST lists the items in launch order;
variants_h200.attach_launches splits ncu's launches at the evicts.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from iosim.calibrate import variants as VA
from iosim.calibrate import variants_mla_fp8 as MF
from iosim.calibrate.evict_target import profile_each, read_spec, write_manifest


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
    spec = read_spec(spec_path)
    gen = torch.Generator(device="cuda").manual_seed(1414)
    cache: dict[str, Any] = {}
    manifest = profile_each(spec, lambda item: build(item, cache, gen), _entry,
                            "variants_target")
    write_manifest(manifest_path, manifest)
    return 0


def _entry(item: dict[str, Any], built: VA.Built) -> dict[str, Any]:
    return {"count_id": item["count_id"], "id": item["point"]["id"],
            **{k: item[k] for k in ("splits", "method", "prefix_splits", "suffix_splits")
               if k in item},
            "kernels_expected": built.kernels, "rel_error": built.rel_error}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
