"""iosim's predictions against the H200 record of issue 14 (tests/data/h200-variants.json).

    python benchmarks/variants_compare.py tests/data/h200-variants.json [--out reports/variants-h200.md]

For every counted point: the DRAM bytes iosim's L2-aware estimate predicts against Nsight
Compute's (read + write, the closing evict's write-backs included), and the time iosim predicts
(the GPU's measured profile) against the median measured time. Each kernel family gets two
constants, measured ≈ a · predicted + b · kernels launched (b: a per-launch floor, what a
memory-bound decode kernel of a few microseconds cannot go under), fitted on half of its
shapes (sorted by id: the even positions, every split count of a shape together) and judged on
the rest: "calibrated" errors are the fitted line's on the judged points (fit points marked).
Decoding shapes add the split count the model picks (argmin of its predicted time over every
count) against the fastest measured count; shared-prefix batches add the model's
cascade-vs-split-KV verdict against the measured winner.

A point whose workload or algorithm the installed iosim cannot model yet prints the reason and
counts as not compared; rerun after the model lands.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import iosim
from iosim.errors import IosimError
from iosim.record import field_names

GPU = "h200"
Row = dict[str, Any]


def workload(p: dict[str, Any], **extra: Any) -> iosim.Workload:
    """The point as an iosim Workload, passing only the fields this iosim has."""
    known = set(field_names(iosim.Workload))
    fields = {"n": p["n"], "n_kv": p.get("n_kv", p["n"]), "d": p["d"], "heads": p["heads"],
              "kv_heads": p["kv_heads"], "batch": p["batch"], "dtype": p["dtype"],
              "causal": p["causal"], "window": p.get("window"),
              "seqlens": tuple(p["seqlens"]) if p.get("seqlens") else None,
              "d_v": p.get("d_v"), "latent_kv": p.get("latent_kv", False),
              "fp8_scales": p.get("fp8_scales"), "page_size": p.get("page_size"),
              "prefix_len": p.get("prefix_len"),
              "suffix_lens": tuple(p["suffix_lens"]) if p.get("suffix_lens") else None, **extra}
    if p["kind"] == "cascade":
        # iosim models a shared-prefix batch over one contiguous K/V cache (inputs/decoding.py);
        # the measurement ran pages of 16, which cost 0.5-3.5 % at the best split count (the
        # paged section of the record)
        fields["n_kv"] = p["prefix_len"] + max(p["suffix_lens"])
        fields["page_size"] = None
    unknown = [k for k, v in fields.items() if k not in known and v not in (None, False)]
    if unknown:
        raise IosimError(f"this iosim's Workload has no {', '.join(unknown)}")
    n = fields.pop("n")
    return iosim.Workload(n, **{k: v for k, v in fields.items() if k in known})


def predict(p: dict[str, Any], algorithm: str | None, **opts: Any) -> Row:
    """{"time_s", "dram_bytes", "hbm_bytes"} of one algorithm (or --impl) on the H200."""
    w = workload(p)
    if algorithm is None:
        c = iosim.compare(w, GPU, profile="measured", **opts)
        est = c.algorithms[-1]
    else:
        c = iosim.compare(w, GPU, algorithms=[algorithm], profile="measured", **opts)
        est = c.algorithm(algorithm)
    return {"time_s": float(est.time_s), "hbm_bytes": int(est.hbm_bytes),
            "dram_bytes": None if est.dram is None else int(est.dram.bytes),
            "splits": est.tiling.splits if est.tiling is not None else None}


def attempt(fn: Callable[[], Row]) -> Row:
    try:
        return fn()
    except (IosimError, TypeError, ValueError, KeyError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:160]}


def counted(record: dict[str, Any]) -> dict[str, Row]:
    return {c["count_id"]: c for run in record["counters"] for c in run["points"]}


def measured_time(row: Row, key: str, **match: Any) -> float | None:
    for r in row.get(key, []):
        if all(r.get(k) == v for k, v in match.items()):
            return float(r["time_s"])
    return None


# ---------------------------------------------------------------------------------------------
# the families: (family, point, count row, measured time, predicted)


DECODE_TILES = {"block_q": 16, "block_kv": 64}
MLA_TILES = {"block_q": 32, "block_kv": 32}
FP8_TILES = {"block_q": 128, "block_kv": 64}


def rows_for(record: dict[str, Any]) -> list[Row]:
    counts = counted(record)
    out: list[Row] = []
    for family, section in (("flex", "flex"), ("flex", "flex2")):
        for p in record.get(section, []):
            c = counts.get(p["id"])
            out.append({"family": family, "id": p["id"], "point": p, "counts": c,
                        "time_s": p["time_s"],
                        "model": attempt(lambda p=p: predict(p, None, impl="flex"))})
    for family, section, tiles in (("splitkv", "decode", DECODE_TILES),
                                   ("splitkv-paged", "paged", DECODE_TILES),
                                   ("mla", "mla", MLA_TILES), ("mla", "mla_fresh", MLA_TILES),
                                   ("mla", "mla_fresh2", MLA_TILES)):
        for p in record.get(section, []):
            for cid, c in counts.items():
                if c["id"] != p["id"]:
                    continue
                s = c["splits"]
                out.append({"family": family, "id": cid, "point": p, "counts": c,
                            "time_s": measured_time(p, "sweep", splits=s),
                            "model": attempt(lambda p=p, s=s, tiles=tiles: predict(
                                p, "splitkv", splits=s, **tiles))})
    for p in record.get("cascade", []):
        for cid, c in counts.items():
            if c["id"] != p["id"]:
                continue
            if c["method"] == "splitkv":
                t = measured_time(p, "splitkv", splits=c["splits"])
                model = attempt(lambda p=p, c=c: predict(p, "splitkv", splits=c["splits"],
                                                         **DECODE_TILES))
            else:
                t = measured_time(p, "cascade", prefix_splits=c["prefix_splits"],
                                  suffix_splits=c["suffix_splits"])
                model = attempt(lambda p=p, c=c: predict(p, "cascade", splits=max(
                    c["prefix_splits"], c["suffix_splits"]), **DECODE_TILES))
            out.append({"family": f"cascade-{c['method']}", "id": cid, "point": p, "counts": c,
                        "time_s": t, "model": model})
    for p in (record.get("fp8", []) + record.get("fp8_e5m2", []) + record.get("fp8_fresh", [])
              + record.get("fp8_block", []) + record.get("fp8_fresh2", [])):
        c = counts.get(p["id"])
        out.append({"family": "fp8" if p["dtype"].startswith("fp8") else "fp16-scaled",
                    "id": p["id"], "point": p, "counts": c, "time_s": p["time_s"],
                    "model": attempt(lambda p=p: predict(p, "flash2", **FP8_TILES))})
    return out


def fit_line(points: list[tuple[float, int, float]]) -> tuple[float, float]:
    """(a, b) of measured ≈ a · predicted + b · kernels, least squares on relative errors
    (each point weighted by 1/measured); b ≥ 0, the per-kernel floor a launch cannot go under."""
    saa = sab = sbb = sam = sbm = 0.0
    for pred, kernels, meas in points:
        w = 1.0 / meas**2
        saa += w * pred * pred
        sab += w * pred * kernels
        sbb += w * kernels * kernels
        sam += w * pred * meas
        sbm += w * kernels * meas
    det = saa * sbb - sab * sab
    if det > 1e-30 * saa * sbb and det > 0:
        a, b = (sam * sbb - sbm * sab) / det, (saa * sbm - sab * sam) / det
        if b >= 0:
            return a, b
    return sam / saa, 0.0


def calibrate(rows: list[Row]) -> dict[str, Row]:
    """Per family: measured ≈ a · predicted + b · kernels launched, (a, b) fitted on the shapes
    at even positions of the family's shapes sorted by id ("fit"), judged on the others."""
    fits: dict[str, Row] = {}
    families = sorted({r["family"] for r in rows})
    for family in families:
        ok = sorted((r for r in rows if r["family"] == family and "time_s" in r["model"]
                     and r["time_s"]), key=lambda r: r["id"])
        # by shape: every split count of one shape falls in the same half
        shapes = sorted({r["point"]["id"] for r in ok})
        half = {s: "fit" if i % 2 == 0 else "judged" for i, s in enumerate(shapes)}
        for r in ok:
            r["split"] = half[r["point"]["id"]]
            r["kernels"] = len(r["counts"]["kernels"]) if r["counts"] else 1
        fit = [(r["model"]["time_s"], r["kernels"], r["time_s"]) for r in ok if r["split"] == "fit"]
        if not fit:
            continue
        a, b = fit_line(fit)
        for r in ok:
            r["calibrated_s"] = a * r["model"]["time_s"] + b * r["kernels"]
        judged = [abs(r["calibrated_s"] / r["time_s"] - 1) for r in ok if r["split"] == "judged"]
        fits[family] = {"scale": a, "floor_s": b, "fit_points": len(fit),
                        "judged_points": len(judged), "within_15": sum(e <= 0.15 for e in judged),
                        "median_error": statistics.median(judged) if judged else None}
    return fits


