"""bwd11's GEMM-handover rule (estimates/l2_handover.py) on the seen eager records: its fit,
its sensitivity, and every seen eager kernel before and after it, by kernel. Pure: no GPU.

    python -m iosim.calibrate.gemm_handover_fit          # the fit grid and the by-kernel table

The seen records are every eager backward counted by ncu before bwd11 froze the rule
(calibration records, fresh1-fresh8; fresh4 has no eager run, fresh9 no ncu). RETAINED_SHARE
and RETAIN_SPAN are chosen on a grid by the most eager GEMM kernels (dV, dP, dQ, dK) within
the bound (fresh3_bwd.inside: ±10 % at ≥ 1 MB, 0.1 MB below); the soft cutoff's constants
(l2_cutoff.py) are not refitted. 'Before' is main's rule: the ideal LRU for every handover.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from statistics import median
from unittest.mock import patch

from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate.rules_patched import rules_patched
from iosim.calibrate.torch_bwd_dram import KernelBytes
from iosim.estimates import l2 as L2
from iosim.estimates import l2_handover as H
from iosim.inputs.hardware import Hardware

SEEN = (*D.RECORDS, D.FRESH, D.FRESH2, D.FRESH3, D.FRESH5, D.FRESH6, D.FRESH7, D.FRESH8)
"""Every record with eager ncu counts seen before the rule was frozen."""
GEMMS = ("bwd_dv", "bwd_dp", "bwd_dq", "bwd_dk")
SMALL, SMALL_SLACK = 1e6, 0.1e6
"""fresh3_bwd's bound for kernels under 1 MB (within 0.1 MB)."""


@contextmanager
def rule_off() -> Iterator[None]:
    """main's rule before bwd11: every handover the ideal LRU (l2.hit_fraction)."""
    with rules_patched(patch.object(L2, "gemm_reads_carried", lambda reader, earlier: False)):
        yield


@contextmanager
def constants(share: float, span: float) -> Iterator[None]:
    """The rule with other constants (the fit's grid, the sensitivity)."""
    with rules_patched(patch.multiple(H, RETAINED_SHARE=share, RETAIN_SPAN=span)):
        yield


def inside(estimate: float, measured: float) -> bool:
    """fresh3_bwd's DRAM bound of one kernel."""
    if measured < SMALL:
        return abs(estimate - measured) <= SMALL_SLACK
    return abs(estimate - measured) <= 0.10 * measured


def eager_rows(records: list[dict], hardware: Hardware) -> list[KernelBytes]:  # type: ignore[type-arg]
    """Every eager kernel of the records against the model as it stands."""
    return [r for r in D.dram_comparison(records, hardware) if r.what == "eager"]


def gemms_within(rows: list[KernelBytes]) -> int:
    """Eager GEMM kernels (dV, dP, dQ, dK) of `rows` within the bound."""
    return sum(inside(r.estimate, r.measured) for r in rows if r.kernel in GEMMS)


def fit(records: list[dict], hardware: Hardware  # type: ignore[type-arg]
        ) -> tuple[tuple[float, float], list[tuple[float, float, int]]]:
    """((share, span) with the most eager GEMM kernels within the bound, every grid point's
    count); ties go to the smaller share, then the smaller span."""
    grid = []
    for share in (0.0, 0.1, 0.15, 0.2, 0.25, 0.3):
        for span in (1.0, 1.5, 2.0, 3.0):
            with constants(share, span):
                grid.append((share, span, gemms_within(eager_rows(records, hardware))))
    best = max(grid, key=lambda g: (g[2], -g[0], -g[1]))
    return (best[0], best[1]), grid


