"""bwd13's four backward rules, on the seen records and, frozen at `bwd13-frozen`, on the
twelfth fresh H200 set: pure.

    python -m iosim.calibrate.fresh12_bwd            # the seen section (before the fresh call)
    python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md   (both sections)

bwd13's rules over main's (bwd11's GEMM handover, bwd12's SDPA floor):
  * eager's autograd launches the dK GEMM before the dQ GEMM (configs/impls/torch-naive.yaml
    `dk_first`, analysis/impl_kernels.py `_dk_first`): the L2 model sees the order the kernels
    run in, so GQA's group sum finds dK_expanded gone (the dQ GEMM streamed dS after it);
  * a whole-tensor GEMM reducing over the N × N_kv matrix writes its last wave of output tiles
    at its very end (calibrate/dirty_ledger.py `last_wave_bytes`), still dirty in L2 for the
    kernels after it and the closing evict;
  * those GEMMs read the GQA copies K_rep, V_rep per query head (analysis/impl_kernels.py
    BACKWARD_READS_COPIES), as autograd saved them from the forward;
  * SDPA's flash backward copies dO and O into its layout only with more than one head
    (configs/impls/sdpa-flash.yaml `layout_copy`, when: multihead).
'Before' is main's rules (`rules_off`). Nothing is fitted on the fresh record; the bounds are
fresh3_bwd.py's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from statistics import median
from typing import Any
from unittest.mock import patch

from iosim.analysis import impl_kernels
from iosim.calibrate import dirty_ledger
from iosim.calibrate import fresh3_bwd as F3
from iosim.calibrate import fresh7_bwd as F7
from iosim.calibrate import fresh10_bwd as F10
from iosim.calibrate import gemm_handover_fit as G
from iosim.calibrate import torch_bwd_dram as D
from iosim.calibrate.rules_patched import rules_patched
from iosim.calibrate.torch_bwd_dram import KernelBytes
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation

SEEN = (*G.SEEN, D.FRESH10)
"""Every record with eager and SDPA ncu counts seen before bwd13 froze its rules (fresh9 and
fresh11 hold no ncu counts)."""
BEFORE_TEXT = ("main's rules (bwd11's GEMM handover, bwd12's SDPA floor): eager's dQ GEMM "
               "before its dK GEMM, every kernel's writes spread over its traffic, the "
               "backward GEMMs reading K and V per KV head, SDPA's layout copies at every head "
               "count")


@contextmanager
def rules_off() -> Iterator[None]:
    """main's rules: no dk_first, no last wave, SDPA's copies whatever the heads."""
    original = Implementation.extra_kernels_for

    def main_extras(self: Implementation, *, gqa: bool, causal: bool,
                    multihead: bool = True) -> tuple[Any, ...]:
        return tuple(k for k in original(self, gqa=gqa, causal=causal, multihead=True)
                     if k.kind != "dk_first")

    with rules_patched(patch.object(Implementation, "extra_kernels_for", main_extras),
                       patch.object(dirty_ledger, "LAST_WAVE", False),
                       patch.object(impl_kernels, "BACKWARD_READS_COPIES", False)):
        yield


@contextmanager
def tile_bytes(nbytes: int) -> Iterator[None]:
    """The rules with another LAST_WAVE_TILE_BYTES (the sensitivity)."""
    with rules_patched(patch.object(dirty_ledger, "LAST_WAVE_TILE_BYTES", nbytes)):
        yield


def comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records without the SDPA runs whose launches main's model cannot match (one head:
    no layout copies), so that before and after cover the same rows; every eager run kept."""
    return [F10.matched(r)[0] for r in records]


def table(after: list[KernelBytes], before: list[KernelBytes],
          names: tuple[str, str] = ("bwd13", "main")) -> list[str]:
    """Rows within the bound by (impl, kernel), after and before (`names`), and their median
    |error|."""
    now, was = names
    lines = [f"| impl | kernel | rows | within ({now}) | within ({was}) | median |error| "
             f"{now} / {was} |", "|---|---|---:|---:|---:|---|"]
    keys = sorted({(r.what, r.kernel) for r in after}, key=lambda k: (k[0] != "eager", k))
    for what, kernel in keys:
        mine = [(a, b) for a, b in zip(after, before, strict=True)
                if (a.what, a.kernel) == (what, kernel)]
        lines.append(f"| {what} | {kernel} | {len(mine)} | "
                     f"{sum(G.inside(a.estimate, a.measured) for a, _ in mine)} | "
                     f"{sum(G.inside(b.estimate, b.measured) for _, b in mine)} | "
                     f"{median(abs(a.error) for a, _ in mine):.1%} / "
                     f"{median(abs(b.error) for _, b in mine):.1%} |")
    return lines


