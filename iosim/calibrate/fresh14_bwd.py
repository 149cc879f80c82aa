"""bwd14's split-K rule (calibrate/split_k.py), on the seen records and, frozen at
`bwd14-frozen`, on the fourteenth fresh H200 set: pure.

    python -m iosim.calibrate.fresh14_bwd                 # the seen section (before the call)
    python -m iosim.calibrate.fresh14_bwd --fresh         # both sections, the fresh record in

The rule over main's (bwd13's rules): at batch·heads 1 cuBLAS runs eager's dV, dK and dQ GEMMs
split-K, each writing S · M · d · 4 bytes of fp32 partial sums (S = SPLIT_K_ROWS / K) that the
dirty-line ledger writes back where the L2 evicts them. 'Before' is main's model (`rule_off`).
Nothing is fitted on the fresh record; the bounds are fresh3_bwd.py's. Time is not touched by
the rule: SDPA's and eager's times are judged with the shipped model (host floors on), before
and after alike. Judged not better on the fresh set, the rule ships opt-in (split_k.SPLIT_K
off): 'after' here turns it on (`rule_on`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from statistics import median
from typing import Any
from unittest.mock import patch

from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import fresh7_bwd as F7
from iosim.calibrate import fresh12_bwd as F12
from iosim.calibrate import gemm_handover_fit as G
from iosim.calibrate import split_k
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate.torch_bwd_dram import KernelBytes
from iosim.inputs.hardware import Hardware

FRESH14 = D.DATA / "backward-h200-fresh14.json"
SEEN = (*F12.SEEN, D.FRESH12)
"""Every record with eager and SDPA ncu counts seen before bwd14 froze its rule."""
BEFORE_TEXT = "main's model (bwd13's rules): no split-K partial sums"
NAMES = ("bwd14", "main")
SPLIT_ROWS_GRID = (0, 11_500, 17_000, split_k.SPLIT_K_ROWS, 30_000, 46_000)
"""SPLIT_K_ROWS for the sensitivity (0: the rule off)."""


@contextmanager
def rule_off() -> Iterator[None]:
    """main's model: no split-K partials."""
    with patch.object(split_k, "SPLIT_K", False):
        yield


@contextmanager
def rule_on() -> Iterator[None]:
    """bwd14's rule as frozen (opt-in since the fourteenth set: split_k.SPLIT_K)."""
    with patch.object(split_k, "SPLIT_K", True):
        yield


@contextmanager
def split_rows(rows: int) -> Iterator[None]:
    """The rule with another SPLIT_K_ROWS (0: off)."""
    with patch.object(split_k, "SPLIT_K_ROWS", rows), patch.object(split_k, "SPLIT_K", rows > 0):
        yield


def before_after(records: list[dict[str, Any]], hardware: Hardware
                 ) -> tuple[list[KernelBytes], list[KernelBytes]]:
    """Every eager and SDPA kernel of the records with the rule and without it."""
    with rule_on():
        after = D.dram_comparison(records, hardware)
    with rule_off():
        before = D.dram_comparison(records, hardware)
    return after, before


def one_head(rows: list[KernelBytes], records: list[dict[str, Any]]) -> list[KernelBytes]:
    """The eager rows of the records' batch·heads-1 points (where the rule applies)."""
    ids = {p["id"] for r in records for p in r["points"] if p["batch"] * p["heads"] == 1}
    return [r for r in rows if r.what == "eager" and r.point in ids]


def within(rows: list[KernelBytes]) -> int:
    """Rows within fresh3_bwd's DRAM bound."""
    return sum(G.inside(r.estimate, r.measured) for r in rows)


def sensitivity(records: list[dict[str, Any]], hardware: Hardware, label: str) -> list[str]:
    """One-head eager kernels (and every eager kernel) within the bound as SPLIT_K_ROWS moves."""
    lines = [f"| SPLIT_K_ROWS | partials at d 128 | {label} one-head eager kernels within | "
             f"{label} eager kernels within |", "|---:|---:|---:|---:|"]
    for rows in SPLIT_ROWS_GRID:
        with split_rows(rows):
            eager = [r for r in D.dram_comparison(records, hardware) if r.what == "eager"]
        one = one_head(eager, records)
        lines.append(f"| {rows:,} | {rows * 128 * 4 / 1e6:.1f} MB | {within(one)} of {len(one)} "
                     f"| {within(eager)} of {len(eager)} |")
    return lines


