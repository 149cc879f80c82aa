"""The cascade-vs-split-KV verdict at every point of a shared-prefix sweep: compare's
(analysis/cascade_verdict.py, the decoding time model), one note per point, so that `sweep`
names the winner by the same rule as `compare` and `report`."""

from __future__ import annotations

import itertools

from iosim.analysis.sweep_spec import AXES, WORKLOAD_AXES, SweepSpec, spec_workload
from iosim.inputs.hardware import Hardware

MAX_VERDICT_POINTS = 64
"""compare runs at each point (about 0.1-0.3 s a point); a larger shared-prefix grid names no
winner (one note says so)."""


def verdict_notes(spec: SweepSpec, hardware: tuple[Hardware, ...]) -> tuple[str, ...]:
    """One note per grid point ("gpu h200, kv_heads 8: Shared prefix: cascade ... wins, ...")
    where `spec` is a shared-prefix batch listing both cascade and splitkv; none otherwise."""
    from iosim.analysis.cascade_verdict import cascade_verdict
    from iosim.analysis.compare import compare

    names = {a.strip().lower() for a in spec.algorithms}
    if spec.prefix_len is None or not {"cascade", "splitkv"} <= names or spec.impl is not None:
        return ()
    if spec.points > MAX_VERDICT_POINTS:
        return (f"the shared-prefix verdict runs compare at every point: {spec.points:,} points "
                f"are more than {MAX_VERDICT_POINTS}; `iosim compare` at a point names the "
                f"winner",)
    axis_values = [spec.values(axis) for axis in AXES]
    varying = [a for a in AXES if len(spec.values(a)) > 1]
    notes = []
    for index in itertools.product(*(range(len(v)) for v in axis_values)):
        values = {axis: axis_values[k][index[k]] for k, axis in enumerate(AXES)}
        workload = spec_workload(spec, **{a: values[a] for a in WORKLOAD_AXES})
        hw = hardware[index[AXES.index("gpu")]]
        result = compare(workload, hw, algorithms=["splitkv", "cascade"],
                         block_q=values["block_q"], block_kv=values["block_kv"],
                         sram=values["sram_bytes"], sram_elements=values["sram_elements"],
                         splits=values["splits"], profile=spec.profile)
        verdict = cascade_verdict(result, sram=values["sram_bytes"],
                                  sram_elements=values["sram_elements"], profile=spec.profile)
        if verdict is None:
            continue
        where = ", ".join(f"{a} {values[a]}" for a in varying)
        notes.append(f"{where}: {verdict.sentence()}" if where else verdict.sentence())
    return tuple(notes)
