"""Merge the H200 runs of benchmarks/variants_h200.py into tests/data/h200-variants.json.

    python benchmarks/variants_merge.py OUT.json RUN1.json[:section,...] RUN2.json[:section,...]
    python benchmarks/variants_merge.py --add RECORD.json RUN.json:section,...

`--add` puts a later run's sections (the held-out decode_judge, cascade_judge; var3's
decode_fresh, cascade_fresh, fp8_e5m2, microbench) into an existing record as new keys, its
command and environment appended to "runs" and its new ncu points to "counters"; the rest is
kept as it is.

Each run contributes the sections named after its colon (all four when none is named) and the
ncu counters of those sections ("decode" counters cover decode, paged and cascade points; "flex"
the Flex points). Failed points are left out of the sections and listed under "refused". Floats
are rounded to 5 significant digits (the timings' spread is ≥ 0.5 %).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SECTIONS = ("flex", "flex2", "decode", "paged", "cascade", "mla", "fp8", "repeat")
JUDGE_SECTIONS = ("decode_judge", "cascade_judge")
LATER_SECTIONS = (*JUDGE_SECTIONS, "decode_fresh", "cascade_fresh", "fp8_e5m2", "microbench",
                  "cascade_fresh2", "decode_fresh2", "cascade_fresh3", "mla_fresh", "fp8_fresh",
                  "fp8_block", "fp8_fresh2", "mla_fresh2", "mla_fresh3", "cascade_fresh4",
                  "decode_fresh3", "cascade_fresh5", "mla_fresh4", "fp8_fresh3", "cascade_fresh6",
                  "cascade_fresh7", "cascade_fresh8", "cascade_fresh9")
"""What --add takes: the held-out judge sections, var3's fresh judgement and the microbenchmarks
(a mapping, not rows); var4's decode_fresh2, cascade_fresh3, mla_fresh, fp8_fresh, fp8_block;
var7's fresh decoding sets mla_fresh3, cascade_fresh4; var9's decode_fresh3, cascade_fresh5,
mla_fresh4, fp8_fresh3; var10's cascade_fresh6; var11's cascade_fresh7; var12's
cascade_fresh8; var13's cascade_fresh9."""


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.5g}")
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def counters_key(section: str) -> str:
    return "flex" if section.startswith("flex") else "decode"


def merge(runs: list[tuple[dict[str, Any], list[str]]]) -> dict[str, Any]:
    first = runs[0][0]
    out: dict[str, Any] = {"schema": first["schema"], "timing": first["timing"],
                           "decode_config": first["decode_config"], "runs": [],
                           **{s: [] for s in SECTIONS}, "counters": [], "refused": []}
    for record, sections in runs:
        out["runs"].append({"command": record["command"], "date": record["date"],
                            "environment": record["environment"], "sections": sections,
                            "phase1_s": record.get("phase1_s")})
        ids: set[str] = set()
        for s in sections:
            rows = [r for r in record.get(s, []) if r["status"] == "ok"]
            out[s].extend(rows)
            out["refused"].extend({"id": r["id"], "section": s, "status": r["status"].splitlines()[0]}
                                  for r in record.get(s, []) if r["status"] != "ok")
            ids |= {r["id"] for r in rows}
        for key in sorted({counters_key(s) for s in sections}):
            c = record["counters"].get(key)
            if not c:
                continue
            points = [p for p in c["points"] if p["id"] in ids]
            out["counters"].append({"status": c["status"], "command": c["command"],
                                    "version": c["version"], "metrics": c["metrics"],
                                    "date": record["date"], "points": points})
    return rounded(out)


def add(record: dict[str, Any], run: dict[str, Any], sections: list[str]) -> dict[str, Any]:
    """`record` with `run`'s sections added (ok rows; the others under "refused"), and the run's
    ncu points of any shape the record now holds that the record has no counts of yet (a run
    with --count-also counts an earlier section's points again: those too)."""
    unknown = [s for s in sections if s not in LATER_SECTIONS]
    if unknown:
        raise SystemExit(f"--add takes only {', '.join(LATER_SECTIONS)}, not {', '.join(unknown)}")
    out = dict(record)
    out["runs"] = [*record["runs"], {"command": run["command"], "date": run["date"],
                                     "environment": run["environment"], "sections": sections,
                                     "phase1_s": run.get("phase1_s")}]
    out["refused"] = list(record["refused"])
    for s in sections:
        if isinstance(run.get(s), dict):
            out[s] = run[s]
            continue
        out[s] = [r for r in run.get(s, []) if r["status"] == "ok"]
        out["refused"].extend({"id": r["id"], "section": s, "status": r["status"].splitlines()[0]}
                              for r in run.get(s, []) if r["status"] != "ok")
    held = {r["id"] for v in out.values() if isinstance(v, list) for r in v
            if isinstance(r, dict) and "status" in r and "id" in r}
    counted = {p["count_id"] for c in record["counters"] for p in c.get("points", [])}
    out["counters"] = list(record["counters"])
    for c in run.get("counters", {}).values():
        points = [p for p in c.get("points", [])
                  if p["id"] in held and p["count_id"] not in counted]
        if points:
            out["counters"].append({"status": c["status"], "command": c["command"],
                                    "version": c["version"], "metrics": c["metrics"],
                                    "date": run["date"], "points": points})
    return rounded(out)  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--add":
        _, target, spec = argv
        path, _, names = spec.partition(":")
        merged = add(json.loads(Path(target).read_text()), json.loads(Path(path).read_text()),
                     names.split(",") if names else list(JUDGE_SECTIONS))
        Path(target).write_text(json.dumps(merged, indent=1) + "\n")
        return 0
    target, *specs = argv
    runs = []
    for spec in specs:
        path, _, names = spec.partition(":")
        runs.append((json.loads(Path(path).read_text()),
                     names.split(",") if names else list(SECTIONS)))
    Path(target).write_text(json.dumps(merge(runs), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
