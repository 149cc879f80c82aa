"""Fit each implementation's time terms on the fit records (no GPU needed); print or write them.

    python benchmarks/impl_fit.py tests/data/h200-impl-fit.json tests/data/h200-impl-fit2.json \\
        tests/data/h200-impl-validation.json [--write] [--impl=flex] [--judged=TEXT] [--hold]
    python benchmarks/impl_fit.py points.jsonl      # what `iosim measure --record` appended
    python benchmarks/impl_fit.py RECORDS... --impl=torch-naive --hold --refit=memory_mask --write

The fit itself is iosim/calibrate/impl_fit.py (one home, what `iosim calibrate --impl` runs).
The per-program bandwidth is the stream probe's (tests/data/h200-sm-bandwidth.json), a measured
input. `--write` puts each fit in configs/gpus/<gpu>.yaml measured.impls.NAME (efficiency,
call_overhead_s, the time terms, source; its `backward` kept) through calibrate/yaml_out.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from iosim.calibrate.impl_fit import (
    fit_record,
    held_parameters,
    merged_records,
    program_bandwidth,
)
from iosim.calibrate.yaml_out import merge_impl_fits, write_measured_yaml
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.impl_calibration import TIME_TERMS

PROBE = Path(__file__).parents[1] / "tests" / "data" / "h200-sm-bandwidth.json"


def entry(fitted: dict[str, Any], source: str) -> dict[str, Any]:
    """The measured.impls entry of one fit (4 significant digits)."""
    return {"efficiency": {k: round(v, 4) for k, v in fitted["efficiency"].items()},
            "call_overhead_s": float(f"{fitted['call_overhead_s']:.4g}"),
            **{k: float(f"{v:.4g}") for k, v in fitted["terms"].items()}, "source": source}


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:] if not a.startswith("--")]
    # --impl=NAME[,NAME]: fit only these (e.g. flex, re-timed on its own records)
    only = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:]
                 if a.startswith("--impl=")), None)
    judged = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--judged=")),
                  "tests/data/h200-impl-validation4.json (reports/impl-validation)")
    # --hold: every figure the GPU YAML's entry already has stays as it is; only new ones
    # (a new kernel's memory efficiency, a combine kernel's figures) are fitted
    hold = "--hold" in sys.argv
    record = merged_records(paths)
    gpu = record["device"]["name"].split()[-1].lower()
    hardware = resolve_hardware(gpu).hardware
    bandwidth = program_bandwidth(json.loads(PROBE.read_text()))
    names = ", ".join(str(p) for p in paths)
    entries = {}
    # --refit=KEY[,KEY]: with --hold, these figures are fitted again too (a kernel whose bytes
    # changed: eager9's causal mask, memory_mask)
    refit = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:]
                  if a.startswith("--refit=")), [])
    held = ({name: {k: v for k, v in held_parameters(c).items() if k not in refit}
             for name, c in hardware.measured.impls.items()}
            if hold and hardware.measured is not None else None)
    for impl, fitted in fit_record(record, hardware, only, program_bandwidth=bandwidth,
                                   hold=held).items():
        source = (f"fitted by benchmarks/impl_fit.py (calibrate/impl_fit.py) on {names} "
                  f"({fitted['points']} points, torch {record['device']['torch']}); "
                  f"program_bandwidth measured by benchmarks/sm_bandwidth_h200.py "
                  f"(tests/data/h200-sm-bandwidth.json); judged on {judged}")
        if held is not None and impl in held:
            previous = hardware.measured.impls[impl]  # type: ignore[union-attr]
            new = entry(fitted, "")
            added = sorted(({*new["efficiency"], *new} - {*previous.efficiency,
                                                          *previous.terms, "efficiency",
                                                          "call_overhead_s", "source"})
                           | set(refit))
            source = (f"{previous.source}; {', '.join(added) or 'nothing'} fitted with those "
                      f"held by benchmarks/impl_fit.py --hold on {names} ({fitted['points']} "
                      f"points, torch {record['device']['torch']})")
        entries[impl] = entry(fitted, source)
        print(f"{impl}: {json.dumps(entries[impl])} (median |error| in-sample "
              f"{fitted['median_error']:.1%})")
    if "--write" in sys.argv:
        path = Path(hardware.path)
        text = path.read_text(encoding="utf-8")
        measured = merge_impl_fits(text, entries)
        for name, entry_ in entries.items():  # a term the fit finds 0 is no such term
            for term in TIME_TERMS:
                if term not in entry_:
                    measured["impls"][name].pop(term, None)
        path.write_text(write_measured_yaml(text, measured), encoding="utf-8")
        print(f"written: {path} measured.impls")


if __name__ == "__main__":
    main()
