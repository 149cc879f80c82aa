"""WALK_COPIES (estimates/l2_launch_walk.py) fitted on seen ncu DRAM counts; sensitivity.

    python benchmarks/descending_fit.py [--before] [COPIES ...]

Every sdpa-flash call of the committed ncu DRAM records that iosim runs on the descending walk
(a causal flash_fwd_kernel call, not split: l2_launch_walk.py), judged with compare(...,
profile="measured") at each value of the constant (default: 1.0 to 2.0 by 0.05), their median
and worst |error| printed; `--before` adds the model without the walk (the ascending closed
form of main, Implementation.forward_walk unset) and prints every call of both. The walk is
sdpa-flash's profile with FA2_WALK (the shipped profile does not declare it). The records
(all seen: none is a judge of this constant): tests/data/h200-impl-dram3.csv (validation2),
-dram4 (validation3), -dram5 (validation4), -dram6 (validation5), -dram7 (validation6) and
h200-impl-causalprobe7.csv (CAUSALPROBE7) and -dram8 (IMPL8FRESH, round 8's fresh set, seen
since). Round 8 fitted its DESCENDING_COPIES here (then estimates/l2_descending.py, the same
walk with each window's steps counted at one end, sampled: 1.15, by the least median |error|
of the moved calls). Round 9's value is the one with the least median + worst |error| over the
calls it moves (the ship rule asks both; the least median alone, 1.65, has a worst of 220 %);
`--before` then lists every sdpa-flash call of every record, main's model beside the walk's.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.impl_dram_h200 import IMPLS, _set, calls, counted
from iosim.analysis.compare import compare
from iosim.inputs.implementations import Implementation, Trait
from iosim.inputs.implementations_yaml import get_implementation
from iosim.record import replace

DATA = Path(__file__).parents[1] / "tests" / "data"
RECORDS = (("h200-impl-dram3.csv", "validation2"), ("h200-impl-dram4.csv", "validation3"),
           ("h200-impl-dram5.csv", "validation4"), ("h200-impl-dram6.csv", "validation5"),
           ("h200-impl-dram7.csv", "validation6"), ("h200-impl-causalprobe7.csv",
                                                     "causalprobe7"),
           ("h200-impl-dram8.csv", "impl8fresh"))
ALONE = {"impl8fresh", "impl9fresh", "impl12fresh"}
"""Records whose calls are sdpa-flash's alone (the device script's `SET sdpa-flash`)."""


FA2_WALK = Trait("descending", (
    "flash-attention csrc/flash_attn/src/flash_fwd_kernel.h compute_attn_1rowblock: "
    "'We iterate over the blocks in reverse order' (for (; n_block >= n_block_min; "
    "--n_block)), m_block = blockIdx.x with no causal reversal; measured: ncu's DRAM "
    "of long causal calls on the H200 (tests/data/h200-impl-causalprobe7.csv) re-"
    "reads K/V where iosim's ascending Triton kernel reads them once "
    "(benchmarks/fa2_descending_walk.py)"
))
"""The trait of FA2's walk (Implementation.forward_walk), as the judge and fit scripts set it.
configs/impls/sdpa-flash.yaml declares the same value since round 9 (its fresh judgement:
reports/impl-validation/impl9.md); round 8 left it undeclared (its walk was worse in worst)."""


def profile(*, walk: bool) -> Implementation:
    """sdpa-flash's shipped profile with the descending walk (FA2_WALK) or without any (the
    ascending closed form main shipped before round 9)."""
    return replace(get_implementation("sdpa-flash"), forward_walk=FA2_WALK if walk else None)


def walked_calls(records: tuple[tuple[str, str], ...] = RECORDS, data: Path = DATA
                 ) -> list[dict[str, Any]]:
    """The sdpa-flash calls of the records, each with its workload, counted bytes and whether
    the descending walk models it."""
    out = []
    for csv, set_name in records:
        points = _set(set_name)
        impls = ("sdpa-flash",) if set_name in ALONE else IMPLS
        for r in counted((data / csv).read_text(), calls(points, impls)):
            if r["impl"] != "sdpa-flash":
                continue
            w = points[r["index"]]
            est = compare(w, "h200", impl=profile(walk=True), profile="measured").algorithms[-1]
            assert est.dram is not None
            walked = any("walking down" in t.note for t in est.dram.terms)
            out.append({"record": set_name, "index": r["index"], "w": w, "dram": r["dram"],
                        "walked": walked})
    return out


def predicted(w: Any, *, walk: bool = True) -> float:
    return predicted_with(w, profile(walk=walk))


def predicted_with(w: Any, impl: Implementation) -> float:
    """DRAM bytes (read + written) of `impl`'s forward on w, the measured profile's model."""
    dram = compare(w, "h200", impl=impl, profile="measured").algorithms[-1].dram
    assert dram is not None
    return float(dram.read_bytes + dram.write_bytes)


def at_copies(rows: list[dict[str, Any]], copies: float) -> list[float]:
    """Each walked call's error with every tile at `copies` (walk_copies held at one figure,
    as round 9's WALK_COPIES)."""
    from iosim.estimates import l2_launch_walk

    kept = l2_launch_walk.walk_copies
    l2_launch_walk.walk_copies = lambda live: copies
    try:
        return [(predicted(r["w"]) - r["dram"]) / r["dram"] for r in rows]
    finally:
        l2_launch_walk.walk_copies = kept


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--before"]
    grid = [float(a) for a in args] or [round(1.0 + 0.05 * i, 2) for i in range(21)]
    every = walked_calls()
    rows = [r for r in every if r["walked"]]
    results = {c: at_copies(rows, c) for c in grid}
    # the calls the constant moves (by more than 1 % of their bytes over the grid)
    moved = [i for i in range(len(rows))
             if abs(results[grid[-1]][i] - results[grid[0]][i]) > 0.01]
    print(f"{len(rows)} seen sdpa-flash calls on the descending walk, {len(moved)} of them "
          f"moved by WALK_COPIES over {grid[0]}-{grid[-1]}")

    def summary(errors: list[float]) -> tuple[float, float, int]:
        mags = sorted(abs(e) for e in errors)
        return statistics.median(mags), mags[-1], sum(m <= 0.2 for m in mags)

    for c in grid if moved else ():
        med, worst, within = summary([results[c][i] for i in moved])
        med_all, worst_all, _ = summary(results[c])
        print(f"copies {c:4.2f}: moved calls median {med:6.1%} worst {worst:6.1%} within 20 % "
              f"{within}/{len(moved)}; all walked median {med_all:6.1%} worst {worst_all:6.1%}",
              flush=True)
    if moved:
        def score(c: float) -> float:  # the ship rule's two figures, weighted alike
            med, worst, _ = summary([results[c][i] for i in moved])
            return med + worst

        best = min(grid, key=score)
        print(f"least median + worst |error| over the moved calls: copies {best}")
    if "--before" not in sys.argv:
        return
    from iosim.estimates.l2_launch_walk import WALK_COPIES

    after = dict(zip((id(r) for r in rows), results.get(WALK_COPIES, []), strict=False))
    if not after:
        after = {id(r): e for r, e in zip(rows, at_copies(rows, WALK_COPIES), strict=True)}
    print(f"\nevery sdpa-flash call of the records: main's model (no walk) and the walk at "
          f"WALK_COPIES = {WALK_COPIES}")
    for record in dict.fromkeys(r["record"] for r in every):
        mine = [r for r in every if r["record"] == record]
        before = [(predicted(r["w"], walk=False) - r["dram"]) / r["dram"] for r in mine]
        now = [after.get(id(r), b) for r, b in zip(mine, before, strict=True)]
        b_med, b_worst, _ = summary(before)
        a_med, a_worst, _ = summary(now)
        print(f"{record}: {len(mine)} calls, median {b_med:.1%} -> {a_med:.1%}, worst "
              f"{b_worst:.1%} -> {a_worst:.1%}")
        for r, b, a in zip(mine, before, now, strict=True):
            w = r["w"]
            print(f"  #{r['index']:2} b{w.batch} h{w.heads}/{w.kv_heads} N{w.n}/{w.n_kv} d{w.d} "
                  f"{w.dtype}{' causal' if w.causal else ''}: ncu {r['dram'] / 1e6:8.1f} MB  "
                  f"main {b:+7.1%}  walk {a:+7.1%}")


if __name__ == "__main__":
    main()
