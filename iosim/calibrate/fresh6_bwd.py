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

import json
from typing import Any

from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import fresh5_bwd as F5
from iosim.calibrate import torch_bwd_dram as D
from iosim.inputs.hardware import Hardware

FLOOR = D.DATA / "launch-floor-h200.json"


def floor_lines(floor: dict[str, Any]) -> list[str]:
    """The launcher-floor probe (benchmarks/launch_floor_h200.py) as two Markdown tables."""
    lines = ["", "### The launcher floor, piece by piece (launch-floor-h200.json)", "",
             f"Record: `{floor['command']}` ({floor['device']}, torch {floor['torch']}, Triton "
             f"{floor['triton']}), run after fresh6 in the same call. Host time per call "
             "(perf_counter over 300 calls, median of 5 batches), each segment of "
             "attention_bwd between its launches (segment 1 includes the input checks and "
             "the buffers), and the whole call under do_bench as the calibration times it:", "",
             "| N | d | heads | kv | launches | host per call | segments (µs) | do_bench |",
             "|---:|---:|---:|---:|---:|---:|---|---:|"]
    for b in floor["backward"]:
        segs = ", ".join(f"{x * 1e6:.1f}" for x in b["segment_median_s"])
        lines.append(f"| {b['n']} | {b['d']} | {b['heads']} | {b['kv_heads']} | "
                     f"{b['launches']} | {b['host_per_call_s'] * 1e6:.1f} µs | {segs} | "
                     f"{b['do_bench_s'] * 1e6:.1f} µs |")
    lines += ["", "A trivial Triton kernel (one store), host time per launch:", "",
              "| arguments | grid | host per launch |", "|---:|---:|---:|"]
    for t in floor["trivial"]:
        lines.append(f"| {t['args']} | {t['grid']} | {t['host_per_launch_s'] * 1e6:.1f} µs |")
    lines += ["", "What it says: the grid does not set the floor (1 → 8,192 programs, 1 → 64 "
              "heads: within the noise); the argument count does (about 17 µs + 1 µs per "
              "argument for the trivial kernel); and iosim's d = 128 launches cost the host "
              "about 1.6× its d = 64 ones with the same arguments (a cause not found here). "
              "do_bench reads less than the host time (our reading, not measured: the "
              "L2-flush kernel it launches before each call overlaps the call's first host "
              "work), and the probe's "
              "do_bench figures do not reproduce fresh6's timed points (N 160, d 64: 73 µs "
              "there, 59-67 µs here at N 128; N 900, d 128: 82 µs there, 145 µs here at "
              "N 256): the floor is not modelled in `compare`."]
    return lines


def report(record: dict[str, Any], hardware: Hardware,
           seen: list[dict[str, Any]] | None = None) -> str:
    """The Markdown section of reports/backward-h200.md on the sixth fresh record (with the
    fitted constants' sensitivity, and the launcher floor judged from the `seen` records)."""
    text = F3.report(record, hardware, title="bwd5's rules frozen, on a sixth fresh set "
                     "(backward-h200-fresh6.json)", grid="fresh6_grid", tag="bwd6-frozen",
                     rules_before=F5.rules_bwd4, old_triton=False, before_text=F5.BEFORE_TEXT)
    if seen:
        text += "\n".join(F5.launch_floor_lines(seen, record)) + "\n"
    if FLOOR.exists():
        text += "\n".join(floor_lines(json.loads(FLOOR.read_text()))) + "\n"
    return text