def rows_before_after(records: list[dict[str, Any]], hardware: Hardware
                      ) -> tuple[list[KernelBytes], list[KernelBytes]]:
    """Every eager and SDPA kernel of the records, with bwd13's rules and with main's; kernel
    names follow the launch order (after's), matched by position."""
    after = D.dram_comparison(records, hardware)
    with rules_off():
        before = D.dram_comparison(records, hardware)
    return after, before


def seen_section(hardware: Hardware) -> str:
    """The report's section on the seen records (before the fresh record)."""
    records = comparable(D.load([p for p in SEEN if p.exists()]))
    after, before = rows_before_after(records, hardware)
    sums = [r for r in D.dram_comparison(records, hardware) if r.kernel == "bwd_sum_dkdv"
            and r.what == "eager"]
    sens = ["| LAST_WAVE_TILE_BYTES | last wave (132 SMs) | seen eager group sums within the "
            "bound |", "|---:|---:|---:|"]
    for nbytes in (64 * 64 * 2, 128 * 64 * 2, dirty_ledger.LAST_WAVE_TILE_BYTES,
                   128 * 256 * 2, 256 * 256 * 2):
        with tile_bytes(nbytes):
            rows = [r for r in D.dram_comparison(records, hardware)
                    if r.kernel == "bwd_sum_dkdv" and r.what == "eager"]
        sens.append(f"| {nbytes:,} B | {nbytes * (hardware.sm_count or 0) / 1e6:.1f} MB | "
                    f"{sum(G.inside(r.estimate, r.measured) for r in rows)} of {len(rows)} |")
    lines = ["## bwd13's backward rules on the seen records", "",
             "Four rules, each from the records' ncu kernel lists and counts: (1) eager's "
             "autograd launches the dK GEMM before the dQ GEMM (torch-naive.yaml `dk_first`: "
             "the third GEMM has dV's transposed layout, the last dQ's plain nn, at all 94 "
             "eager runs), so GQA's group sum finds dK_expanded gone after the dQ GEMM's "
             "stream of dS; (2) a whole-tensor GEMM reducing over the N × N_kv matrix (dV, dK, "
             "dQ) writes its last wave of output tiles, one 128 × 128 tile per SM "
             "(dirty_ledger.LAST_WAVE_TILE_BYTES, not fitted), at its very end, still dirty "
             "for the kernels after it and the closing evict; (3) those GEMMs read the GQA "
             "copies K_rep, V_rep per query head (impl_kernels BACKWARD_READS_COPIES); (4) "
             "SDPA's flash backward copies dO and O into its layout only with more than one "
             "head (sdpa-flash.yaml `layout_copy`, when: multihead). No count changes.",
             "", "Seen records: " + ", ".join(p.name for p in SEEN if p.exists())
             + "; SDPA's one-head runs (no layout copies) left out here so that main's model "
             "has the same rows; bounds ±10 % at ≥ 1 MB, 0.1 MB below. Kernel names are the "
             "launch order's (eager's third GEMM is dK); 'main' is " + BEFORE_TEXT + ".", "",
             "### Every seen kernel, by kernel", "", *table(after, before), "",
             "### Sensitivity (seen)", "", *sens, "",
             f"With the rules, {sum(G.inside(r.estimate, r.measured) for r in sums)} of "
             f"{len(sums)} seen eager group sums are within the bound.", ""]
    return "\n".join(lines) + "\n"


def _one_head_lines(record: dict[str, Any], hardware: Hardware) -> list[str]:
    """SDPA's one-head runs, which only bwd13's kernel list matches: every kernel, after only."""
    ids = set(F10.matched(record)[1])
    if not ids:
        return []
    rows = [r for r in D.dram_comparison([{**record, "counters": {
        **record["counters"], "items": [i for i in record["counters"]["items"]
                                        if i["what"] == "sdpa" and i["id"] in ids]}}], hardware)]
    lines = ["### SDPA at one head (no layout copies: judged with bwd13's kernel list only)", "",
             f"- {len(ids)} runs ({', '.join(sorted(ids))}): ncu counted 3 launches at each, "
             "as the rule says (main's model has 5 and cannot be matched); DRAM "
             f"{sum(G.inside(r.estimate, r.measured) for r in rows)} of {len(rows)} kernels "
             "within the bound.", "",
             "| point | kernel | estimate | measured | error | bound |", "|---|---|---:|---:|---:|---|"]
    lines += [f"| {r.point} | {r.kernel} | {r.estimate / 1e6:.3f} MB | {r.measured / 1e6:.3f} MB "
              f"| {r.error:+.1%} | {'in' if G.inside(r.estimate, r.measured) else 'OUT'} |"
              for r in rows]
    return [*lines, ""]


