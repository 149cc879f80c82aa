"""bwd7's rules, frozen at `bwd7-frozen`, judged on the seventh fresh H200 set: pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The record (`python3 benchmarks/backward_h200.py OUT --fresh7`, its grid `fresh7_grid`
committed before the run) holds SDPA's and eager's backward, Algorithm 4 in Triton and iosim's
Triton backward, each timed and counted by ncu per kernel, and two segments with no kernel
(evict, evict) that measure the ncu protocol's own residue in the same run. bwd7's rules over
bwd6's: that residue (dirty_ledger.PROTOCOL_RESIDUE_BYTES) counted to a segment's last kernel,
and the Triton backward's time floored by its Python launcher (estimates/launch_floor.py).
'Before' is bwd6's rules (neither). The same bounds as fresh3_bwd.py; nothing fitted. The
launcher floor is judged on the points under 0.2 ms, which the time bound leaves out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from statistics import median
from typing import Any
from unittest.mock import patch

from iosim.calibrate import backward_fit as B
from iosim.calibrate import dirty_ledger as L
from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate.rules_patched import rules_patched
from iosim.inputs.hardware import Hardware

BEFORE_TEXT = ("bwd6's rules as frozen at `bwd6-frozen`: no protocol residue in the ledger and "
               "the Triton backward's time its kernels' alone")


@contextmanager
def rules_bwd6() -> Iterator[None]:
    """The DRAM rules as frozen at bwd6-frozen (no protocol residue), caches cleared around."""
    with rules_patched(patch.object(L, "PROTOCOL_RESIDUE_BYTES", 0.0)):
        yield


def protocol_lines(record: dict[str, Any]) -> list[str]:
    """The empty segments of the record (evict, evict) against PROTOCOL_RESIDUE_BYTES."""
    empty = [s["residue_write_bytes"] for item in record.get("counters", {}).get("items", [])
             if item["what"] == "null" for s in item["segments"]]
    if not empty:
        return []
    return ["", "### The ncu protocol's own residue in this run", "",
            f"Two segments with no kernel between their evicts wrote back "
            f"{', '.join(f'{e / 1e6:.2f}' for e in empty)} MB (median "
            f"{median(empty) / 1e6:.2f} MB) against the frozen "
            f"{L.PROTOCOL_RESIDUE_BYTES / 1e6:.2f} MB (call 1's two, "
            "tests/data/bwd7-probe-h200.json)."]


def floor_rows(record: dict[str, Any], hardware: Hardware) -> list[tuple[str, float, float,
                                                                         float, float, float]]:
    """(point, measured, kernels' time, launcher floor, at host ×0.8, at ×1.25) for every
    Triton point under the time bound (B.LAUNCH_BOUND_S)."""
    tm = B.TimeModel(hardware.measured.backward_schedule.efficiency,  # type: ignore[union-attr]
                     hardware.measured.backward_schedule.program_overhead_s)  # type: ignore[union-attr]
    out = []
    for p in record["points"]:
        if "triton_s" in p and p["triton_s"] < B.LAUNCH_BOUND_S:
            out.append((p["id"], p["triton_s"], B.predict_time(p, hardware, tm),
                        *(B.predict_launched_time(p, hardware, tm, s) for s in (1.0, 0.8, 1.25))))
    return out


def floor_lines(record: dict[str, Any], hardware: Hardware) -> list[str]:
    """The launcher floor judged (±15 %) on the record's Triton points under the time bound."""
    rows = floor_rows(record, hardware)
    if not rows:
        return []
    ok = sum(abs(f - m) / m <= 0.15 for _, m, _, f, _, _ in rows)
    before = sum(abs(k - m) / m <= 0.15 for _, m, k, _, _, _ in rows)
    lines = ["", "### The Triton backward's launcher floor (points under 0.2 ms)", "",
             f"- {ok} of {len(rows)} within ±15 % (before, the kernels' time alone: {before} "
             f"of {len(rows)}). The floor: estimates/launch_floor.py, its constants measured on "
             "tests/data/launch-floor-h200.json; ×0.8 and ×1.25: every host figure scaled.", "",
             "| point | measured | kernels (before) | floor | error | before | host ×0.8 | "
             "host ×1.25 |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for point, m, k, f, lo, hi in rows:
        lines.append(f"| {point} | {m * 1e6:.0f} µs | {k * 1e6:.0f} µs | {f * 1e6:.0f} µs | "
                     f"{(f - m) / m:+.1%} | {(k - m) / m:+.1%} | {(lo - m) / m:+.1%} | "
                     f"{(hi - m) / m:+.1%} |")
    return lines


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the seventh fresh record."""
    text = F3.report(record, hardware, title="bwd7's rules frozen, on a seventh fresh set "
                     "(backward-h200-fresh7.json)", grid="fresh7_grid", tag="bwd7-frozen",
                     rules_before=rules_bwd6, old_triton="bwd6", before_text=BEFORE_TEXT)
    extra = protocol_lines(record) + floor_lines(record, hardware)
    if PROBE.exists():
        import json

        extra += probe_lines(json.loads(PROBE.read_text()))
    return text + ("\n".join(extra) + "\n" if extra else "")


PROBE = D.DATA / "bwd7-probe-h200.json"


def probe_lines(probe: dict[str, Any]) -> list[str]:
    """bwd7's call 1 (benchmarks/bwd7_probe_h200.py) as Markdown: the launcher's cost by head
    dim and warps, and every profiled kernel's DRAM bytes beside the L2's write sectors."""
    lines = ["", "## bwd7's diagnostic call (bwd7-probe-h200.json)", "",
             f"Record: `{probe['command']}` ({probe['device']}, torch {probe['torch']}, Triton "
             f"{probe['triton']}). Seen data: causes only, nothing judged on it.", "",
             "### The dK/dV kernel's launch by head dim and warps (N 128, one head)", "",
             "| d | warps | registers | spills | shared | cubin | host per launch (100 / "
             "300 calls) |", "|---:|---:|---:|---:|---:|---:|---|"]
    for r in probe["dkdv_launch"]:
        lines.append(f"| {r['d']} | {r['warps']} | {r['n_regs']} | {r['n_spills']} | "
                     f"{r['shared'] / 1024:.0f} KiB | {r['cubin_bytes'] / 1024:.0f} KiB | "
                     f"{r['host_per_launch_100_s'] * 1e6:.1f} / "
                     f"{r['host_per_launch_300_s'] * 1e6:.1f} µs |")
    lines += ["", "The whole attention_bwd call (shipped tiles), host time per call over 50, "
              "100 and 300 calls: " + "; ".join(
                  f"d {r['d']}: " + ", ".join(f"{r[k] * 1e6:.0f}" for k in
                                              ("host_per_call_50_s", "host_per_call_100_s",
                                               "host_per_call_300_s")) + " µs"
                  for r in probe["whole_call"]) + ". The trivial kernel with 8 arguments: "
              + ", ".join(f"{r['warps']} warps {r['host_per_launch_s'] * 1e6:.1f} µs"
                          for r in probe["trivial_warps"]) + ".", "",
              "### Write-back counters (ncu, `ncu_bwd.WRITE_METRICS`)", "",
              "Per launch: DRAM read and write bytes, the L2's write, atomic and reduction "
              "sectors from the SMs (× 32 B), and after each segment the closing evict's "
              "DRAM writes (the residue counted to the segment's last kernel).", "",
              "| item | kernel | DRAM read | DRAM write | L2 writes | L2 atom + red |",
              "|---|---|---:|---:|---:|---:|"]
    sector = 32.0
    for item in probe.get("counters", {}).get("items", []):
        for s in item["segments"]:
            for k in s["kernels"]:
                atom = (k.get("lts__t_sectors_op_atom.sum", 0)
                        + k.get("lts__t_sectors_op_red.sum", 0)) * sector
                lines.append(
                    f"| {item['id']} ({item['what']}) | {k['kernel'][:48]} | "
                    f"{k['dram_read_bytes'] / 1e6:.2f} MB | {k['dram_write_bytes'] / 1e6:.2f} MB"
                    f" | {k.get('lts__t_sectors_srcunit_tex_op_write.sum', 0) * sector / 1e6:.2f}"
                    f" MB | {atom / 1e6:.2f} MB |")
            lines.append(f"| {item['id']} ({item['what']}) | (closing evict: residue) | | "
                         f"{s['residue_write_bytes'] / 1e6:.2f} MB | | |")
    return lines
