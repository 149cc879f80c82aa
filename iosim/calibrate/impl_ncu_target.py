"""The program ncu profiles for `calibrate --impl --counters`:
`python -m iosim.calibrate.impl_ncu_target SPEC.json MANIFEST.json` (impl_ncu.py).

For each point of SPEC: fresh random inputs, the implementation run once outside any range
(compilation, autotuning, cuDNN's plan), then, inside the NVTX range ncu profiles, an evict
kernel, one run, an evict kernel. MANIFEST receives the point ids in launch order.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch

from iosim.calibrate import kernels as K
from iosim.calibrate.evict_target import read_spec, write_manifest
from iosim.calibrate.impl_ncu import RANGE
from iosim.calibrate.measure import _tensors, make_runner
from iosim.calibrate.ncu import AFTER_COMPILE, COMPILED, GATE, GO, READY
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload


def _gate(timeout_s: float = 600) -> None:
    """With ncu.py's GATE set (`iosim measure`): say READY, then wait for GO, so that the caller
    times its own run while this process, compiled and warm, stays off the GPU."""
    folder = os.environ.get(GATE)
    if not folder:
        return
    (Path(folder) / READY).write_text(json.dumps(PHASES))
    deadline = time.monotonic() + timeout_s
    while not (Path(folder) / GO).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


PHASES: dict[str, float] = {}
"""When (time.time()) this process reached each phase, written into READY (ncu.py PHASES)."""


def _since_start() -> float:
    """The wall clock (time.time()): `iosim measure` sets it against its own start."""
    return time.time()


def _wait_for_compiled(timeout_s: float = 600) -> None:
    """Gated (ncu.py COMPILED): wait until the caller has compiled, unless AFTER_COMPILE=0."""
    folder = os.environ.get(GATE)
    if not folder or os.environ.get(AFTER_COMPILE) == "0":
        return
    deadline = time.monotonic() + timeout_s
    while not (Path(folder) / COMPILED).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    """Run every point of SPEC as the module docstring says; write the ids to MANIFEST."""
    spec_path, manifest_path = argv
    spec = read_spec(spec_path)
    PHASES["main_s"] = _since_start()
    buffer, partials = K.evict_buffers()
    PHASES["buffers_s"] = _since_start()
    done = []
    for item in spec:
        w = Workload(**item["workload"])
        impl = get_implementation(item["impl"])
        q, k, v = _tensors(w, torch)
        run = make_runner(impl, w, q, k, v)
        PHASES["torch_ready_s"] = _since_start()
        _wait_for_compiled()
        PHASES["compile_start_s"] = _since_start()
        run()
        torch.cuda.synchronize()
        PHASES["compiled_s"] = _since_start()
        _gate()
        torch.cuda.nvtx.range_push(RANGE)
        K.evict(buffer, partials)
        run()
        K.evict(buffer, partials)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        done.append({"id": item["id"]})
        del q, k, v, run
        torch.cuda.empty_cache()
    write_manifest(manifest_path, done)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
