"""sdpa-cudnn's decode steps (n = 1) of the given records: call and kernel-model error per point,
with the lean (stream-K) split or without it (no GPU needed).

    python benchmarks/cudnn_lean_errors.py RECORD.json... [--json OUT.json] [--before B.json]
        [--md OUT.md] [--impl NAME] [--all]

Each row: the record and point, the shape, batch × KV heads, the kernels torch.profiler
recorded (2 = the fused kernel + cudnn::fusion::lean_reduction_kernel), the measured call
(do_bench) and kernels (device time), and the prediction of the checkout it runs in
(impl_validation_report.py `predictions`: compare's call time and its kernels' time). `--json`
keeps the rows; `--before` (the rows of another checkout, e.g. main's: run this script with
PYTHONPATH=/work/main) adds its errors beside them; `--md` writes the table; `--all` keeps
the prefill points too (a fresh set's short prefills); `--impl` another implementation's
points (default sdpa-cudnn; round cudnn11 judged sdpa-efficient's with it too).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from impl_validation_report import describe, predictions


def rows_of(paths: list[Path], prefill: bool = False, impl: str = "sdpa-cudnn"
            ) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        record = json.loads(path.read_text())
        decode = {**record, "points": [p for p in record["points"] if p.get("impl") ==
                                       impl and "time_s" in p
                                       and (prefill or p["workload"]["n"] == 1)]}
        for r in predictions(decode):
            w = r["workload"]
            out.append({"record": path.stem.removeprefix("h200-impl-"), "index": r["index"],
                        "shape": describe(w), "bk": w["batch"] * w["kv_heads"],
                        "lean": any("lean_reduction" in k["name"] for k in r["kernels"]),
                        "kernels_measured": r["kernels_measured"],
                        "kernels_predicted": r["kernels_predicted"],
                        "time_s": r["time_s"], "kernels_s": r["kernels_s"],
                        "predicted_s": r["predicted_s"], "error": r["error"],
                        "kernel_error": r["kernel_error"]})
    return sorted(out, key=lambda r: (r["bk"], r["record"], r["index"]))


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.0%}"


def markdown(rows: list[dict[str, Any]], before: dict[tuple[str, int], dict[str, Any]]) -> str:
    lines = ["| record | # | shape | b·h_kv | kernels meas./pred. | call µs | kernels µs | "
             "call err before | call err | kernel err before | kernel err |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = before.get((r["record"], r["index"]), {})
        lines.append(
            f"| {r['record']} | {r['index']} | {r['shape']} | {r['bk']} | "
            f"{r['kernels_measured']}/{r['kernels_predicted']} | {r['time_s'] * 1e6:,.1f} | "
            f"{r['kernels_s'] * 1e6:,.1f} | {_pct(b.get('error'))} | {_pct(r['error'])} | "
            f"{_pct(b.get('kernel_error'))} | {_pct(r['kernel_error'])} |")
    lines.append("")
    for label, key in (("call", "error"), ("kernel model", "kernel_error")):
        for name, chosen in (("before", list(before.values())), ("after", rows)):
            errs = [abs(r[key]) for r in chosen]
            if errs:
                lines.append(f"- {label} {name}: median {statistics.median(errs):.1%}, worst "
                             f"{max(errs):.1%}, {sum(e <= 0.12 for e in errs)} within ±12 % "
                             f"({len(errs)} points)")
    return "\n".join(lines) + "\n"


def main() -> None:
    args = sys.argv[1:]

    def option(name: str) -> str | None:
        return args[args.index(name) + 1] if name in args else None

    skip = {i + 1 for i, a in enumerate(args) if a.startswith("--")}
    paths = [Path(a) for i, a in enumerate(args) if not a.startswith("--") and i not in skip]
    rows = rows_of(paths, prefill="--all" in args, impl=option("--impl") or "sdpa-cudnn")
    if (out := option("--json")) is not None:
        Path(out).write_text(json.dumps(rows, indent=1))
    before_path = option("--before")
    before = ({(r["record"], r["index"]): r for r in json.loads(Path(before_path).read_text())}
              if before_path else {})
    text = markdown(rows, before)
    if (md := option("--md")) is not None:
        Path(md).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
