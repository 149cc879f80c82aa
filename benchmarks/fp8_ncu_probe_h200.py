"""Why the FP8 non-causal kernel runs +18 % over its model (issue 14; seen shapes only): Nsight
Compute's pipe, issue and stall sections on the FP8 (e4m3) and fp16 fused forward
(calibrate/kernels_mla_fp8.attention_scaled, 128 × 64 tiles) at one mean program length — N 4096
non-causal and N 8192 causal (64 key blocks a program on average), 16 heads, d 128 — so that
what differs between the FP8 non-causal and causal programs is not their length.

    PYTHONPATH=$PWD python3 benchmarks/fp8_ncu_probe_h200.py $OUT/fp8-probe    # device: ncu
    python3 benchmarks/fp8_ncu_probe_h200.py OUT --target [--tiny]            # what ncu runs

Writes OUT/details.csv and OUT/raw.csv (ncu --page details / raw of the sections below),
OUT/pipes.csv (every sm__inst_executed_pipe_* and sm__pipe_*_cycles_active metric, a second
ncu run), OUT/manifest.json (the launches in order, each point's check against float64) and
OUT/probe.log. Read by benchmarks/fp8_ncu_probe_report.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

SECTIONS = ("SpeedOfLight", "ComputeWorkloadAnalysis", "InstructionStats", "WarpStateStats",
            "SchedulerStats", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis")
PIPE_METRICS = ("regex:^sm__inst_executed_pipe_.*\\.sum$,"
                "regex:^sm__pipe_.*_cycles_active\\.avg\\.pct_of_peak_sustained_active$,"
                "regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio$,"
                "gpu__time_duration.sum")
KERNEL = "regex:_iosim_attn_scaled"


def points(tiny: bool) -> list[dict]:
    from iosim.calibrate.variants_points import fp8_point
    shapes = [("fp8_e4m3", 4096, False), ("fp8_e4m3", 8192, True), ("fp16", 4096, False),
              ("fp16", 8192, True)]
    out = []
    for dtype, n, causal in shapes:
        p = fp8_point(f"probe-{dtype}-{n}-{'causal' if causal else 'full'}", n, causal, dtype)
        if tiny:
            p = {**p, "n": 128, "n_kv": 128, "heads": 2, "d": 32}
        out.append(p)
    return out


def target(out: Path, tiny: bool) -> int:
    import torch

    from iosim.calibrate import kernels_mla_fp8 as MF
    from iosim.calibrate import variants_mla_fp8 as VM
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device).manual_seed(7)
    manifest = []
    for p in points(tiny):
        # one launch of the kernel, then the check (the interpreter's dry run: small tiles, as
        # tests/test_kernels_mla_fp8.py; the device: the measured kernel's 128 × 64)
        row = {"id": p["id"], "dtype": p["dtype"], "n": p["n"], "causal": p["causal"]}
        try:
            built = VM.build_fp8(p, gen, device, MF.ScaledConfig(32, 16, 4, 1) if tiny else None)
            row.update(rel_error=built.rel_error, kernels=list(built.kernels))
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        manifest.append(row)
        if device == "cuda":
            torch.cuda.synchronize()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


def run(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "probe.log", "a")  # noqa: SIM115 (the whole run)
    from iosim.calibrate.ncu import ncu_path
    ncu = ncu_path() or shutil.which("ncu") or "ncu"
    me = [sys.executable, __file__, str(out), "--target"]
    base = [ncu, "--clock-control", "none", "--kernel-name", KERNEL]
    t0 = time.monotonic()
    report = out / "sections"
    steps = [
        base + [a for s in SECTIONS for a in ("--section", s)]
        + ["--force-overwrite", "--export", str(report)] + me,
        [ncu, "--import", f"{report}.ncu-rep", "--csv", "--page", "details"],
        [ncu, "--import", f"{report}.ncu-rep", "--csv", "--page", "raw"],
        [*base, "--metrics", PIPE_METRICS, "--csv", "--page", "raw", *me],
    ]
    names = [None, "details.csv", "raw.csv", "pipes.csv"]
    for cmd, name in zip(steps, names, strict=True):
        log.write(f"$ {' '.join(cmd)}\n")
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=70, check=False)
        except (subprocess.TimeoutExpired, OSError) as exc:
            log.write(f"{type(exc).__name__}: {exc}\n")
            continue
        log.write(f"exit {done.returncode} after {time.monotonic() - t0:.0f} s\n"
                  + done.stderr[-3000:] + "\n")
        if name is not None:
            (out / name).write_text(done.stdout)
        elif done.returncode != 0:
            log.write(done.stdout[-3000:] + "\n")
        log.flush()
    print((out / "probe.log").read_text()[-4000:])
    return 0


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    if "--target" in argv:
        out.mkdir(parents=True, exist_ok=True)
        return target(out, "--tiny" in argv)
    return run(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
