"""Nsight Compute for the issue-14 points (benchmarks/variants_h200.py's phase 2): what to count,
the ncu run of calibrate/variants_target.py, and its launches split back into points.

ncu runs with `--profile-from-start off`: the target turns the profiler on around each point's
evict, launch, evict, so compilation, warm-up and checks are not profiled (calibrate/ncu.py's
protocol otherwise: cache and clock control none; the closing evict's DRAM writes are the dirty
lines the point left in L2).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import triton

from iosim.calibrate import kernels_variants as KV
from iosim.calibrate import variants_points as VP
from iosim.calibrate.ncu import evict_groups

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
           "gpu__time_duration.sum", "launch__grid_size", "launch__block_size",
           "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic",
           "launch__shared_mem_per_block_static")


def key_blocks(n_kv: int, block_n: int = KV.DecodeConfig().block_n) -> int:
    """⌈n_kv / BLOCK_N⌉: the key blocks a split count may not exceed."""
    return triton.cdiv(n_kv, block_n)  # type: ignore[no-any-return]


def count_spec(record: dict[str, Any]) -> list[dict[str, Any]]:
    """What phase 2 counts: every Flex point; each decode shape at 1, 2, 4, ... splits and its
    fastest (a judge or fresh shape at 1 split and its fastest); each page size at its fastest;
    each shared-prefix batch's best of both methods (fit, judge and fresh sets)."""
    spec: list[dict[str, Any]] = []
    for r in record["flex"] + record.get("flex2", []):
        if r["status"] == "ok":
            spec.append({"count_id": r["id"], "point": _point(r)})
    for r in record["decode"]:
        if r["status"] == "ok":
            top = key_blocks(r["n_kv"])
            for s in sorted(set(VP.powers_of_two(top)) | {r["best_splits"]}):
                spec.append({"count_id": f"{r['id']} s{s}", "point": _point(r), "splits": s})
    for r in (record.get("decode_judge", []) + record.get("decode_fresh", [])
              + record.get("decode_fresh2", [])):
        if r["status"] == "ok":
            for s in sorted({1, r["best_splits"]}):
                spec.append({"count_id": f"{r['id']} s{s}", "point": _point(r), "splits": s})
    for r in record.get("mla", []) + record.get("mla_fresh", []) + record.get("mla_fresh2", []):
        if r["status"] == "ok":
            for s in sorted({1, r["best_splits"]}):
                spec.append({"count_id": f"{r['id']} s{s}", "point": _point(r), "splits": s})
    for r in record.get("mla_fresh3", []):
        # var7: more split counts a shape (the partial states' size and the waves change)
        if r["status"] == "ok":
            for s in sorted({1, 8, 32, r["best_splits"]}):
                spec.append({"count_id": f"{r['id']} s{s}", "point": _point(r), "splits": s})
    for r in record.get("mla_fresh4", []) + record.get("decode_fresh3", []):
        # var9: as mla_fresh3 (plain split-KV too: Q once, the states' read-back by the waves)
        if r["status"] == "ok":
            top = max(s["splits"] for s in r["sweep"])
            for s in sorted({c for c in (1, 8, 32) if c <= top} | {r["best_splits"]}):
                spec.append({"count_id": f"{r['id']} s{s}", "point": _point(r), "splits": s})
    for r in (record.get("fp8", []) + record.get("fp8_e5m2", []) + record.get("fp8_fresh", [])
              + record.get("fp8_block", []) + record.get("fp8_fresh2", [])):
        if r["status"] == "ok":
            spec.append({"count_id": r["id"], "point": _point(r)})
    for r in record["paged"]:
        if r["status"] == "ok":
            spec.append({"count_id": f"{r['id']} s{r['best_splits']}", "point": _point(r),
                         "splits": r["best_splits"]})
    for r in (record["cascade"] + record.get("cascade_judge", [])
              + record.get("cascade_fresh", []) + record.get("cascade_fresh2", [])
              + record.get("cascade_fresh3", []) + record.get("cascade_fresh4", [])
              + record.get("cascade_fresh5", []) + record.get("cascade_fresh6", [])
              + record.get("cascade_fresh7", []) + record.get("cascade_fresh8", [])
              + record.get("cascade_fresh9", [])):
        if r["status"] == "ok":
            bp, bc = r["best_splitkv"], r["best_cascade"]
            plain = {bp["splits"]}
            if r in record.get("cascade_fresh5", []):  # var9: split-KV at 8 splits too
                plain |= {s["splits"] for s in r["splitkv"] if s["splits"] == 8}
            if r in (record.get("cascade_fresh6", [])  # var10: the grid in several waves
                     + record.get("cascade_fresh7", [])  # var11: likewise
                     + record.get("cascade_fresh8", [])  # var12: likewise
                     + record.get("cascade_fresh9", [])):  # var13: likewise
                plain |= {s["splits"] for s in r["splitkv"] if s["splits"] in (8, 16, 32)}
            for splits in sorted(plain):
                spec.append({"count_id": f"{r['id']} splitkv s{splits}", "point": _point(r),
                             "method": "splitkv", "splits": splits})
            spec.append({"count_id": f"{r['id']} cascade {bc['prefix_splits']}+"
                         f"{bc['suffix_splits']}", "point": _point(r), "method": "cascade",
                         "prefix_splits": bc["prefix_splits"], "suffix_splits": bc["suffix_splits"]})
    return spec


