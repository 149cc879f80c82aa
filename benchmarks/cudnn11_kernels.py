"""sdpa-cudnn's lean decode steps of a record, kernel by kernel (issue 11, round cudnn11; no GPU):
the lean kernel's and its lean_reduction_kernel's torch.profiler device times against the
estimate of the checkout it runs in.

    python benchmarks/cudnn11_kernels.py RECORD.json [--json OUT.json] [--before B.json]

`--json` keeps the rows; `--before` (another checkout's rows, e.g. main's: run this script with
that tree on PYTHONPATH) puts its errors beside them. Prints a markdown table and the medians.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from iosim.analysis.compare import compare
from iosim.calibrate.cudnn_lean_fit import LEAN_NAME, REDUCTION_NAME
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.workload import Workload


def rows_of(path: Path) -> dict[str, dict[str, Any]]:
    h200 = resolve_hardware("h200").hardware
    out = {}
    for p in json.loads(path.read_text())["points"]:
        if p.get("impl") != "sdpa-cudnn" or "time_s" not in p:
            continue
        reduction = [k["time_s"] for k in p["kernels"] if REDUCTION_NAME in k["name"]]
        if not reduction:
            continue
        w = Workload(**p["workload"])
        kernels = compare(w, h200, impl="sdpa-cudnn", profile="measured").algorithms[-1].kernels
        predicted = {k.name: k.time_s for k in kernels}
        out[str(p["index"])] = {
            "shape": f"b{w.batch} h{w.heads}/{w.kv_heads} N_kv {w.n_kv} d {w.d} {w.dtype}",
            "lean_s": sum(k["time_s"] for k in p["kernels"] if LEAN_NAME in k["name"]),
            "reduction_s": reduction[0], "lean_pred_s": predicted["splitkv_attn"],
            "reduction_pred_s": predicted["splitkv_combine"]}
    return out


def main() -> None:
    args = sys.argv[1:]

    def option(name: str) -> str | None:
        return args[args.index(name) + 1] if name in args else None

    rows = rows_of(Path(args[0]))
    if (out := option("--json")) is not None:
        Path(out).write_text(json.dumps(rows, indent=1))
    before = json.loads(Path(b).read_text()) if (b := option("--before")) else {}
    print("| # | shape | lean µs | lean err before | lean err | reduction µs | "
          "reduction err before | reduction err |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    errs: dict[str, list[float]] = {}
    for i, r in sorted(rows.items(), key=lambda kv: int(kv[0])):
        cells = []
        for kind in ("lean", "reduction"):
            for label, src in (("before", before.get(i)), ("after", r)):
                if src is None:
                    cells.append("")
                    continue
                e = src[f"{kind}_pred_s"] / src[f"{kind}_s"] - 1
                errs.setdefault(f"{kind} {label}", []).append(abs(e))
                cells.append(f"{e:+.0%}")
        print(f"| {i} | {r['shape']} | {r['lean_s'] * 1e6:.1f} | {cells[0]} | {cells[1]} | "
              f"{r['reduction_s'] * 1e6:.1f} | {cells[2]} | {cells[3]} |")
    print()
    for k, v in errs.items():
        print(f"- {k}: median {statistics.median(v):.1%}, worst {max(v):.1%}, "
              f"{sum(e <= 0.12 for e in v)} of {len(v)} within ±12 %")


if __name__ == "__main__":
    main()
