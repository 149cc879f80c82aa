"""The FP8 probe's table (benchmarks/fp8_ncu_probe_h200.py's CSVs, benchmarks/fp8-probe-h200/):
per launch, time, SM idle share, cycles per key block, instructions per key block, issue and
pipe use, and the stall reasons that differ.

    python benchmarks/fp8_ncu_probe_report.py [benchmarks/fp8-probe-h200]
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROWS = [
    ("time µs (ncu)", "gpu__time_duration.sum", 1),
    ("tensor pipe % of peak (active)",
     "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("XU (exp2) pipe %", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", 1),
    ("ALU pipe %", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("FMA pipe %", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("stall barrier / issue", "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 1),
    ("stall gmma / issue", "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", 1),
    ("stall long scoreboard / issue",
     "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 1),
    ("stall wait / issue", "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", 1),
]
DETAILS = [("elapsed cycles", "Elapsed Cycles"), ("SM active cycles", "SM Active Cycles"),
           ("issue slots busy %", "Issue Slots Busy"), ("executed instructions",
                                                        "Executed Instructions"),
           ("registers / thread", "Registers Per Thread"), ("grid", "Grid Size")]


def raw(path: Path) -> list[dict[str, str]]:
    rows = list(csv.reader(path.open()))
    at = next(i for i, r in enumerate(rows) if "Kernel Name" in r and "ID" in r)
    return [dict(zip(rows[at], r, strict=True)) for r in rows[at + 1:]
            if len(r) == len(rows[at]) and r[0].strip().isdigit()]


def number(text: str) -> float:
    return float(text.replace(",", ""))


def main(argv: list[str]) -> int:
    here = Path(argv[0] if argv else Path(__file__).parent / "fp8-probe-h200")
    manifest = json.loads((here / "manifest.json").read_text())
    pipes = raw(here / "raw.csv")
    details: dict[str, dict[int, str]] = {}
    for r in csv.DictReader((here / "details.csv").open()):
        details.setdefault(r["Metric Name"], {})[int(r["ID"])] = r["Metric Value"]
    heads, block_m, block_n = 16, 128, 64
    blocks = []
    for p in manifest:
        q = p["n"] // block_m
        per_head = (q * (p["n"] // block_n) if not p["causal"]
                    else sum(min(p["n"] // block_n, (i + 1) * block_m // block_n)
                             for i in range(q)))
        blocks.append(per_head * heads)
    print("| launch | " + " | ".join(p["id"].removeprefix("probe-") for p in manifest) + " |")
    print("|---|" + "---:|" * len(manifest))
    print("| key blocks visited | " + " | ".join(f"{b:,}" for b in blocks) + " |")
    for label, name in DETAILS:
        print(f"| {label} | " + " | ".join(details[name][i] for i in range(len(manifest))) + " |")
    active = [number(details["SM Active Cycles"][i]) for i in range(len(manifest))]
    elapsed = [number(details["Elapsed Cycles"][i]) for i in range(len(manifest))]
    sms = 132
    print("| SM idle share of elapsed | " + " | ".join(
        f"{1 - a / e:.1%}" for a, e in zip(active, elapsed, strict=True)) + " |")
    print("| active cycles per key block per SM | " + " | ".join(
        f"{a / (b / sms):,.0f}" for a, b in zip(active, blocks, strict=True)) + " |")
    print("| instructions per key block | " + " | ".join(
        f"{number(details['Executed Instructions'][i]) / b:,.0f}"
        for i, b in enumerate(blocks)) + " |")
    for label, name, scale in ROWS:
        print(f"| {label} | " + " | ".join(f"{number(r[name]) * scale:.3g}" for r in pipes) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
