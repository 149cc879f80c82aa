"""Fit a GPU's paged-KV transaction efficiency from measured decode timings (issue 14 item 2).

    python tools/fit_paged_kv.py tests/data/h200-variants.json [--fit ID,ID] [--yaml]

The record is benchmarks/variants_h200.py's (schema iosim/h200-variants/1): its "paged" rows
are split-KV decode kernels over the same shapes with a contiguous cache (page_size null) and
with pages of 1..256 tokens, each timed at every split count ("best_time_s": the fastest). For
one shape s and page size P the measured efficiency is

    e(s, P) = best time with a contiguous cache / best time with pages of P tokens

(the same bytes, moved more slowly). The fit is the median of e(s, P) over the fitting shapes
(--fit, default: the first half of the shapes in the record, sorted by id); the judged rest
prints, for each page size, the held-out e(s, P) against the fitted factor. --yaml prints the
`measured.paged_kv_efficiency` block for the GPU's YAML (estimates/paged_dram.py reads it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any


def efficiencies(record: dict[str, Any]) -> dict[str, dict[int, float]]:
    """shape id → {page size: measured efficiency} from the record's ok "paged" rows."""
    times: dict[str, dict[int | None, float]] = defaultdict(dict)
    for row in record.get("paged", []):
        if row.get("status") != "ok" or "best_time_s" not in row:
            continue
        base = str(row["id"]).rsplit("-p", 1)[0]
        times[base][row.get("page_size")] = float(row["best_time_s"])
    out: dict[str, dict[int, float]] = {}
    for base, by_page in times.items():
        contiguous = by_page.get(None)
        if contiguous is None:
            continue
        out[base] = {int(p): contiguous / t for p, t in by_page.items() if p is not None and t > 0}
    return out


def fit(measured: dict[str, dict[int, float]], fit_ids: list[str]) -> dict[int, float]:
    """Page size → the median efficiency over the fitting shapes (at most 1.0: a page cannot
    beat a contiguous cache on the same bytes; a faster paged run is timing noise)."""
    by_page: dict[int, list[float]] = defaultdict(list)
    for shape in fit_ids:
        for page, value in measured.get(shape, {}).items():
            by_page[page].append(value)
    return {p: min(1.0, statistics.median(v)) for p, v in sorted(by_page.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", type=Path)
    parser.add_argument("--fit", default=None, help="comma-separated shape ids to fit on")
    parser.add_argument("--yaml", action="store_true", help="print the YAML block")
    args = parser.parse_args(argv)
    try:
        record = json.loads(args.record.read_text())
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.record}: {exc}", file=sys.stderr)
        return 2
    measured = efficiencies(record)
    if not measured:
        print(f"error: {args.record} has no ok paged rows with a contiguous baseline",
              file=sys.stderr)
        return 2
    shapes = sorted(measured)
    fit_ids = args.fit.split(",") if args.fit else shapes[: max(1, len(shapes) // 2)]
    unknown = [s for s in fit_ids if s not in measured]
    if unknown:
        print(f"error: --fit names {unknown[0]}, not a shape of the record ({', '.join(shapes)})",
              file=sys.stderr)
        return 2
    factors = fit(measured, fit_ids)
    judged = [s for s in shapes if s not in fit_ids]
    print(f"fitted on {', '.join(fit_ids)}; judged on {', '.join(judged) or 'nothing'}")
    print(f"{'page':>6} {'fitted':>7}  held-out measured (shape: e, error)")
    for page, factor in factors.items():
        held = [(s, measured[s][page]) for s in judged if page in measured[s]]
        words = ", ".join(f"{s}: {e:.2f} ({(factor - e) / e:+.0%})" for s, e in held)
        print(f"{page:>6} {factor:>7.3f}  {words}")
    if args.yaml:
        source = (f"tools/fit_paged_kv.py {args.record.name} (fitted on {', '.join(fit_ids)}): "
                  f"median contiguous/paged best split-KV decode time")
        print("  paged_kv_efficiency:")
        print(f"    source: {json.dumps(source)}")
        print("    by_page_size: {" + ", ".join(f"{p}: {f:.3f}" for p, f in factors.items()) + "}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
