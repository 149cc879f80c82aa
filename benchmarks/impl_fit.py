"""Fit each implementation's efficiencies on the fit set (no GPU needed), print its calibration.

    python benchmarks/impl_fit.py tests/data/h200-impl-fit.json
    python benchmarks/impl_fit.py points.jsonl      # what `iosim measure --record` appended

The fit itself is iosim/calibrate/impl_fit.py (one home); this prints its blocks.
"""

from __future__ import annotations

import sys
from pathlib import Path

from iosim.calibrate.impl_fit import fit_record, load_points
from iosim.inputs.gpus import resolve_hardware


def main() -> None:
    record = load_points(Path(sys.argv[1]))
    gpu = record["device"]["name"].split()[-1].lower()
    hardware = resolve_hardware(gpu).hardware
    for impl, fitted in fit_record(record, hardware).items():
        effs = ", ".join(f"{k}: {v}" for k, v in fitted["efficiency"].items())
        print(f"# {impl}: {fitted['points']} points")
        print(f"calibration:\n  {gpu}:\n    efficiency: {{{effs}}}\n    call_overhead_s: "
              f"{fitted['call_overhead_s']}\n    source: \"fitted by "
              f"benchmarks/impl_fit.py on {sys.argv[1]} ({fitted['points']} points, "
              f"{record['device']['torch']}); judged on tests/data/h200-impl-validation.json\"")


if __name__ == "__main__":
    main()
