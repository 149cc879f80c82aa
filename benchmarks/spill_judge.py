"""The spill rows judged on fresh calls (no GPU): ncu's local-memory sectors of sdpa-flash's
flash_fwd_kernel on round 5's fresh points (tests/data/h200-impl-spill6.csv, SPILL6 of
benchmarks/impl_validation_h200.py, measured after tag impl5-frozen) against the profile's
predicted local stores reaching L2 and store bytes missing L1 (estimates/spills.py).

    python benchmarks/spill_judge.py tests/data/h200-impl-spill6.csv spill6
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from iosim.algorithms import get_algorithm
from iosim.algorithms.closedform import Dims
from iosim.analysis.compare import compare
from iosim.calibrate.ncu import parse_raw_csv
from iosim.calibrate.spill_fit import LOCAL_STORE_HITS, LOCAL_STORES, SECTOR_BYTES
from iosim.estimates.spills import SPILL_TENSOR, spill_l2_store_bytes
from iosim.inputs.implementations_yaml import get_implementation

METRICS = ("launch__registers_per_thread", LOCAL_STORES, LOCAL_STORE_HITS)


def main() -> None:
    from benchmarks import impl_dram_h200 as D

    todo = D.calls(D._set(sys.argv[2]), ("sdpa-flash",))
    launches = parse_raw_csv(Path(sys.argv[1]).read_text(), METRICS)
    impl = get_implementation("sdpa-flash")
    l2_errors, miss_errors = [], []
    groups = list(D.call_launches(launches))
    if len(groups) < len(todo):
        raise ValueError(f"{sys.argv[1]}: {len(groups)} calls counted, {len(todo)} made")
    for (_, i, w), (kernels, _) in zip(todo, groups, strict=False):
        fused = [k for k in kernels if "flash_fwd_kernel" in k["kernel"]]
        if not fused:
            print(f"#{i:2} no flash_fwd_kernel ({', '.join(k['kernel'][:40] for k in kernels)})")
            continue
        k = fused[0]
        est = compare(w, "h200", impl="sdpa-flash", profile="measured").algorithms[-1]
        kernels_ = get_algorithm("flash2").kernels(w, est.tiling)
        l2 = spill_l2_store_bytes(impl, kernels_, Dims.of(w, est.tiling))
        assert est.dram is not None
        miss = sum(t.bytes for t in est.dram.terms if t.tensor == SPILL_TENSOR)
        got_l2 = k[LOCAL_STORES] * SECTOR_BYTES
        got_miss = (k[LOCAL_STORES] - k[LOCAL_STORE_HITS]) * SECTOR_BYTES
        error = l2 / got_l2 - 1 if got_l2 else (0.0 if l2 == 0 else float("inf"))
        l2_errors.append(abs(error))
        miss_errors.append(abs(miss - got_miss))
        print(f"#{i:2} {w.batch}x{w.heads}/{w.kv_heads} N{w.n} d{w.d}{' causal' if w.causal else ''}"
              f" regs {k['launch__registers_per_thread']:.0f}: local stores to L2 "
              f"{got_l2 / 1e6:8.1f} MB, predicted {l2 / 1e6:8.1f} MB ({error:+.1%}); "
              f"missing L1 {got_miss / 1e6:6.2f} MB, predicted {miss / 1e6:6.2f} MB")
    print(f"local stores to L2: median |error| {statistics.median(l2_errors):.1%}, worst "
          f"{max(l2_errors):.1%} over {len(l2_errors)} calls; stores missing L1: median "
          f"|predicted - counted| {statistics.median(miss_errors) / 1e6:.2f} MB, worst "
          f"{max(miss_errors) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
