"""MLA prefill (qk head dim 192, v head dim 128) on the H200: our Triton kernel and torch SDPA's
backends that take d_v ≠ d, timed and counted.

    PYTHONPATH=$PWD python3 benchmarks/mla_prefill_h200.py OUTDIR --set fit|fresh [--deadline-s S]

First which SDPA backends run d = 192, d_v = 128 at all (each tried alone on a small shape; a
refusal's first line is recorded). Phase 1 (this process): every point of the set
(calibrate/mla_prefill_points.py) is built on fresh data and checked against torch fp32 (a wrong
output is refused, not timed), then timed with triton.testing.do_bench (L2 flushed before every
repeat; median, p20, p80; the Triton kernel as a CUDA-graph replay, SDPA as eager calls).
Phase 2: the same points again under ncu (calibrate/mla_prefill_target.py; evict, launch, evict,
calibrate/ncu.py's protocol): DRAM read/write, L2 bytes, kernel time and launch shape per kernel.
OUTDIR/mla-prefill-h200.json is the record (tests/data/h200-mla-prefill.json).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import torch
import variants_h200 as VH

from iosim.calibrate import mla_prefill_points as PTS
from iosim.calibrate import variants_mla_prefill as VP
from iosim.calibrate.env import device_info
from iosim.calibrate.variants_ncu import METRICS, attach_launches

SCHEMA = "iosim/h200-mla-prefill/1"
DEVICE = VH.DEVICE


def probe_sdpa(gen: torch.Generator) -> dict[str, str]:
    """Each SDPA backend alone on batch 1, 2 heads, n 256, d 192, d_v 128, fp16: "ok" (and its
    error against fp32) or the first line of its refusal."""
    out: dict[str, str] = {}
    for impl in VP.SDPA_BACKENDS:
        point = VP.mla_prefill_point(f"probe-{impl}", 1, 256, 2, False, "fp16", impl)
        try:
            built = VP.build(point, gen, DEVICE)
            out[impl] = f"ok (error {built.rel_error:.2e})"
        except Exception as exc:  # the refusal is the finding
            out[impl] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--set", default="fit", help="fit, fresh or fit,fresh")
    parser.add_argument("--deadline-s", type=float, default=120.0, help="phase 1's time budget")
    parser.add_argument("--ncu-timeout-s", type=float, default=150.0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    logfile = open(args.out / "run.log", "a")  # noqa: SIM115 (open for the whole run)

    def log(msg: str) -> None:
        print(msg, flush=True)
        logfile.write(msg + "\n")
        logfile.flush()

    torch.manual_seed(15)
    gen = torch.Generator(device=DEVICE).manual_seed(15)
    clock = VH.Clock(args.deadline_s)
    env = device_info() if DEVICE == "cuda" else {"name": "cpu (dry run)"}
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "command": "PYTHONPATH=$PWD python3 benchmarks/mla_prefill_h200.py " + " ".join(argv),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": {**env, "platform": platform.platform(),
                        "cudnn": torch.backends.cudnn.version() if DEVICE == "cuda" else None},
        "timing": "triton.testing.do_bench (L2 flushed before every repeat), quantiles "
                  "0.5/0.2/0.8; the Triton kernel as CUDA-graph replays, SDPA eager",
        "sdpa_backends": probe_sdpa(gen) if DEVICE == "cuda" else {},
    }
    log(f"sdpa backends: {record['sdpa_backends']}")
    path = args.out / "mla-prefill-h200.json"

    def measure(p: VP.Point) -> tuple[VH.Row, str]:
        built = VP.build(p, gen, DEVICE)
        fields = {"rel_error": built.rel_error, **built.info, **VH.timed(built, 25, 100)}
        return fields, f"{p['id']}: {fields['time_s'] * 1e3:.3f} ms err {built.rel_error:.2e}"

    names = args.set.split(",")
    for name in names:
        points = PTS.TINY if DEVICE == "cpu" else PTS.SETS[name]
        record[name] = VH.each_point(points, clock, log, measure)
        path.write_text(json.dumps(record, indent=1))
    record["phase1_s"] = time.monotonic() - clock.start
    log(f"phase 1 done in {record['phase1_s']:.0f} s")
    spec = [{"count_id": r["id"], "point": {k: r[k] for k in (
        "id", "kind", "impl", "batch", "n", "n_kv", "heads", "kv_heads", "d", "d_v", "causal",
        "dtype")}} for name in names for r in record[name] if r["status"] == "ok"]
    if DEVICE != "cuda":
        record["counters"] = {"status": "dry run: no ncu", "spec": spec, "points": []}
    else:
        record["counters"] = run_ncu(spec, args.out, args.ncu_timeout_s, log)
    path.write_text(json.dumps(record, indent=1))
    for name in names:
        for r in record[name]:
            log(f"{r['id']:34s} {r['status'][:50]:50s} {r.get('time_s', 0) * 1e3:9.3f} ms")
    log(f"ncu {record['counters']['status']}: {len(record['counters']['points'])} points")
    return 0


def run_ncu(spec: list[dict[str, Any]], out: Path, timeout_s: float, log: Any) -> dict[str, Any]:
    """One ncu run of mla_prefill_target over `spec`: its counters per point, or why not."""
    from iosim.calibrate import ncu

    target = "iosim.calibrate.mla_prefill_target"

    def command(ncu_bin: str, report: Path, spec_file: Path, manifest: Path) -> list[str]:
        return [ncu_bin, "--clock-control", "none", "--cache-control", "none",
                "--profile-from-start", "off", "--metrics", ",".join(METRICS),
                "--force-overwrite", "--export", str(report),
                sys.executable, "-m", target, str(spec_file), str(manifest)]

    t0 = time.monotonic()
    run = ncu.profile(spec, command, target, METRICS, timeout_s=timeout_s,
                      log=out / "ncu-mla-prefill.log")
    log(f"ncu: {run.status} in {time.monotonic() - t0:.0f} s, {len(run.launches)} launches")
    counted: dict[str, Any] = {"status": run.status, "command": run.shown, "version": run.version,
                               "metrics": list(METRICS), "points": []}
    if run.status == "ok":
        try:
            counted["points"] = attach_launches(list(run.launches), list(run.manifest))
        except ValueError as exc:
            counted["status"] = f"failed: {exc}"
            counted["raw_launches"] = list(run.launches)
            counted["manifest"] = list(run.manifest)
    return counted


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
