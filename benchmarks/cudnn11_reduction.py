"""sdpa-cudnn's lean_reduction_kernel on the seen H200 records (issue 11, round cudnn11; no GPU):
its measured device time (torch.profiler) against estimates/combine.py's model with FA2's
rows-per-program rule (`in_flight`, the d 256 rate doubled) and without it, each with the
combine_* figures fitted under that rule (calibrate/combine_fit.py) on the same records.

    python benchmarks/cudnn11_reduction.py

Prints, per head-dim bucket, the points, median |error|, signed median and worst, and the
figures of each fit.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from iosim.analysis.impl_kernels import head_dim_bucket
from iosim.calibrate.combine_fit import combine_points, fit_combine, hardware_bandwidth
from iosim.calibrate.impl_fit import merged_records
from iosim.estimates.combine import combine_time_s
from iosim.inputs.gpus import resolve_hardware

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
SEEN = ("fit", "fit2", "calibrate", "validation", "validation2", "validation3", "validation4",
        "validation5", "validation6", "flex5")
"""The records sdpa-cudnn's combine_* were fitted on (tests/test_stream_k.py)."""
LATER = ("cudnnfresh8", "cudnnfresh9", "cudnnfresh10")
"""Fresh sets of earlier rounds, seen now: reported beside, not fitted."""


def main() -> None:
    h200 = resolve_hardware("h200").hardware
    assert h200.sm_count is not None
    bandwidth = hardware_bandwidth(h200)
    fit = combine_points(merged_records([DATA / f"h200-impl-{s}.json" for s in SEEN])["points"],
                         h200, "sdpa-cudnn")
    later = combine_points(merged_records([DATA / f"h200-impl-{s}.json"
                                           for s in LATER])["points"], h200, "sdpa-cudnn")
    for in_flight in (True, False):
        terms = fit_combine(fit, h200, in_flight=in_flight)
        print(f"in_flight={in_flight}: fitted on {len(fit)} seen reductions: "
              + ", ".join(f"{k} {v:.4g}" for k, v in terms.items()))
        for name, data in (("fit records", fit), ("cudnnfresh8-10", later)):
            by: dict[int, list[float]] = {}
            for w, b, t in data:
                pred = combine_time_s(w, b, h200.sm_count, bandwidth, terms, in_flight=in_flight)
                by.setdefault(head_dim_bucket(w.d), []).append(pred / t - 1)
            for d, errs in sorted(by.items()):
                print(f"  {name} d {d}: {len(errs)} points, median |error| "
                      f"{statistics.median(abs(e) for e in errs):.1%}, signed median "
                      f"{statistics.median(errs):+.1%}, worst {max(errs, key=abs):+.1%}")


if __name__ == "__main__":
    main()