def model_times(p: dict[str, Any], tiles: dict[str, int]) -> tuple[dict[int, float], int | None]:
    """Predicted time per split count and FA2's heuristic count: `--splits auto`'s own table
    (iosim.analysis.split_choice) where this iosim has it, else compare at each count."""
    try:
        from iosim.analysis.split_choice import choose_splits  # type: ignore[import-not-found]
    except ImportError:
        counts = [r["splits"] for r in p["sweep"]]
        times = {s: predict(p, "splitkv", splits=s, **tiles)["time_s"] for s in counts}
        return times, predict(p, "splitkv", **tiles)["splits"]
    choice = choose_splits(workload(p), GPU, profile="measured", **tiles)
    return {r.splits: r.time_s for r in choice.rows if r.eligible}, choice.heuristic


def split_picks(record: dict[str, Any]) -> list[Row]:
    """Per decode shape: the model's best split count (among the measured counts) and FA2's
    heuristic's against the fastest measured count."""
    out = []
    for p in record.get("decode", []) + record.get("mla", []):
        tiles = MLA_TILES if p["kind"] == "mla" else DECODE_TILES
        try:
            times, heuristic = model_times(p, tiles)
        except (IosimError, TypeError, ValueError, KeyError) as exc:
            out.append({"id": p["id"], "error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
            continue
        measured = {r["splits"]: r["time_s"] for r in p["sweep"]}
        candidates = [s for s in times if s in measured]
        pick = min(candidates, key=lambda s: (times[s], s))
        out.append({"id": p["id"], "best": p["best_splits"], "best_s": p["best_time_s"],
                    "pick": pick, "pick_s": measured[pick], "fa2": heuristic,
                    "fa2_s": measured.get(heuristic) if heuristic else None})
    return out


def verdicts(record: dict[str, Any]) -> list[Row]:
    out = []
    for p in record.get("cascade", []):
        plain = {r["splits"]: r for r in p["splitkv"]}

        def best(algorithm: str, counts: list[int], p: dict[str, Any] = p) -> Row:
            tries = [attempt(lambda s=s: predict(p, algorithm, splits=s, **DECODE_TILES))
                     for s in counts]
            good = [t for t in tries if "error" not in t]
            return min(good, key=lambda t: t["time_s"]) if good else tries[0]

        equal = sorted({r["prefix_splits"] for r in p["cascade"]}
                       & {r["suffix_splits"] for r in p["cascade"]})
        mp, mc = best("splitkv", sorted(plain)), best("cascade", equal)
        row: Row = {"id": p["id"], "measured": p["winner"],
                    "measured_ratio": p["best_splitkv"]["time_s"] / p["best_cascade"]["time_s"]}
        if "error" in mp or "error" in mc:
            row["error"] = mc.get("error") or mp.get("error")
        else:
            row["model"] = "cascade" if mc["time_s"] < mp["time_s"] else "splitkv"
            row["model_ratio"] = mp["time_s"] / mc["time_s"]
        out.append(row)
    return out


# ---------------------------------------------------------------------------------------------
# the report


def pct(a: float | None, b: float | None) -> str:
    return "—" if a is None or not b else f"{(a / b - 1) * 100:+.1f}%"


def mb(x: float | None) -> str:
    return "—" if x is None else f"{x / 1e6:,.1f}"


def dram_error(r: Row) -> float | None:
    c, m = r["counts"], r["model"]
    if not c or not m.get("dram_bytes"):
        return None
    return float(m["dram_bytes"] / (c["dram_read_bytes"] + c["dram_write_bytes"]) - 1)


def dram_hits(rows: list[Row], family: str) -> str:
    errors = [dram_error(r) for r in rows if r["family"] == family]
    known = [e for e in errors if e is not None]
    return f"{sum(abs(e) <= 0.10 for e in known)} of {len(known)}"


def report(record: dict[str, Any], rows: list[Row], fits: dict[str, Row], picks: list[Row],
           verdict_rows: list[Row]) -> str:
    lines = ["## iosim against the record", "",
             "`python benchmarks/variants_compare.py tests/data/h200-variants.json` "
             f"(iosim {iosim.__version__}). DRAM: iosim's L2-aware estimate against ncu "
             "(read + write). Time: the measured profile of configs/gpus/h200.yaml, raw and "
             "after a · predicted + b · kernels per family, fitted on the `fit` points and "
             "judged on the others.", ""]
    compared = [r for r in rows if "error" not in r["model"]]
    lines += [f"{len(compared)} of {len(rows)} counted points compared.", ""]
    if fits:
        lines += ["| family | DRAM within ±10 % | a (fit) | b: µs per kernel (fit) | fit points | "
                  "judged | judged within ±15 % | judged median error |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {f} | {dram_hits(rows, f)} | {v['scale']:.3f} | {v['floor_s'] * 1e6:.1f} | "
                  f"{v['fit_points']} | {v['judged_points']} | {v['within_15']} | "
                  f"{(v['median_error'] or 0) * 100:.1f}% |" for f, v in fits.items()]
        lines.append("")
    known = [e for e in (dram_error(r) for r in compared) if e is not None]
    lines += [f"DRAM within ±10 % of ncu: {sum(abs(e) <= 0.10 for e in known)} of {len(known)} "
              "points.", ""]
    lines += ["| point | family | ncu DRAM MB | iosim DRAM MB | error | measured µs | iosim µs "
              "| error | calibrated error | set |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        m, c = r["model"], r["counts"]
        ncu = None if not c else c["dram_read_bytes"] + c["dram_write_bytes"]
        if "error" in m:
            lines.append(f"| {r['id']} | {r['family']} | {mb(ncu)} | — | — | "
                         f"{(r['time_s'] or 0) * 1e6:,.1f} | — | — | — | not modelled: "
                         f"{m['error'][:70]} |")
            continue
        lines.append(
            f"| {r['id']} | {r['family']} | {mb(ncu)} | {mb(m['dram_bytes'])} | "
            f"{pct(m['dram_bytes'], ncu)} | {(r['time_s'] or 0) * 1e6:,.1f} | "
            f"{m['time_s'] * 1e6:,.1f} | {pct(m['time_s'], r['time_s'])} | "
            f"{pct(r.get('calibrated_s'), r['time_s'])} | {r.get('split', '—')} |")
    hits = sum(1 for r in picks if "error" not in r and r["pick_s"] <= 1.05 * r["best_s"])
    lines += ["", "### Split counts: the model's pick against the fastest measured", "",
              f"iosim's pick within 5 % of the fastest measured count: {hits} of {len(picks)} "
              "shapes (MLA shapes were timed at 1, 2, 4, ..., 64 splits only: the pick is among "
              "those).", "",
              "| shape | fastest | µs | iosim pick | µs | within 5 % | FA2 heuristic | µs |",
              "|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in picks:
        if "error" in r:
            lines.append(f"| {r['id']} | — | — | — | — | not modelled: {r['error'][:60]} | — | — |")
            continue
        ok = r["pick_s"] is not None and r["pick_s"] <= 1.05 * r["best_s"]
        fa2 = "not timed" if r["fa2_s"] is None else f"{r['fa2_s'] * 1e6:,.1f}"
        lines.append(f"| {r['id']} | {r['best']} | {r['best_s'] * 1e6:,.1f} | {r['pick']} | "
                     f"{r['pick_s'] * 1e6:,.1f} | {'yes' if ok else 'no'} | {r['fa2']} | {fa2} |")
    lines += ["", "### Cascade or split-KV: the model's verdict against the measured winner", "",
              "| batch | measured winner | split-KV / cascade time | iosim verdict | iosim ratio | "
              "match |", "|---|---|---:|---|---:|---|"]
    for r in verdict_rows:
        if "error" in r:
            lines.append(f"| {r['id']} | {r['measured']} | {r['measured_ratio']:.2f} | "
                         f"not modelled: {r['error'][:60]} | — | — |")
            continue
        lines.append(f"| {r['id']} | {r['measured']} | {r['measured_ratio']:.2f} | {r['model']} | "
                     f"{r['model_ratio']:.2f} | {'yes' if r['model'] == r['measured'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown here")
    args = parser.parse_args(argv)
    record = json.loads(args.record.read_text())
    rows = rows_for(record)
    fits = calibrate(rows)
    text = report(record, rows, fits, split_picks(record), verdicts(record))
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