def fresh_sensitivity(records: list[dict[str, Any]], hardware: Hardware) -> list[str]:
    """The fresh eager group sums and GEMMs within the bound as LAST_WAVE_TILE_BYTES moves:
    shown, never used to choose it (it was frozen before the run)."""
    lines = ["| LAST_WAVE_TILE_BYTES | fresh12 eager group sums within | eager GEMMs within |",
             "|---:|---:|---:|"]
    for nbytes in (0, 128 * 64 * 2, dirty_ledger.LAST_WAVE_TILE_BYTES, 128 * 256 * 2):
        with tile_bytes(nbytes):
            rows = [r for r in D.dram_comparison(records, hardware) if r.what == "eager"]
        sums = [r for r in rows if r.kernel == "bwd_sum_dkdv"]
        gemms = [r for r in rows if r.kernel in G.GEMMS]
        lines.append(f"| {nbytes:,} B | {sum(G.inside(r.estimate, r.measured) for r in sums)} "
                     f"of {len(sums)} | {G.gemms_within(gemms)} of {len(gemms)} |")
    return lines


@contextmanager
def one_rule_off(rule: str) -> Iterator[None]:
    """bwd13's rules with one of them off (the ablation): 'dk_first', 'last_wave' or
    'copies' (the backward GEMMs' reads of the GQA copies)."""
    original = Implementation.extra_kernels_for

    def without_dk_first(self: Implementation, *, gqa: bool, causal: bool,
                         multihead: bool = True) -> tuple[Any, ...]:
        return tuple(k for k in original(self, gqa=gqa, causal=causal, multihead=multihead)
                     if k.kind != "dk_first")

    target = {"dk_first": (Implementation, "extra_kernels_for", without_dk_first),
              "last_wave": (dirty_ledger, "LAST_WAVE", False),
              "copies": (impl_kernels, "BACKWARD_READS_COPIES", False)}[rule]
    with rules_patched(patch.object(*target)):
        yield


def ablation_lines(records: list[dict[str, Any]], hardware: Hardware) -> list[str]:
    """Eager's kernels within the bound with each rule off in turn: shown, not used."""
    def counts() -> str:
        rows = [r for r in D.dram_comparison(records, hardware) if r.what == "eager"]
        by = [sum(G.inside(r.estimate, r.measured) for r in rows if r.kernel == k)
              for k in ("bwd_sum_dkdv", "bwd_dp", "bwd_dq", "bwd_dk")]
        return (f"{sum(G.inside(r.estimate, r.measured) for r in rows)} of {len(rows)} | "
                + " | ".join(map(str, by)) + " |")

    lines = ["| rules | eager kernels within | group sum | dP | dQ | dK |",
             "|---|---:|---:|---:|---:|---:|", f"| bwd13 (all four) | {counts()}"]
    for rule in ("dk_first", "last_wave", "copies"):
        with one_rule_off(rule):
            lines.append(f"| without {rule} | {counts()}")
    return lines


def report(record: dict[str, Any], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on the twelfth fresh record."""
    kept = F10.matched(record)[0]
    text = F3.report(kept, hardware, with_sensitivity=False,
                     title="bwd13's backward rules frozen, on a twelfth fresh set "
                           "(backward-h200-fresh12.json)", grid="fresh12_grid",
                     tag="bwd13-frozen", rules_before=rules_off, before_text=BEFORE_TEXT)
    after, before = rows_before_after([kept], hardware)
    eager = [(a, b) for a, b in zip(after, before, strict=True) if a.what == "eager"]
    extra = ["", *_one_head_lines(record, hardware),
             "### bwd13 against main, by kernel", "", *table(after, before), "",
             f"Every kernel row (SDPA's one-head runs aside): "
             f"{sum(G.inside(a.estimate, a.measured) for a in after)} of {len(after)} within "
             f"the bound with bwd13's rules, {sum(G.inside(b.estimate, b.measured) for b in before)}"
             f" of {len(before)} with main's; eager's alone "
             f"{sum(G.inside(a.estimate, a.measured) for a, _ in eager)} against "
             f"{sum(G.inside(b.estimate, b.measured) for _, b in eager)} of {len(eager)}.", "",
             "### Sensitivity on the fresh set (shown, not used)", "",
             *fresh_sensitivity([kept], hardware), "",
             "Each rule off in turn (the kernels named by the order the model then has):", "",
             *ablation_lines([kept], hardware), *F7.protocol_lines(record)]
    return text + "\n".join(extra) + "\n"


def main(argv: list[str]) -> int:
    """`python -m iosim.calibrate.fresh12_bwd`: the seen section."""
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    print(seen_section(load_hardware(config_dir() / "h200.yaml")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