def row_lines(after: list[KernelBytes], before: list[KernelBytes]) -> list[str]:
    """Every row of `after` beside `before`'s estimate."""
    lines = ["| point | kernel | estimate | measured | error | before | bound |",
             "|---|---|---:|---:|---:|---:|---|"]
    for a, b in zip(after, before, strict=True):
        lines.append(f"| {a.point} | {a.kernel} | {a.estimate / 1e6:.3f} MB | "
                     f"{a.measured / 1e6:.3f} MB | {a.error:+.1%} | {b.error:+.1%} | "
                     f"{'in' if G.inside(a.estimate, a.measured) else 'OUT'} |")
    return lines


def seen_section(hardware: Hardware) -> str:
    """The report's section on the seen records (before the fresh record)."""
    records = D.load([p for p in SEEN if p.exists()])
    after, before = before_after(records, hardware)
    one_a, one_b = one_head(after, records), one_head(before, records)
    split = split_k.seen_split_rows(records)
    lines = ["## bwd14's split-K rule on the seen records", "",
             "calibrate/split_k.py: at batch·heads 1 autograd's dV, dK and dQ GEMMs are plain "
             "(unbatched) and cuBLAS runs them split-K: each is followed by a "
             "`cublasLt::splitKreduce_kernel` at all 4 seen such eager runs, and never at "
             "batch·heads ≥ 2 (the ncu kernel names). A split GEMM writes S · M · d · 4 bytes "
             "of fp32 partial sums, dirty in the L2; the ledger writes them back where the LRU "
             "evicts them (dV's during dP and the passes after it, dK's and dQ's at the closing "
             f"evict). S · K = SPLIT_K_ROWS = {split_k.SPLIT_K_ROWS:,}: the median S · N of "
             f"the seen dV and dQ reduces, S read off each reduce's L2 bytes "
             f"(`split_k.fitted_rows`: {split_k.fitted_rows(records):,.0f}; the 12 reduces "
             f"S · N {min(v for _, _, v in split):,.0f}-{max(v for _, _, v in split):,.0f}, "
             "dK's the high ones). No count changes (a ledger rule, like bwd13's last wave).",
             "", "Seen records: " + ", ".join(p.name for p in SEEN if p.exists())
             + "; bounds ±10 % at ≥ 1 MB, 0.1 MB below; 'main' is " + BEFORE_TEXT + ".", "",
             "### Every seen kernel, by kernel", "", *F12.table(after, before, NAMES), "",
             f"The one-head eager runs alone: {within(one_a)} of {len(one_a)} kernels within "
             f"the bound with the rule, {within(one_b)} of {len(one_b)} without.", "",
             *row_lines(one_a, one_b), "",
             "### Sensitivity (seen)", "", *sensitivity(records, hardware, "seen"), ""]
    return "\n".join(lines) + "\n"


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the fourteenth fresh record."""
    with rule_on():
        text = F3.report(record, hardware, with_sensitivity=False,
                         title="bwd14's split-K rule frozen, on a fourteenth fresh set "
                               "(backward-h200-fresh14.json)", grid="fresh14_grid",
                         tag="bwd14-frozen", rules_before=rule_off, before_text=BEFORE_TEXT,
                         host_floor=True)
    after, before = before_after([record], hardware)
    one_a, one_b = one_head(after, [record]), one_head(before, [record])
    changed = [(a, b) for a, b in zip(after, before, strict=True) if a.estimate != b.estimate]
    errors = [abs(a.error) for a in after]
    extra = ["", "### bwd14 against main, by kernel", "", *F12.table(after, before, NAMES), "",
             f"Every kernel row: {within(after)} of {len(after)} within the bound with the "
             f"rule, {within(before)} of {len(before)} without (median |error| "
             f"{median(errors):.1%}, worst {max(errors):.1%}); the rule moves "
             f"{len(changed)} rows, all eager at batch·heads 1: {within(one_a)} of "
             f"{len(one_a)} one-head eager kernels within against {within(one_b)}.", "",
             "### The one-head eager runs, every kernel", "", *row_lines(one_a, one_b), "",
             "### Sensitivity on the fresh set (shown, not used)", "",
             *sensitivity([record], hardware, "fresh14"), *F7.protocol_lines(record)]
    return text + "\n".join(extra) + "\n"


def main(argv: list[str]) -> int:
    """`python -m iosim.calibrate.fresh14_bwd [--fresh]`: the seen section (and the fresh one)."""
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    hw = load_hardware(config_dir() / "h200.yaml")
    print(seen_section(hw))
    if "--fresh" in argv:
        print(report(D.load([FRESH14])[0], hw))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