def by_kernel(after: list[KernelBytes], before: list[KernelBytes]) -> list[str]:
    """The by-kernel table (fresh8's format): rows, within with and without the rule, median
    |error|, and the whole backward (every kernel of a run together)."""
    lines = ["| impl | kernel | rows | within (bwd11) | within (main) | median |error| "
             "bwd11 / main |", "|---|---|---:|---:|---:|---|"]
    for kernel in sorted({r.kernel for r in after}):
        mine = [(a, b) for a, b in zip(after, before, strict=True) if a.kernel == kernel]
        now = median(abs(a.error) for a, _ in mine)
        was = median(abs(b.error) for _, b in mine)
        lines.append(f"| eager | {kernel} | {len(mine)} | "
                     f"{sum(inside(a.estimate, a.measured) for a, _ in mine)} | "
                     f"{sum(inside(b.estimate, b.measured) for _, b in mine)} | "
                     f"{now:.1%} / {was:.1%} |")
    whole = []
    for rows in (after, before):
        runs: dict[int, list[float]] = {}
        for r in rows:
            pair = runs.setdefault(r.run, [0.0, 0.0])
            pair[0] += r.estimate
            pair[1] += r.measured
        whole.append([abs(e - m) / m for e, m in runs.values()])
    lines.append(f"| eager | whole backward | {len(whole[0])} | "
                 f"{sum(e <= 0.10 for e in whole[0])} | {sum(e <= 0.10 for e in whole[1])} | "
                 f"{median(whole[0]):.1%} / {median(whole[1]):.1%} |")
    return lines


def sensitivity(records: list[dict], hardware: Hardware) -> list[str]:  # type: ignore[type-arg]
    """Eager GEMM kernels within the bound as each constant moves (the others as shipped)."""
    share, span = H.RETAINED_SHARE, H.RETAIN_SPAN
    lines = ["| RETAINED_SHARE | RETAIN_SPAN | eager GEMM kernels within the bound |",
             "|---:|---:|---:|"]
    total = sum(r.kernel in GEMMS for r in eager_rows(records, hardware))
    for s, p in ((share, span), (0.0, span), (share - 0.05, span), (share + 0.05, span),
                 (share, 1.0), (share, 3.0)):
        with constants(s, p):
            lines.append(f"| {s:g} | {p:g} | {gemms_within(eager_rows(records, hardware))} of "
                         f"{total} |")
    with rule_off():
        lines.append(f"| (main: ideal LRU) | | {gemms_within(eager_rows(records, hardware))} "
                     f"of {total} |")
    return lines


def seen_section(hardware: Hardware) -> str:
    """The report's section on the seen eager records (before the fresh record)."""
    records = D.load([p for p in SEEN if p.exists()])
    after = eager_rows(records, hardware)
    with rule_off():
        before = eager_rows(records, hardware)
    (share, span), _ = fit(records, hardware)
    lines = ["## bwd11's GEMM-handover rule on the seen eager records", "",
             "estimates/l2_handover.py: a cuBLAS GEMM that re-reads a whole tensor the kernels "
             "before it streamed (eager's dP reading dO after dV; dQ reading dS after the scale "
             "pass; dK reading dS after dQ; the forward's PV reading P) finds each line with the "
             "L2's soft cutoff (l2_cutoff.py, its constants unchanged) at that line's reuse "
             f"distance, or, where more, with a retained share: RETAINED_SHARE = "
             f"{H.RETAINED_SHARE:g} of the L2 survives a reuse distance up to the L2, falling "
             f"to none at RETAIN_SPAN = {H.RETAIN_SPAN:g} × the L2 beyond it. main keeps the "
             "ideal LRU (every line within the L2 hits, every other misses). Seen records: "
             + ", ".join(p.name for p in SEEN if p.exists()) + f" ({len(records)} files, "
             f"{len({r.run for r in after})} eager runs). The fit (`python -m "
             f"iosim.calibrate.gemm_handover_fit`) picks share {share:g}, span {span:g} by the "
             "most eager GEMM kernels within the bound (±10 % at ≥ 1 MB, 0.1 MB below).", "",
             "### Every seen eager kernel, by kernel", "", *by_kernel(after, before), "",
             "### Sensitivity (seen)", "", *sensitivity(records, hardware), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """`python -m iosim.calibrate.gemm_handover_fit`: the fit's grid, then the seen section."""
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    hw = load_hardware(config_dir() / "h200.yaml")
    records = D.load([p for p in SEEN if p.exists()])
    best, grid = fit(records, hw)
    for share, span, n in grid:
        print(f"share {share:g} span {span:g}: {n} eager GEMM kernels within the bound")
    print(f"best: share {best[0]:g}, span {best[1]:g} (shipped {H.RETAINED_SHARE:g}, "
          f"{H.RETAIN_SPAN:g})")
    print(seen_section(hw))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
