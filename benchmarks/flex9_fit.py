"""Fit FlexAttention's forward schedule, round 9 (with a lone program's share of its SM,
estimates/sm_sharing.py), on seen records and print it (no GPU needed).

    python benchmarks/flex9_fit.py [RECORD ...] [--no-lone | --moment]

The seen records: round 8's (below) and round 8's fresh record, h200-impl-flexfresh8.json,
seen since round 8 judged on it. `--no-lone` fits round 8's structure on the same points;
`--moment` the alternative rule, a program's share of its SM counted at each moment
(estimates/sm_sharing.py moment_makespan), not at launch.

Defaults to the records of flex compiled alone and statically (the harness since round 6):
tests/data/h200-impl-flexrefit7.json, h200-impl-flexfresh7.json, h200-impl-validation5.json
(its flex points), h200-flex8-probe.json and h200-impl-flexfresh8.json. The fit is
iosim/calibrate/flex_fit.py; what it stands for is iosim/analysis/impl_forward.py. Prints
the `measured.impls.flex` figures it found, every point's kernel and call error in-sample,
and each constant's sensitivity (the median call error with it moved ±10 %).
"""

from __future__ import annotations

import sys

from benchmarks.flex8_fit import fit_and_print

SEEN = ("tests/data/h200-impl-flexrefit7.json", "tests/data/h200-impl-flexfresh7.json",
        "tests/data/h200-impl-validation5.json", "tests/data/h200-flex8-probe.json",
        "tests/data/h200-impl-flexfresh8.json")


def main() -> None:
    if "--moment" in sys.argv:  # the alternative rule (not shipped): see the module docstring
        from iosim.estimates import sm_sharing

        sm_sharing.shared_makespan = sm_sharing.moment_makespan  # type: ignore[assignment]
    # 40 sweeps: at 10 the coordinate descent stopped before it converged (about 2.5 min)
    fit_and_print(SEEN, "flex9_fit.py", lone_share="--no-lone" not in sys.argv, sweeps=40)


if __name__ == "__main__":
    main()
