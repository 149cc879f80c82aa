"""The program ncu profiles for the MLA prefill points: `python -m
iosim.calibrate.mla_prefill_target SPEC.json MANIFEST.json` (benchmarks/mla_prefill_h200.py
builds SPEC: a list of {"count_id", "point"}).

Each point is built on fresh data and checked as in the timing phase, launched once to warm up,
then, with the profiler on (ncu runs with `--profile-from-start off`): evict, the launch, evict
(calibrate/ncu.py's protocol; the loop is evict_target.py's). MANIFEST lists the points
profiled, in launch order.
"""

from __future__ import annotations

import sys

import torch

from iosim.calibrate import variants_mla_prefill as VP
from iosim.calibrate.evict_target import profile_each, read_spec, write_manifest


def main(argv: list[str]) -> int:
    """Profile every item of SPEC between evicts; write MANIFEST in launch order."""
    spec_path, manifest_path = argv
    spec = read_spec(spec_path)
    gen = torch.Generator(device="cuda").manual_seed(1515)
    manifest = profile_each(
        spec, lambda item: VP.build(item["point"], gen),
        lambda item, built: {"count_id": item["count_id"], "id": item["point"]["id"],
                             "rel_error": built.rel_error},
        "mla_prefill_target", free_each=True)
    write_manifest(manifest_path, manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
