"""iosim's decoding choices against the H200 record of issue 14 (no GPU needed).

    python benchmarks/decode_choices_h200.py [RECORD] [--profile spec|measured] [--points]
        [--no-timed] [--markdown] [--fresh-markdown]

RECORD defaults to tests/data/h200-variants.json. Each set is reported apart: the first fit set
("decode", "cascade"), the judge set ("decode_judge", "cascade_judge"), var3's fresh sets
("decode_fresh", "cascade_fresh", "cascade_fresh2") — all seen, and all fitted on by
benchmarks/decode_fit_h200.py — and var4's fresh set ("decode_fresh2", "cascade_fresh3",
"mla_fresh": written down in calibrate/variants_points.py and timed after the model was frozen
at tag var4-frozen), which alone judges the current model.

The record (benchmarks/variants_h200.py, schema iosim/h200-variants/1) holds Triton split-KV
decode kernels timed at every split count ("decode" rows) and shared-prefix batches timed as
split-KV and as cascade at each's best split counts ("cascade" rows). For each decode shape this
prints `--splits auto`'s pick (analysis/split_choice.py, with the measured kernels' tiles:
decode_config block_r × block_n) and FA2's heuristic's, each as its measured time over the
fastest measured count; for each shared-prefix batch, compare's verdict (the decoding time
model, analysis/cascade_verdict.py, at the measured kernels' tiles) next to the measured winner,
and the model's time of each method at its measured fastest split counts; for each MLA shape
the model's time at the fastest count (the MLA kernel's 32 × 32 tiles). Acceptance (issue
14): the pick within 5 % of the fastest on at least 8 decode shapes; the verdict right on at
least 8 batches, including ones where each wins.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from decode_fit_h200 import decode_workload

from iosim import Workload
from iosim.analysis.cascade_verdict import cascade_verdict
from iosim.analysis.compare import compare
from iosim.analysis.decode_time import MEASURED_TILES, DecodeCounts, Tiles, timed_verdict
from iosim.analysis.split_choice import choose_splits
from iosim.inputs.hardware import Hardware
from iosim.record import replace

RECORD = Path(__file__).resolve().parents[1] / "tests" / "data" / "h200-variants.json"
WITHIN = 1.05


def record_tiles(config: dict[str, Any]) -> Tiles:
    """The measured kernels' tiles as a record's decode_config gives them, at their compiled
    occupancy (decode_time.MEASURED_TILES: programs per SM, the paged kernel's apart)."""
    return replace(MEASURED_TILES, block_q=config["block_r"],
                   prefix_block_q=config.get("prefix_block_r", 64), block_kv=config["block_n"])


def split_picks(record: dict[str, Any], section: str = "decode",
                profile: str = "spec") -> list[dict[str, Any]]:
    """One row per ok decode shape of `section`: the picks and their measured time over the
    fastest."""
    config = record["decode_config"]
    rows = []
    for d in record.get(section, []):
        if d.get("status") != "ok":
            continue
        w = Workload(1, n_kv=d["n_kv"], d=d["d"], heads=d["heads"], kv_heads=d["kv_heads"],
                     batch=d["batch"])
        measured = {r["splits"]: r["time_s"] for r in d["sweep"]}
        choice = choose_splits(w, "h200", block_q=config["block_r"], block_kv=config["block_n"],
                               profile=profile, programs_per_sm=MEASURED_TILES.programs_per_sm)
        fastest = min(measured.values())
        rows.append({"id": d["id"], "fastest": d["best_splits"], "pick": choice.best.splits,
                     "pick_over_fastest": measured[choice.best.splits] / fastest,
                     "fa2": choice.heuristic,
                     "fa2_over_fastest": measured[choice.heuristic] / fastest})
    return rows


def verdicts(record: dict[str, Any], section: str = "cascade",
             profile: str = "spec") -> list[dict[str, Any]]:
    """One row per ok shared-prefix batch of `section`: compare's verdict (the decoding time
    model, analysis/cascade_verdict.py, at the measured kernels' tiles) and ratio (slower ÷
    faster), the measured ones."""
    config = record["decode_config"]
    tiles = record_tiles(config)
    rows = []
    for c in record.get(section, []):
        if c.get("status") != "ok":
            continue
        result = compare(batch_workload(c), "h200", algorithms=["splitkv", "cascade"],
                         block_q=tiles.block_q, block_kv=tiles.block_kv,
                         profile=profile)  # type: ignore[arg-type]
        verdict = cascade_verdict(result, tiles, profile=profile)
        assert verdict is not None
        split, cascade = c["best_splitkv"]["time_s"], c["best_cascade"]["time_s"]
        rows.append({"id": c["id"], "iosim": verdict.winner, "iosim_ratio": verdict.ratio,
                     "measured": c["winner"],
                     "measured_ratio": max(split, cascade) / min(split, cascade)})
    return rows


def batch_workload(c: dict[str, Any]) -> Workload:
    """The shared-prefix batch of a record row."""
    suffixes = tuple(c["suffix_lens"])
    return Workload(1, n_kv=c["prefix_len"] + max(suffixes), d=c["d"], heads=c["heads"],
                    kv_heads=c["kv_heads"], batch=c["batch"], prefix_len=c["prefix_len"],
                    suffix_lens=suffixes)


def timed_verdicts(record: dict[str, Any], section: str, hw: Hardware | str = "h200"
                   ) -> list[dict[str, Any]]:
    """One row per ok shared-prefix batch: the decoding time model's verdict (L2 roof, launch
    cost; analysis/decode_time.py) next to the measured winner, and the model's time of each
    method at the split counts measured fastest over the measured time."""
    config = record["decode_config"]
    tiles = record_tiles(config)
    rows = []
    for c in record.get(section, []):
        if c.get("status") != "ok":
            continue
        counts = DecodeCounts(batch_workload(c), hw, tiles)
        v = timed_verdict(counts.workload, hw, tiles, counts=counts)
        bs, bc = c["best_splitkv"], c["best_cascade"]
        split_at = counts.splitkv(bs["splits"]).time_s
        cascade_at = counts.cascade(bc["prefix_splits"], bc["suffix_splits"]).time_s
        rows.append({"id": c["id"], "iosim": v.winner, "iosim_ratio": v.ratio,
                     "iosim_splitkv": v.splitkv.label(), "iosim_cascade": v.cascade.label(),
                     "measured": c["winner"],
                     "measured_ratio": max(bs["time_s"], bc["time_s"])
                     / min(bs["time_s"], bc["time_s"]),
                     "splitkv_us": bs["time_s"] * 1e6, "splitkv_splits": bs["splits"],
                     "splitkv_model_us": split_at * 1e6,
                     "cascade_us": bc["time_s"] * 1e6,
                     "cascade_splits": f"{bc['prefix_splits']}+{bc['suffix_splits']}",
                     "cascade_model_us": cascade_at * 1e6})
    return rows


def mla_times(record: dict[str, Any], section: str = "mla") -> list[dict[str, Any]]:
    """One row per ok MLA shape of `section`: the decoding time model's time at the measured
    fastest split count (the MLA kernel's 32 × 32 tiles) over the measured time, and the
    model's pick among the timed counts with its measured time over the fastest."""
    from decode_fit_h200 import MLA_TILES, mla_workload

    rows = []
    for p in record.get(section, []):
        if p.get("status") != "ok":
            continue
        counts = DecodeCounts(mla_workload(p), "h200", MLA_TILES)
        measured = {r["splits"]: r["time_s"] for r in p["sweep"]}
        model = {s: counts.splitkv(s).time_s for s in measured}
        best, pick = p["best_splits"], min(model, key=lambda s: (model[s], s))
        rows.append({"id": p["id"], "fastest": best, "measured_us": measured[best] * 1e6,
                     "model_us": model[best] * 1e6, "error": model[best] / measured[best] - 1,
                     "pick": pick, "pick_over_fastest": measured[pick] / measured[best]})
    return rows


def print_mla(rows: list[dict[str, Any]], title: str) -> None:
    print(f"\nMLA decode ({title}): the time model at the fastest measured split count")
    print(f"{'shape':<24} {'fastest':>7} {'µs':>8} {'model':>8} {'err':>6} {'pick':>5} {'÷':>6}")
    for r in rows:
        print(f"{r['id']:<24} {r['fastest']:>7} {r['measured_us']:>8.1f} {r['model_us']:>8.1f} "
              f"{r['error']:>+6.0%} {r['pick']:>5} {r['pick_over_fastest']:>6.3f}")
    print(f"time within ±15 %: {sum(abs(r['error']) <= 0.15 for r in rows)} of {len(rows)}; "
          f"pick within 5 %: {sum(r['pick_over_fastest'] <= WITHIN for r in rows)}")


def print_timed(rows: list[dict[str, Any]], title: str) -> None:
    print(f"\nshared prefix ({title}), the decoding time model: its winner (ratio, its picks) "
          "against the measured; its time at the measured fastest split counts")
    print(f"{'batch':<28} {'model':>8} {'×':>5} {'measured':>8} {'×':>5} "
          f"{'split-KV µs':>11} {'err':>6} {'cascade µs':>10} {'err':>6}")
    for r in rows:
        mark = "" if r["iosim"] == r["measured"] else "  wrong"
        e1 = r["splitkv_model_us"] / r["splitkv_us"] - 1
        e2 = r["cascade_model_us"] / r["cascade_us"] - 1
        print(f"{r['id']:<28} {r['iosim']:>8} {r['iosim_ratio']:>5.2f} {r['measured']:>8} "
              f"{r['measured_ratio']:>5.2f} {r['splitkv_us']:>11.1f} {e1:>+6.0%} "
              f"{r['cascade_us']:>10.1f} {e2:>+6.0%}{mark}")
    right = [r for r in rows if r["iosim"] == r["measured"]]
    errs = [abs(r[f"{m}_model_us"] / r[f"{m}_us"] - 1) for r in rows for m in ("splitkv", "cascade")]
    print(f"verdict right: {len(right)} of {len(rows)} (measured: cascade wins "
          f"{sum(r['measured'] == 'cascade' for r in rows)}, split-KV "
          f"{sum(r['measured'] == 'splitkv' for r in rows)}; right where cascade won "
          f"{sum(r['measured'] == 'cascade' for r in right)}, where split-KV won "
          f"{sum(r['measured'] == 'splitkv' for r in right)}); times within ±15 %: "
          f"{sum(e <= 0.15 for e in errs)} of {len(errs)}")


ALL_SECTIONS = ("decode", "paged", "cascade", "decode_judge", "cascade_judge", "decode_fresh",
                "cascade_fresh", "cascade_fresh2", "decode_fresh2", "cascade_fresh3")


def dram_points(record: dict[str, Any], sections: tuple[str, ...] = ALL_SECTIONS
                ) -> list[dict[str, Any]]:
    """One row per point Nsight Compute counted (decode, paged, and both methods of the
    shared-prefix batches): iosim's DRAM estimate (compare, the measured kernels' tiles and
    split counts: the L2-oblivious count, which the L2 model keeps for split-KV, less a shared
    prefix's duplicate reads and the partial states read back from L2,
    estimates/shared_prefix_dram.py; cascade's three kernels at their own split counts,
    analysis/decode_time.py) over the DRAM bytes read and written (the dirty lines left in L2
    included)."""
    config = record["decode_config"]
    tiles = record_tiles(config)
    shapes = {s["id"]: (name, s) for name in sections for s in record.get(name, [])}
    rows = []
    for section in record["counters"]:
        for p in section.get("points", []):
            if p["id"] not in shapes:
                continue
            name, shape = shapes[p["id"]]
            if "prefix_len" in shape:
                w = batch_workload(shape)
                kind = "shared prefix " + p["method"]
                counts = DecodeCounts(w, "h200", tiles)
                if p["method"] == "cascade":
                    model = counts.cascade(p["prefix_splits"], p["suffix_splits"]).dram_bytes
                else:
                    model = counts.splitkv(p["splits"]).dram_bytes
            else:
                w = Workload(1, n_kv=shape["n_kv"], d=shape["d"], heads=shape["heads"],
                             kv_heads=shape["kv_heads"], batch=shape["batch"],
                             page_size=shape.get("page_size"))
                kind = "paged" if shape.get("page_size") else "decode"
                result = compare(w, "h200", algorithms=["splitkv"], block_q=config["block_r"],
                                 block_kv=config["block_n"], splits=p["splits"])
                splitkv = next(a for a in result.algorithms if a.name == "splitkv")
                model = splitkv.dram.bytes if splitkv.dram is not None else splitkv.hbm_bytes
            # the kernels' reads and writes and the dirty lines they left in L2 (written back by
            # the closing evict: variants_ncu.attach_launches), as reports/variants-h200.md counts
            measured = p["dram_read_bytes"] + p["dram_write_bytes"]
            rows.append({"id": p["count_id"], "kind": kind, "section": name,
                         "model_bytes": model, "measured_bytes": measured,
                         "ratio": model / measured})
    return rows


def print_picks(picks: list[dict[str, Any]], title: str) -> None:
    print(f"split count ({title}): iosim --splits auto and FA2's heuristic, measured time ÷ "
          "the fastest")
    print(f"{'shape':<24} {'fastest':>7} {'iosim':>6} {'÷':>6} {'FA2':>5} {'÷':>6}")
    for r in picks:
        print(f"{r['id']:<24} {r['fastest']:>7} {r['pick']:>6} {r['pick_over_fastest']:>6.3f} "
              f"{r['fa2']:>5} {r['fa2_over_fastest']:>6.3f}")
    good = sum(r["pick_over_fastest"] <= WITHIN for r in picks)
    fa2 = sum(r["fa2_over_fastest"] <= WITHIN for r in picks)
    print(f"within 5 % of the fastest: iosim {good} of {len(picks)}, FA2's heuristic {fa2}")


def print_verdicts(rows: list[dict[str, Any]], title: str) -> None:
    print(f"\nshared prefix ({title}): iosim's winner (its predicted ratio) and the measured one")
    print(f"{'batch':<26} {'iosim':>8} {'×':>6} {'measured':>9} {'×':>6}")
    for r in rows:
        mark = "" if r["iosim"] == r["measured"] else "  wrong"
        print(f"{r['id']:<26} {r['iosim']:>8} {r['iosim_ratio']:>6.2f} {r['measured']:>9} "
              f"{r['measured_ratio']:>6.2f}{mark}")
    right = [r for r in rows if r["iosim"] == r["measured"]]
    print(f"verdict right: {len(right)} of {len(rows)} (measured: cascade wins "
          f"{sum(r['measured'] == 'cascade' for r in rows)}, split-KV "
          f"{sum(r['measured'] == 'splitkv' for r in rows)}; right where cascade won "
          f"{sum(r['measured'] == 'cascade' for r in right)}, where split-KV won "
          f"{sum(r['measured'] == 'splitkv' for r in right)})")


def markdown(record: dict[str, Any]) -> None:
    """The decoding time model's tables for reports/variants-h200.md and
    docs/variants-decoding.md: every batch's verdict and both methods' time errors, every
    counted shared-prefix and fresh decode point's DRAM error, the fresh decode picks."""
    mb = record.get("microbench", {})
    if mb:
        print("| microbenchmark | configuration | result |\n|---|---|---:|")
        for r in mb["launch"]:
            print(f"| launch (empty kernel, in a CUDA graph) | {r['grid']} programs | "
                  f"{r['per_launch_s'] * 1e6:.2f} µs |")
        for i, r in enumerate(mb["l2"]):
            streams = "own stretch" if r["streams"] == 0 else f"{r['streams']} streams"
            mark = " (the model's)" if i == 0 else ""
            print(f"| L2 read{mark} | {r['buffer_mib']} MiB, {r['programs']} programs × "
                  f"{r['reads']} tiles, {streams}, {r['num_warps']} warps | "
                  f"{r['bytes_per_s'] / 1e12:.2f} TB/s |")
        print()
    titles = {"cascade": "fit (old)", "cascade_judge": "fit (old judge)",
              "cascade_fresh": "fit (first fresh)", "cascade_fresh2": "judged (second fresh)"}
    print("| set | batch | measured winner (×) | model winner (×) | right | split-KV µs (splits) "
          "| model | error | cascade µs (splits) | model | error |")
    print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for section, title in titles.items():
        for r in timed_verdicts(record, section):
            print(f"| {title} | {_verdict_cells(r)} |")
    print("\n| point | section | ncu DRAM MB | iosim DRAM MB | error |\n|---|---|---:|---:|---:|")
    for r in dram_points(record, ("cascade", "cascade_judge", "cascade_fresh", "cascade_fresh2",
                                  "decode_fresh")):
        print(f"| {r['id']} | {r['section']} | {r['measured_bytes'] / 1e6:,.1f} | "
              f"{r['model_bytes'] / 1e6:,.1f} | {r['ratio'] - 1:+.1%} |")
    print("\n| shape | fastest splits | --splits auto | ÷ fastest | FA2 | ÷ fastest |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in split_picks(record, "decode_fresh"):
        print(f"| {r['id']} | {r['fastest']} | {r['pick']} | {r['pick_over_fastest']:.3f} | "
              f"{r['fa2']} | {r['fa2_over_fastest']:.3f} |")


def _verdict_cells(r: dict[str, Any]) -> str:
    """One timed verdict's Markdown cells: the batch, both winners, whether they agree, and
    each method's measured time (split count), model time and error."""
    e1 = r["splitkv_model_us"] / r["splitkv_us"] - 1
    e2 = r["cascade_model_us"] / r["cascade_us"] - 1
    ok = "yes" if r["iosim"] == r["measured"] else "**no**"
    return (f"{r['id']} | {r['measured']} ({r['measured_ratio']:.2f}) | {r['iosim']} "
            f"({r['iosim_ratio']:.2f}) | {ok} | {r['splitkv_us']:.1f} ({r['splitkv_splits']}) "
            f"| {r['splitkv_model_us']:.1f} | {e1:+.0%} | {r['cascade_us']:.1f} "
            f"({r['cascade_splits']}) | {r['cascade_model_us']:.1f} | {e2:+.0%}")


def markdown_fresh(record: dict[str, Any]) -> None:
    """var4's fresh set, every point (reports/variants-h200.md, docs/variants-decoding.md):
    the split picks with the model's time at the fastest count, the verdicts with both
    methods' time errors, MLA's times, and every counted point's DRAM error (decode, shared
    prefix, MLA, FP8 with per-tensor and per-block scales)."""
    import variants_compare as vc

    print("| shape | fastest splits | µs | model µs | error | --splits auto | ÷ fastest | FA2 "
          "| ÷ fastest |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    tiles = record_tiles(record["decode_config"])
    shapes = {d["id"]: d for d in record.get("decode_fresh2", [])}
    for r in split_picks(record, "decode_fresh2"):
        d = shapes[r["id"]]
        model = DecodeCounts(decode_workload(d), "h200", tiles).splitkv(r["fastest"]).time_s
        measured = {x["splits"]: x["time_s"] for x in d["sweep"]}[r["fastest"]]
        print(f"| {r['id']} | {r['fastest']} | {measured * 1e6:.1f} | {model * 1e6:.1f} | "
              f"{model / measured - 1:+.0%} | {r['pick']} | {r['pick_over_fastest']:.3f} | "
              f"{r['fa2']} | {r['fa2_over_fastest']:.3f} |")
    print("\n| batch | measured winner (×) | model winner (×) | right | split-KV µs (splits) | "
          "model | error | cascade µs (splits) | model | error |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in timed_verdicts(record, "cascade_fresh3"):
        print(f"| {_verdict_cells(r)} |")
    print("\n| MLA shape | fastest splits | µs | model µs | error | model pick | ÷ fastest |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in mla_times(record, "mla_fresh"):
        print(f"| {r['id']} | {r['fastest']} | {r['measured_us']:.1f} | {r['model_us']:.1f} | "
              f"{r['error']:+.0%} | {r['pick']} | {r['pick_over_fastest']:.3f} |")
    print("\n| counted point | section | ncu DRAM MB | iosim DRAM MB | error |")
    print("|---|---|---:|---:|---:|")
    for r in dram_points(record, ("decode_fresh2", "cascade_fresh3")):
        print(f"| {r['id']} | {r['section']} | {r['measured_bytes'] / 1e6:,.1f} | "
              f"{r['model_bytes'] / 1e6:,.1f} | {r['ratio'] - 1:+.1%} |")
    counts = vc.counted(record)
    for section, algorithm, opts in (("mla_fresh", "splitkv", vc.MLA_TILES),
                                     ("fp8_fresh", "flash2", vc.FP8_TILES),
                                     ("fp8_block", "flash2", vc.FP8_TILES)):
        for p in record.get(section, []):
            for cid, c in counts.items():
                if c["id"] != p["id"]:
                    continue
                extra = {"splits": c["splits"]} if c.get("splits") else {}
                model = vc.predict(p, algorithm, **opts, **extra)["dram_bytes"]
                measured = c["dram_read_bytes"] + c["dram_write_bytes"]
                print(f"| {cid} | {section} | {measured / 1e6:,.1f} | {model / 1e6:,.1f} | "
                      f"{model / measured - 1:+.1%} |")
    print("\n| FP8 shape | scales | measured ms | iosim roofline ms (measured profile) | "
          "error |\n|---|---|---:|---:|---:|")
    for section in ("fp8_fresh", "fp8_block"):
        for p in record.get(section, []):
            model = vc.predict(p, "flash2", **vc.FP8_TILES)["time_s"]
            print(f"| {p['id']} | {p['fp8_scales']} | {p['time_s'] * 1e3:.3f} | "
                  f"{model * 1e3:.3f} | {model / p['time_s'] - 1:+.0%} |")


def main(argv: list[str]) -> int:
    profile = "spec"
    if "--profile" in argv:
        at = argv.index("--profile")
        profile = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
        if profile not in ("spec", "measured"):
            print(f"--profile takes spec or measured, not {profile!r}", file=sys.stderr)
            return 2
    flags = {a for a in argv if a.startswith("--")}
    argv = [a for a in argv if not a.startswith("--")]
    timed = "--no-timed" not in flags
    record = json.loads(Path(argv[0] if argv else RECORD).read_text())
    if "--markdown" in flags:
        markdown(record)
        return 0
    if "--fresh-markdown" in flags:
        markdown_fresh(record)
        return 0
    print(f"profile: {profile}\n")
    for decode, cascade, title in (("decode", "cascade", "first fit set, seen"),
                                   ("decode_judge", "cascade_judge", "judge set, seen"),
                                   ("decode_fresh", "cascade_fresh", "var3's fresh set, seen"),
                                   ("", "cascade_fresh2", "var3's second fresh set, seen"),
                                   ("decode_fresh2", "cascade_fresh3",
                                    "var4's fresh set (model frozen at tag var4-frozen)")):
        if not record.get(decode or "-") and not record.get(cascade):
            continue
        print(f"=== {title} ===")
        if decode:
            print_picks(split_picks(record, decode, profile), title)
        if timed:
            print_timed(timed_verdicts(record, cascade), title)
        else:
            print_verdicts(verdicts(record, cascade, profile), title)
        print()
    for section, title in (("mla", "seen (fitted on)"), ("mla_fresh", "var4's fresh set")):
        if record.get(section):
            print_mla(mla_times(record, section), title)
    print()
    points = dram_points(record)
    print("DRAM: iosim's estimate ÷ ncu DRAM read + write, per point")
    for kind in ("decode", "paged", "shared prefix splitkv", "shared prefix cascade"):
        for section in dict.fromkeys(r["section"] for r in points):
            ratios = sorted(r["ratio"] for r in points
                            if r["kind"] == kind and r["section"] == section)
            if not ratios:
                continue
            inside = sum(abs(x - 1) <= 0.10 for x in ratios)
            print(f"{kind:<22} {section:<14} {len(ratios):>3} points, {inside:>3} within ±10 %; "
                  f"ratio {ratios[0]:.2f} .. {ratios[-1]:.2f}, median "
                  f"{ratios[len(ratios) // 2]:.2f}")
    if "--points" in flags:
        for r in points:
            print(f"  {r['id']:<40} {r['kind']:<22} ncu {r['measured_bytes'] / 1e6:9.2f} MB "
                  f"iosim {r['model_bytes'] / 1e6:9.2f} MB {r['ratio'] - 1:+7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