POINT_KEYS = ("id", "kind", "dtype", "d", "d_v", "n", "n_kv", "heads", "kv_heads", "batch",
              "causal", "window", "seqlens", "block_size", "page_size", "prefix_len", "suffix_lens",
              "latent_kv", "fp8_scales")


def _point(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in POINT_KEYS if k in r}


def run_ncu(spec: list[dict[str, Any]], out: Path, timeout_s: float, log: Any, name: str
            ) -> dict[str, Any]:
    """One ncu run of variants_target over `spec`; its counters per point, or why not."""
    from iosim.calibrate import ncu

    metrics = METRICS

    def command(ncu_bin: str, report: Path, spec_file: Path, manifest: Path) -> list[str]:
        return [ncu_bin, "--clock-control", "none", "--cache-control", "none",
                "--profile-from-start", "off", "--metrics", ",".join(metrics),
                "--force-overwrite", "--export", str(report),
                sys.executable, "-m", "iosim.calibrate.variants_target", str(spec_file),
                str(manifest)]

    t0 = time.monotonic()
    run = ncu.profile(spec, command, "iosim.calibrate.variants_target", metrics,
                      timeout_s=timeout_s, log=out / f"ncu-{name}.log")
    log(f"ncu {name}: {run.status} in {time.monotonic() - t0:.0f} s, {len(run.launches)} launches")
    counted: dict[str, Any] = {"status": run.status, "command": run.shown, "version": run.version,
                               "metrics": list(metrics), "points": []}
    if run.status != "ok":
        return counted
    try:
        counted["points"] = attach_launches(list(run.launches), list(run.manifest))
    except ValueError as exc:
        counted["status"] = f"failed: {exc}"
        counted["raw_launches"] = list(run.launches)
        counted["manifest"] = list(run.manifest)
    return counted


def attach_launches(launches: list[dict[str, Any]], manifest: list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Split ncu's launches (evict, kernels..., evict per manifest entry, in order) into points;
    each point's kernels get their own counters, and the closing evict's DRAM writes are the
    dirty lines the point left in L2 (calibrate/ncu.py's protocol)."""
    points = []
    groups = evict_groups(launches, [str(entry["count_id"]) for entry in manifest])
    for entry, (kernels, closing) in zip(manifest, groups, strict=True):
        points.append({**entry, "kernels": kernels,
                       "residue_write_bytes": closing["dram__bytes_write.sum"],
                       "dram_read_bytes": sum(k["dram__bytes_read.sum"] for k in kernels),
                       "dram_write_bytes": sum(k["dram__bytes_write.sum"] for k in kernels)
                       + closing["dram__bytes_write.sum"],
                       "l2_bytes": sum(k["lts__t_bytes.sum"] for k in kernels),
                       "kernel_time_s": sum(k["gpu__time_duration.sum"] for k in kernels) * 1e-9})
    return points
