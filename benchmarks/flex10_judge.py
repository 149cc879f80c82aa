"""Judge FlexAttention's decoding-template model (round 10, analysis/impl_decoding.py) on a
fresh record without refitting, beside main's shipped profile (round 9's), point by point (no
GPU needed).

    python benchmarks/flex10_judge.py tests/data/h200-impl-flexfresh10.json [OUT.md]

`round 10`: configs/gpus/h200.yaml as frozen at tag flex10-frozen. `main`: the same entry
without round 10's decode_* figures (benchmarks/flex9_judge.py round9: main's flex profile
when round 10 began, its decode steps on the roofline). Errors are predicted / measured − 1
of the call's do_bench time; the kernel columns are the measured template's device time
(torch.profiler; on the decoding template with its combine kernels) against each prediction's
kernel time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.flex8_judge import rows_of, write_report
from benchmarks.flex9_judge import round9, table
from benchmarks.flex10_fit import combine_time
from iosim.analysis.impl_forward import runs_decoding_kernel
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload


def judge(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every timed flex point with round 10's profile (new) and main's (old)."""
    hardware = resolve_hardware("h200").hardware
    rows = rows_of(points, hardware, round9(hardware))
    flex = get_implementation("flex")
    by_index = {p["index"]: p for p in points if p.get("impl") == "flex"}
    for r in rows:  # the decoding template's kernels: the template and its combine
        p = by_index[r["index"]]
        combine = combine_time(p)
        if runs_decoding_kernel(flex, Workload(**p["workload"])) and combine and r["kernel_s"]:
            r["kernel_s"] += combine
    return rows


def main() -> None:
    record = json.loads(Path(sys.argv[1]).read_text())
    lines = table(judge(record["points"]))
    lines = [line.replace("round 9", "round 10").replace("round 8", "main") for line in lines]
    write_report(record, lines, "round 10", "flex10_judge.py")


if __name__ == "__main__":
    main()
