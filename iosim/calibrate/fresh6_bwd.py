"""bwd5's rules, frozen at `bwd6-frozen`, judged on the sixth fresh H200 set: pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The record (`python3 benchmarks/backward_h200.py OUT --fresh6 --deadline-s 210`, its grid
`fresh6_grid` committed before the run, the rules frozen at the tag `bwd6-frozen`: bwd5's, not
changed) holds SDPA's and eager's backward, Algorithm 4 in Triton and iosim's Triton backward,
each timed and counted by ncu per kernel, at 19 shapes none equal to an earlier record's. The
same bounds as fresh3_bwd.py; nothing fitted. 'Before' is bwd4's rules (fresh5_bwd.rules_bwd4).
The launcher floor: launches × the seen records' median host time per launch, as fresh5; the
piece-by-piece measurement is benchmarks/launch_floor_h200.py (tests/data/launch-floor-h200.json).
"""

from __future__ import annotations

from typing import Any

from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import fresh5_bwd as F5
from iosim.inputs.hardware import Hardware


def report(record: dict[str, Any], hardware: Hardware,
           seen: list[dict[str, Any]] | None = None) -> str:
    """The Markdown section of reports/backward-h200.md on the sixth fresh record (with the
    fitted constants' sensitivity, and the launcher floor judged from the `seen` records)."""
    text = F3.report(record, hardware, title="bwd5's rules frozen, on a sixth fresh set "
                     "(backward-h200-fresh6.json)", grid="fresh6_grid", tag="bwd6-frozen",
                     rules_before=F5.rules_bwd4, old_triton=False, before_text=F5.BEFORE_TEXT)
    if seen:
        text += "\n".join(F5.launch_floor_lines(seen, record)) + "\n"
    return text
