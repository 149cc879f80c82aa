"""bwd11's GEMM-handover rule, frozen at `bwd11-frozen`, judged on the tenth fresh H200 set: pure.

    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (this section last)

The record (`python3 benchmarks/backward_h200.py OUT --fresh10`, its grid `fresh10_grid`
committed before the run) holds eager's and SDPA's backward at 16 points, each timed and counted
by ncu per kernel, and two segments with no kernel (the ncu protocol's residue). bwd11's rule
over main's (estimates/l2_handover.py): a cuBLAS GEMM re-reading a whole tensor the kernels
before it streamed finds each line by the L2's soft cutoff at its reuse distance, or by the
retained share where that is more; main's is the ideal LRU for every handover. Nothing is
fitted on the record; the bounds are fresh3_bwd.py's.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import fresh7_bwd as F7
from iosim.calibrate import fresh_bwd as FB
from iosim.calibrate import gemm_handover_fit as G
from iosim.estimates import l2_handover as H
from iosim.inputs.hardware import Hardware

BEFORE_TEXT = ("main's rules (bwd9 merged): every handover between whole-tensor kernels the "
               "ideal LRU, GEMMs' too")


def by_kernel_lines(rows: list[FB.Judged]) -> list[str]:
    """Every DRAM row of the record by (impl, kernel): within with the rule and without."""
    dram = [r for r in rows if r.quantity.startswith("DRAM") and F3.inside(r) is not None]
    lines = ["| impl | kernel | rows | within (bwd11) | within (main) | median |error| "
             "bwd11 / main |", "|---|---|---:|---:|---:|---|"]
    keys = sorted({(r.what, r.quantity) for r in dram}, key=lambda k: (k[0] != "eager", k))
    for what, quantity in keys:
        mine = [r for r in dram if (r.what, r.quantity) == (what, quantity)]
        now = median(abs(r.error) for r in mine)
        was = median(abs((r.without or 0.0) - r.measured) / r.measured for r in mine)
        lines.append(f"| {what} | {quantity.removeprefix('DRAM ')} | {len(mine)} | "
                     f"{sum(bool(F3.inside(r)) for r in mine)} | "
                     f"{sum(F3.inside_before(r) for r in mine)} | {now:.1%} / {was:.1%} |")
    ok = sum(bool(F3.inside(r)) for r in dram)
    before = sum(F3.inside_before(r) for r in dram)
    eager = [r for r in dram if r.what == "eager"]
    lines += ["", f"All DRAM rows (kernels and whole backwards, SDPA's and eager's): {ok} of "
              f"{len(dram)} within the bound with bwd11's rule, {before} of {len(dram)} with "
              f"main's. Eager's alone: {sum(bool(F3.inside(r)) for r in eager)} of {len(eager)} "
              f"against {sum(F3.inside_before(r) for r in eager)} of {len(eager)}."]
    return lines


def fresh_sensitivity(record: dict[str, Any], hardware: Hardware) -> list[str]:
    """The fresh eager GEMM kernels within the bound as the constants move: shown, never used
    to choose them (they were frozen before the run)."""
    share, span = H.RETAINED_SHARE, H.RETAIN_SPAN
    lines = ["| RETAINED_SHARE | RETAIN_SPAN | fresh10 eager GEMM kernels within the bound |",
             "|---:|---:|---:|"]
    total = sum(r.kernel in G.GEMMS for r in G.eager_rows([record], hardware))
    for s, p in ((share, span), (0.0, span), (share - 0.05, span), (share + 0.05, span),
                 (share, 1.0), (share, 3.0)):
        with G.constants(s, p):
            lines.append(f"| {s:g} | {p:g} | {G.gemms_within(G.eager_rows([record], hardware))}"
                         f" of {total} |")
    with G.rule_off():
        lines.append(f"| (main: ideal LRU) | | "
                     f"{G.gemms_within(G.eager_rows([record], hardware))} of {total} |")
    return lines


def matched(record: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The record without SDPA's runs whose launches the sdpa-flash model does not have (found
    on this record: at batch·heads 1 SDPA launches no layout copies of dO and O, which are
    already in its kernel's layout), and those runs' ids. Eager's runs are all kept."""
    def launches_match(item: dict[str, Any]) -> bool:
        if item["what"] != "sdpa":
            return True
        names = [k["kernel"] for k in item["segments"][0]["kernels"]]
        return any("elementwise_kernel" in n for n in names)

    items = record.get("counters", {}).get("items", [])
    dropped = [i["id"] for i in items if not launches_match(i)]
    kept = {**record, "counters": {**record["counters"],
                                   "items": [i for i in items if launches_match(i)]}}
    return kept, dropped


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the tenth fresh record."""
    record, dropped = matched(record)
    text = F3.report(record, hardware, with_sensitivity=False,
                     title="bwd11's GEMM-handover rule frozen, on a tenth fresh set "
                           "(backward-h200-fresh10.json)", grid="fresh10_grid",
                     tag="bwd11-frozen", rules_before=G.rule_off, before_text=BEFORE_TEXT)
    rows = F3.judged(record, hardware, rules_before=G.rule_off)
    note = ([f"- Not judged: SDPA's backward at {', '.join(dropped)} (batch·heads 1) launched no "
             "layout copies of dO and O (they are already in its kernel's layout), which the "
             "sdpa-flash model always has: a finding for SDPA's model, no eager row is "
             "affected.", ""] if dropped else [])
    extra = ["", *note, "### bwd11 against main, by kernel", "", *by_kernel_lines(rows), "",
             "### Sensitivity on the fresh set (shown, not used)", "",
             *fresh_sensitivity(record, hardware), *F7.protocol_lines(record)]
    return text + "\n".join(extra) + "\n"
