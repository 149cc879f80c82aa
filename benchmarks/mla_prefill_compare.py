"""iosim against the H200's MLA prefill record: DRAM against ncu, time raw and calibrated.

    python benchmarks/mla_prefill_compare.py FIT.json [FRESH.json] [--markdown]

FIT.json: benchmarks/mla_prefill_h200.py --set fit (tests/data/h200-mla-prefill.json); FRESH.json
the fresh set measured after the fit was frozen (tag mla5-frozen;
tests/data/h200-mla-prefill-fresh.json). Per implementation:

    triton          iosim's flash2 at the kernel's tiles (--block-q 128 --block-kv 64), the
                    measured profile (configs/gpus/h200.yaml)
    sdpa-efficient  iosim's --impl sdpa-efficient, the measured profile
    sdpa-cudnn      iosim's --impl sdpa-cudnn, the measured profile

DRAM: iosim's L2-aware estimate against ncu's read + write (the closing evict's write-backs
included). Time: iosim's raw prediction against the do_bench median, then calibrated as the
issue-14 families are (benchmarks/variants_compare.py fit_line): measured ≈ a · predicted + b,
one (a, b) per implementation, least squares on relative errors, fitted on the FIT record's
points only; the fresh points are judged with those constants, never refitted. Sensitivity:
how many points stay within ±15 % with a ± 5 % and b ± 5 µs.

Our kernel (triton) also gets the model chosen for it before the fresh run (frozen at tag
mla5-frozen with the constants below), with one term per cause:

    measured ≈ a · predicted + c₀ · waves + b,   waves = ⌈programs / (programs per SM · SMs)⌉

a: the measured profile's fused rate for this kernel (its efficiency was fitted on d_v = d
kernels); c₀: what each program pays once, apart from its key loop (Q_i's 48 KB load, the
pipeline's fill, O_i's and L_i's stores), in series on its SM since the kernel's 128 KiB of
shared memory leaves one program per SM (ncu launch__shared_mem_per_block_dynamic 131,072; iosim
programs_per_sm 1); b: the launch as do_bench sees it (the graph replay and its events).
Fitted by least squares on relative errors on the FIT points only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import variants_compare as vc

import iosim

GPU = "h200"
TILES = {"block_q": 128, "block_kv": 64}
"""kernels_mla_prefill.PrefillConfig's tiles, which the record's triton rows carry."""
Row = dict[str, Any]


def predict(p: Row) -> Row:
    """iosim's time and DRAM bytes for one point on the H200's measured profile."""
    w = iosim.Workload(p["n"], d=p["d"], d_v=p["d_v"], heads=p["heads"], batch=p["batch"],
                       dtype=p["dtype"], causal=p["causal"])
    if p["impl"] == "triton":
        tiles = {"block_q": p.get("block_m", TILES["block_q"]),
                 "block_kv": p.get("block_n", TILES["block_kv"])}
        est = iosim.compare(w, GPU, algorithms=["flash2"], profile="measured",
                            **tiles).algorithm("flash2")
    else:
        est = iosim.compare(w, GPU, profile="measured", impl=p["impl"]).algorithms[-1]
    occ = est.occupancy[0]
    waves = -(-occ.programs // max(1, occ.per_sm * occ.sm_count))
    return {"time_s": float(est.time_s), "dram_bytes": None if est.dram is None
            else int(est.dram.bytes), "hbm_bytes": int(est.hbm_bytes), "waves": waves}


def rows_of(record: Row, section: str) -> list[Row]:
    counts = {c["count_id"]: c for c in record["counters"]["points"]}
    out = []
    for p in record.get(section, []):
        if p["status"] != "ok":
            out.append({"point": p, "status": p["status"]})
            continue
        c = counts.get(p["id"])
        ncu = None if c is None else c["dram_read_bytes"] + c["dram_write_bytes"]
        out.append({"point": p, "status": "ok", "model": predict(p), "ncu_dram": ncu,
                    "ncu_time_s": None if c is None else c["kernel_time_s"]})
    return out


def fit(rows: list[Row]) -> dict[str, tuple[float, float]]:
    """(a, b) per implementation on these rows (measured ≈ a · predicted + b)."""
    out = {}
    for impl in sorted({r["point"]["impl"] for r in rows if r["status"] == "ok"}):
        pts = [(r["model"]["time_s"], 1, r["point"]["time_s"]) for r in rows
               if r["status"] == "ok" and r["point"]["impl"] == impl]
        out[impl] = vc.fit_line(pts)
    return out


def fit_waves(rows: list[Row]) -> tuple[float, float, float]:
    """(a, c₀, b) of measured ≈ a · predicted + c₀ · waves + b on our kernel's ok rows, least
    squares on relative errors (the module docstring)."""
    import numpy as np

    ok = [r for r in rows if r["status"] == "ok" and r["point"]["impl"] == "triton"]
    design = np.array([[r["model"]["time_s"], r["model"]["waves"], 1.0] for r in ok])
    measured = np.array([r["point"]["time_s"] for r in ok])
    coef, *_ = np.linalg.lstsq(design / measured[:, None], np.ones(len(ok)), rcond=None)
    return float(coef[0]), float(coef[1]), float(coef[2])


def waves_time(r: Row, constants: tuple[float, float, float], scale: tuple[float, ...] = (
        1.0, 1.0, 1.0)) -> float:
    a, c0, b = (c * s for c, s in zip(constants, scale, strict=True))
    return float(a * r["model"]["time_s"] + c0 * r["model"]["waves"] + b)


def calibrated(r: Row, constants: dict[str, tuple[float, float]], da: float = 0.0,
               db: float = 0.0) -> float:
    a, b = constants[r["point"]["impl"]]
    return (a * (1 + da)) * r["model"]["time_s"] + max(0.0, b + db)


def megabytes(x: float | None) -> str:
    return "—" if x is None else f"{x / 1e6:,.1f}"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:+.1f}%"


def table(rows: list[Row], constants: dict[str, tuple[float, float]],
          waves: tuple[float, float, float]) -> list[str]:
    lines = ["| point | impl | causal | dtype | measured µs | iosim µs | raw error | "
             "a · t + b error | + c₀ · waves error | ncu DRAM MB | iosim DRAM MB | DRAM error |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p = r["point"]
        shape = p["id"].rsplit("-" + p["impl"], 1)[0]
        if r["status"] != "ok":
            lines.append(f"| {shape} | {p['impl']} | {'yes' if p['causal'] else 'no'} | "
                         f"{p['dtype']} | — | — | — | — | — | — | — | {r['status'][:60]} |")
            continue
        m, t = r["model"], p["time_s"]
        dram = None if not r["ncu_dram"] or m["dram_bytes"] is None else (
            m["dram_bytes"] / r["ncu_dram"] - 1)
        lines.append(
            f"| {shape} | {p['impl']} | {'yes' if p['causal'] else 'no'} | {p['dtype']} | "
            f"{t * 1e6:,.1f} | {m['time_s'] * 1e6:,.1f} | {pct(m['time_s'] / t - 1)} | "
            f"{pct(calibrated(r, constants) / t - 1)} | "
            f"{pct(waves_time(r, waves) / t - 1) if p['impl'] == 'triton' else '—'} | "
            f"{megabytes(r['ncu_dram'])} | "
            f"{megabytes(m['dram_bytes'])} | {pct(dram)} |")
    return lines


def summary(rows: list[Row], constants: dict[str, tuple[float, float]], label: str) -> list[str]:
    lines = [f"| {label}: impl | points | time within ±15 % (calibrated) | raw | DRAM within "
             "±10 % | a ± 5 %, b ± 5 µs: fewest within ±15 % |", "|---|---:|---:|---:|---:|---:|"]
    for impl in constants:
        ok = [r for r in rows if r["status"] == "ok" and r["point"]["impl"] == impl]
        if not ok:
            continue

        def within(da: float = 0.0, db: float = 0.0, ok: list[Row] = ok) -> int:
            return sum(abs(calibrated(r, constants, da, db) / r["point"]["time_s"] - 1) <= 0.15
                       for r in ok)
        raw = sum(abs(r["model"]["time_s"] / r["point"]["time_s"] - 1) <= 0.15 for r in ok)
        drams = [r["model"]["dram_bytes"] / r["ncu_dram"] - 1 for r in ok
                 if r["ncu_dram"] and r["model"]["dram_bytes"] is not None]
        worst = min(within(da, db) for da in (-0.05, 0.0, 0.05) for db in (-5e-6, 0.0, 5e-6))
        lines.append(f"| {impl} | {len(ok)} | {within()} | {raw} | "
                     f"{sum(abs(e) <= 0.10 for e in drams)} of {len(drams)} | {worst} |")
    return lines


def waves_summary(rows: list[Row], waves: tuple[float, float, float], label: str) -> list[str]:
    """Our kernel's points within ±15 % under a · t + c₀ · waves + b, and with each constant
    10 % off (its sensitivity)."""
    ok = [r for r in rows if r["status"] == "ok" and r["point"]["impl"] == "triton"]

    def within(scale: tuple[float, ...] = (1.0, 1.0, 1.0)) -> int:
        return sum(abs(waves_time(r, waves, scale) / r["point"]["time_s"] - 1) <= 0.15
                   for r in ok)
    moved = []
    for i, name in enumerate(("a", "c₀", "b")):
        for f in (0.9, 1.1):
            scale = tuple(f if j == i else 1.0 for j in range(3))
            moved.append(f"{name} × {f}: {within(scale)}")
    return [f"{label}: our kernel under a · t + c₀ · waves + b: {within()} of {len(ok)} within "
            f"±15 %; sensitivity ({', '.join(moved)})"]


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv if not a.startswith("--")]
    fit_record = json.loads(paths[0].read_text())
    fit_rows = rows_of(fit_record, "fit")
    constants = fit(fit_rows)
    out = [f"Constants (fitted on {paths[0]} \"fit\" only): "
           + "; ".join(f"{impl} a = {a:.3f}, b = {b * 1e6:.1f} µs"
                       for impl, (a, b) in constants.items()), ""]
    waves = fit_waves(fit_rows)
    out += [f"Our kernel's model: a = {waves[0]:.3f}, c₀ = {waves[1] * 1e6:.2f} µs per wave, "
            f"b = {waves[2] * 1e6:.2f} µs per launch", ""]
    out += [*summary(fit_rows, constants, "fit"), "", *waves_summary(fit_rows, waves, "fit"), "",
            *table(fit_rows, constants, waves)]
    if len(paths) > 1:
        fresh_rows = rows_of(json.loads(paths[1].read_text()), "fresh")
        out += ["", *summary(fresh_rows, constants, "fresh"), "",
                *waves_summary(fresh_rows, waves, "fresh"), "",
                *table(fresh_rows, constants, waves)]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
