"""sdpa-flash's spill write-back per FA2 template instance, fitted on the seen ncu DRAM records.

    python benchmarks/spill_instance_fit.py [--sensitivity] [--before] [--fresh-probe]

Round 12 (issue 11): FA2's forward kernel is compiled per (Is_causal, Is_even_MN) and each
instance spills its own amount (estimates/spills.py fa2_instance). Every sdpa-flash call of
the committed records on the fused kernel (not split: spill_fit._fused), its DRAM writes ncu
counted (residue included) beyond the model's without the spill term, per program, grouped by
(spill row, instance): the median (configs/impls/sdpa-flash.yaml `by_instance`), quartiles and
count (`--sensitivity`: each instance's calls' median and worst |error| of total DRAM with its
figure at its quartiles). The records (all seen): tests/data/h200-impl-dram3.csv … -dram9.csv and
h200-impl-causalprobe7.csv (benchmarks/descending_fit.py RECORDS, plus IMPL9FRESH). Beside
each, the store sectors that missed L1 per program of the same instance in the spill probe
(tests/data/h200-impl-spill5.csv, ncu l1tex local-memory metrics: the mechanism's direct
count). `--before` adds every call's total DRAM error with the rows' one figure (main's model)
and with the instances' figures (the shipped model).
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

from benchmarks.descending_fit import ALONE, DATA, RECORDS
from benchmarks.impl_dram_h200 import IMPLS, _set, call_launches, calls, counted
from iosim.calibrate.ncu import parse_raw_csv
from iosim.calibrate.spill_fit import (
    LOCAL_STORE_HITS,
    LOCAL_STORES,
    SECTOR_BYTES,
    _fused,
    excess_per_program,
)
from iosim.inputs.implementations import Implementation
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from iosim.record import replace

SEEN = (*RECORDS, ("h200-impl-dram9.csv", "impl9fresh"))
ALONE_SETS = {*ALONE, "impl9fresh"}
"""Records whose calls are sdpa-flash's alone (benchmarks/impl8_h200.sh)."""


def seen_calls(records: tuple[tuple[str, str], ...] = SEEN) -> list[dict[str, Any]]:
    """Every sdpa-flash call of the records: record, index, workload, counted DRAM bytes and
    its writes (residue included)."""
    out = []
    for csv, set_name in records:
        points = _set(set_name)
        impls = ("sdpa-flash",) if set_name in ALONE_SETS else IMPLS
        for r in counted((DATA / csv).read_text(), calls(points, impls)):
            if r["impl"] == "sdpa-flash":
                out.append({"record": set_name, "index": r["index"], "w": points[r["index"]],
                            "dram": r["dram"], "writes": sum(k["write"] for k in r["kernels"])
                            + r["residue"]})
    return out


def one_figure(impl: Implementation) -> Implementation:
    """The profile with each spill row's one figure for every instance (main's model)."""
    return replace(impl, spills=tuple(replace(r, by_instance=()) for r in impl.spills))


def spill5_missed(csv: str = "h200-impl-spill5.csv", set_name: str = "spill5"
                  ) -> dict[tuple[int, str], list[float]]:
    """Per (spill row, instance): a local-memory probe's store sectors missing L1, per program
    (bytes), of each fused-kernel launch (default: round 5's spill probe; round 12's fresh
    check: h200-impl-dram12-probe.csv of impl12fresh)."""
    impl = get_implementation("sdpa-flash")
    metrics = (LOCAL_STORES, LOCAL_STORE_HITS)
    launches = parse_raw_csv((DATA / csv).read_text(),
                             ("dram__bytes_read.sum", "dram__bytes_write.sum", *metrics))
    out: dict[tuple[int, str], list[float]] = {}
    todo = calls(_set(set_name), ("sdpa-flash",))
    groups = list(call_launches(launches))
    if len(groups) < len(todo):
        raise ValueError(f"{csv}: {len(groups)} calls counted, {len(todo)} made")
    for (_, _, w), (kernels, _) in zip(todo, groups, strict=False):
        row = impl.spill_for(w.d)
        fused = None if row is None or w.n == 1 else _fused(impl, w, "h200")
        k = next((k for k in kernels if "flash_fwd_kernel" in k["kernel"]), None)
        if row is None or fused is None or k is None:
            continue
        out.setdefault((row.d_max, fused[3]), []).append(
            (k[LOCAL_STORES] - k[LOCAL_STORE_HITS]) * SECTOR_BYTES / fused[0])
    return out


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def error(w: Workload, dram: float, impl: Implementation) -> float:
    from benchmarks.descending_fit import predicted_with

    return (predicted_with(w, impl) - dram) / dram


