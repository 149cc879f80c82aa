"""Fit κ, the MLA split kernel's shared-SM slowdown of its dots (configs/gpus/h200.yaml
measured.decode_fit.mla_shared_dots), on the MLA shapes seen before the fp8mla judgement.

    python benchmarks/mla_fit_h200.py [tests/data/h200-variants.json]

analysis/decode_time.py charges an MLA split program's walk W · n · (t_block + F_block / r_mma ·
(1 + κ (c − 1))), c the programs a full wave puts on one SM (2 at 256 programs and more:
the kernel's 2 programs per SM). t_block, r_mma and the rest are decode_fit's, fitted on every
decode and shared-prefix set with κ = 0 and kept; κ is the one constant fitted here: the value on
a 0.01 grid that minimises Σ log(model / measured)² over every timed split count of the seen
MLA sections (SEEN). The fresh section "mla_fresh2" is never read here.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from decode_fit_h200 import MLA_TILES, mla_workload

from iosim.analysis.decode_time import DecodeCounts
from iosim.record import replace

SEEN = ("mla", "mla_fresh")


def main(argv: list[str]) -> int:
    record = json.loads(Path(argv[0] if argv else "tests/data/h200-variants.json").read_text())
    timed = []  # (shape id, splits, measured s, the model's Timed)
    for section in SEEN:
        for p in record.get(section, []):
            if p.get("status") != "ok":
                continue
            counts = DecodeCounts(mla_workload(p), "h200", MLA_TILES)
            for r in p["sweep"]:
                timed.append((p["id"], r["splits"], r["time_s"], counts.splitkv(r["splits"]),
                              p["best_splits"]))
    base = timed[0][3].kernels[0].ceilings

    def errors(kappa: float) -> list[float]:
        c = replace(base, shared_dots=kappa)
        return [t.under(c).time_s / m - 1 for _, _, m, t, _ in timed]

    best = min((k / 100 for k in range(0, 201)),
               key=lambda k: sum(math.log(1 + e) ** 2 for e in errors(k)))
    errs = errors(best)
    at_best = [(pid, s, e) for (pid, s, _, _, b), e in zip(timed, errs, strict=True) if s == b]
    print(f"kappa {best:.2f}: {sum(abs(e) <= 0.15 for e in errs)} of {len(errs)} timed counts "
          f"within ±15 %; at the fastest count {sum(abs(e) <= 0.15 for *_, e in at_best)} of "
          f"{len(at_best)} (kappa 0: {sum(abs(e) <= 0.15 for e in errors(0.0))} of {len(errs)})")
    for pid, s, e in at_best:
        print(f"  {pid:24s} s{s:<3d} {e:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
