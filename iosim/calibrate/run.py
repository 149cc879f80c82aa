"""One calibration run on the GPU: measure the plan, then (optionally) count bytes under ncu."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iosim.calibrate.env import device_info, names_match, require_gpu
from iosim.calibrate.plan import L2_FUSED, L2_STANDARD, Plan
from iosim.calibrate.records import Calibration, Counters
from iosim.inputs.hardware import Hardware


def counter_spec(plan: Plan) -> list[dict[str, Any]]:
    """What ncu counts: the standard path per (N, d), the fused kernel per (N, d, mask, config)."""
    spec: list[dict[str, Any]] = []
    for s in plan.standard:
        spec.append({"id": f"standard/{s.dtype}/n{s.n}/d{s.d}", "what": "standard", "n": s.n,
                     "d": s.d, "batch": s.batch, "heads": s.heads, "dtype": s.dtype})
    for s in plan.fused:
        mask = "causal" if s.causal else "full"
        for cfg in plan.fused_configs[s.d]:
            spec.append({"id": f"attn_fwd/{s.dtype}/n{s.n}/d{s.d}/{mask}/{cfg.label}",
                         "what": "fused", "n": s.n, "d": s.d, "batch": s.batch,
                         "heads": s.heads, "causal": s.causal, "dtype": s.dtype,
                         "block_m": cfg.block_m, "block_n": cfg.block_n,
                         "num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
    if not plan.quick:
        for n, d, bh in L2_STANDARD:
            spec.append({"id": f"l2/standard/fp16/n{n}/d{d}/bh{bh}", "what": "standard", "n": n,
                         "d": d, "batch": bh, "heads": 1, "dtype": "fp16"})
        for n, d, bh, causal in L2_FUSED:
            cfg = plan.fused_configs[d][0]
            mask = "causal" if causal else "full"
            spec.append({"id": f"l2/attn_fwd/fp16/n{n}/d{d}/bh{bh}/{mask}/{cfg.label}",
                         "what": "fused", "n": n, "d": d, "batch": bh, "heads": 1,
                         "causal": causal, "dtype": "fp16", "block_m": cfg.block_m,
                         "block_n": cfg.block_n, "num_warps": cfg.num_warps,
                         "num_stages": cfg.num_stages})
    return spec


def measure(hardware: Hardware, plan: Plan, *, command: str,
            progress: Callable[[str], None] | None = None, counters: bool = False,
            warn: Callable[[str], None] | None = None, ncu_log: Path | None = None) -> Calibration:
    """Check and time every kernel of the plan; with `counters`, count their bytes under ncu."""
    require_gpu()
    from iosim.calibrate.bench import Bench

    device = device_info()
    notes = []
    if not names_match(device["name"], hardware.name, hardware.aliases):
        note = (f"the device is '{device['name']}' but --gpu {hardware.name} describes "
                f"'{hardware.display_name}': both recorded; the fit uses the device's numbers "
                f"against that YAML")
        notes.append(note)
        if warn is not None:
            warn(note)
    measurements = tuple(Bench(plan, progress).run())
    result = Counters("not requested (no --counters)")
    if counters:
        from iosim.calibrate import ncu

        if progress is not None:
            progress("ncu: counting DRAM and L2 bytes")
        result = ncu.collect(counter_spec(plan), log=ncu_log)
        if result.status != "ok" and warn is not None:
            warn(f"no hardware counters: {result.status}; continuing without them")
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Calibration(gpu=hardware.name, command=command, created=created, quick=plan.quick,
                       device=device, measurements=measurements, counters=result,
                       notes=tuple(notes))