def at_figure(impl: Implementation, d_max: int, instance: str, nbytes: int) -> Implementation:
    """The profile with one instance's write-back of one spill row set to `nbytes`."""
    spills = tuple(replace(r, by_instance=tuple((k, nbytes if k == instance else v)
                                                for k, v in r.by_instance))
                   if r.d_max == d_max else r for r in impl.spills)
    return replace(impl, spills=spills)


def sensitivity(impl: Implementation, rows: list[dict[str, Any]],
                per: dict[tuple[int, str], list[float]]) -> None:
    """Each instance's calls' median and worst |error| with its figure at its quartiles."""
    for (d_max, instance), values in sorted(per.items()):
        mine = []
        for r in rows:
            row, fused = impl.spill_for(r["w"].d), _fused(impl, r["w"], "h200")
            if row is not None and row.d_max == d_max and fused is not None \
                    and fused[3] == instance:
                mine.append(r)
        out = []
        for label, figure in zip(("q1", "median", "q3"), quartiles(values), strict=True):
            errs = sorted(abs(error(r["w"], r["dram"], at_figure(impl, d_max, instance,
                                                                  round(figure))))
                          for r in mine)
            out.append(f"{label} {figure / 1e3:5.1f} kB: {statistics.median(errs):5.1%} / "
                       f"{errs[-1]:5.1%}")
        print(f"  d<={d_max:3} {instance:13} ({len(mine)} calls, median / worst |error|): "
              + "; ".join(out), flush=True)


def main() -> None:
    impl = get_implementation("sdpa-flash")
    rows = seen_calls()
    per = excess_per_program(one_figure(impl), ((r["w"], r["writes"]) for r in rows))
    probe = spill5_missed()
    print(f"{len(rows)} seen sdpa-flash calls; writes beyond the model per program (kB):")
    for key in sorted(per):
        q1, med, q3 = quartiles(per[key])
        seen5 = ", ".join(f"{v / 1e3:.1f}" for v in probe.get(key, []))
        print(f"  d<={key[0]:3} {key[1]:13}: {len(per[key]):3} calls, median {med / 1e3:5.1f} "
              f"(quartiles {q1 / 1e3:5.1f}-{q3 / 1e3:5.1f}); spill5 L1-missed stores: "
              f"{seen5 or 'none'}")
    if "--fresh-probe" in sys.argv:  # round 12's check on IMPL12FRESH, after the freeze
        fresh = spill5_missed("h200-impl-dram12-probe.csv", "impl12fresh")
        for key in sorted(fresh):
            got = ", ".join(f"{v / 1e3:.1f}" for v in fresh[key])
            print(f"  fresh d<={key[0]:3} {key[1]:13}: L1-missed stores per program {got} kB")
    if "--sensitivity" in sys.argv:
        sensitivity(impl, rows, per)
    if "--before" not in sys.argv:
        return
    before, after = one_figure(impl), impl
    for record in dict.fromkeys(r["record"] for r in rows):
        mine = [r for r in rows if r["record"] == record]
        b = [error(r["w"], r["dram"], before) for r in mine]
        a = [error(r["w"], r["dram"], after) for r in mine]
        mb, ma = sorted(map(abs, b)), sorted(map(abs, a))
        print(f"{record}: {len(mine)} calls, median {statistics.median(mb):.1%} -> "
              f"{statistics.median(ma):.1%}, worst {mb[-1]:.1%} -> {ma[-1]:.1%}, within 20 % "
              f"{sum(m <= 0.2 for m in mb)} -> {sum(m <= 0.2 for m in ma)}")


if __name__ == "__main__":
    main()
