"""Issue 14 on the H200: FlexAttention windows and documents, split-KV decoding (every split
count), paged KV (page size 1..256), cascade vs split-KV on shared-prefix batches.

    PYTHONPATH=$PWD python3 benchmarks/variants_h200.py OUTDIR [--quick] [--deadline-s S]

Phase 1 (this process): every point is checked against a float64 dense masked reference (a
wrong kernel is refused, not timed), then timed with triton.testing.do_bench (L2 flushed before
every repeat; median, p20, p80), the Triton decode kernels as CUDA-graph replays so that Python's
launch cost stays out. Phase 2: the same points again under ncu (`--profile-from-start off`,
cache and clock control none), each launched between two evict kernels (calibrate/ncu.py's
protocol): DRAM read/write and L2 bytes, kernel time and launch shape per kernel.
OUTDIR/variants-h200.json is the record (tests/data/h200-variants.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton

from iosim.calibrate import decode_microbench as MB
from iosim.calibrate import kernels_variants as KV
from iosim.calibrate import variants as VA
from iosim.calibrate import variants_mla_fp8 as MF
from iosim.calibrate import variants_points as VP
from iosim.calibrate import variants_sections as VS
from iosim.calibrate.env import device_info
from iosim.calibrate.variants_ncu import count_spec, key_blocks, run_ncu

SCHEMA = "iosim/h200-variants/1"
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
"""Without a GPU (a dry run under TRITON_INTERPRET=1) the script's logic runs on tiny points."""


class Clock:
    def __init__(self, deadline_s: float) -> None:
        self.start = time.monotonic()
        self.deadline_s = deadline_s

    def left(self) -> float:
        return self.deadline_s - (time.monotonic() - self.start)


def timed(built: VA.Built, warmup_ms: int, rep_ms: int) -> dict[str, float]:
    fn = built.launch
    if DEVICE == "cpu":
        start = time.perf_counter()
        fn()
        wall = time.perf_counter() - start
        return {"time_s": wall, "time_p20_s": wall, "time_p80_s": wall}
    if built.graphable:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        fn = graph.replay
    median, p20, p80 = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms,
                                               quantiles=[0.5, 0.2, 0.8])
    return {"time_s": median * 1e-3, "time_p20_s": p20 * 1e-3, "time_p80_s": p80 * 1e-3}


Row = dict[str, Any]


def each_point(points: list[VA.Point], clock: Clock, log: Any,
               measure: Callable[[VA.Point], tuple[Row, str]]) -> list[Row]:
    """One row per point: `measure(p)` gives the row's fields and a log line. Past the deadline a
    point is skipped; a failure is recorded and the run goes on; the GPU's cache is emptied
    after each point (what `measure` built is freed when it returns)."""
    rows = []
    for p in points:
        if clock.left() < 0:
            rows.append({**p, "status": "skipped: deadline"})
            continue
        try:
            fields, line = measure(p)
            rows.append({**p, "status": "ok", **fields})
            log(line)
        except Exception as exc:  # recorded, the run goes on
            rows.append({**p, "status": f"failed: {type(exc).__name__}: {exc}"[:400]})
            log(traceback.format_exc())
        torch.cuda.empty_cache()
    return rows


def run_flex(points: list[VA.Point], gen: torch.Generator, clock: Clock, log: Any) -> list[Row]:
    def measure(p: VA.Point) -> tuple[Row, str]:
        t0 = time.monotonic()
        built = VA.build_flex(p, gen, DEVICE)
        fields = {"rel_error": built.rel_error, **built.info, **timed(built, 25, 100),
                  "build_s": time.monotonic() - t0}
        return fields, (f"{p['id']}: {fields['time_s'] * 1e3:.3f} ms err {built.rel_error:.2e} "
                        f"blocks {built.info['partial_blocks']}+{built.info['full_blocks']}")
    return each_point(points, clock, log, measure)


def run_decode(points: list[VA.Point], gen: torch.Generator, clock: Clock, log: Any, *,
               all_splits: bool, page_sizes: list[int | None]) -> list[Row]:
    expanded = []
    for base in points:
        for page in page_sizes:
            p = {**base, "page_size": page}
            if page is not None or not all_splits:
                p["id"] = f"{base['id']}-p{page or 'contig'}"
            expanded.append(p)

    def measure(p: VA.Point) -> tuple[Row, str]:
        problem = VA.decode_problem(p, gen, DEVICE)
        top = key_blocks(p["n_kv"])
        counts = list(range(1, min(128, top) + 1)) if all_splits else VP.powers_of_two(top)
        sweep = []
        for s in counts:
            built = problem.build(s)
            sweep.append({"splits": s, "rel_error": built.rel_error, **timed(built, 5, 25)})
        best = min(sweep, key=lambda r: r["time_s"])
        return ({"block_n": problem.config.block_n, "block_r": problem.config.block_r,
                 "num_warps": problem.config.num_warps, "sweep": sweep,
                 "best_splits": best["splits"], "best_time_s": best["time_s"]},
                f"{p['id']}: best {best['splits']} splits {best['time_s'] * 1e6:.1f} us, "
                f"1 split {sweep[0]['time_s'] * 1e6:.1f} us")
    return each_point(expanded, clock, log, measure)


def run_cascade(points: list[VA.Point], gen: torch.Generator, clock: Clock, log: Any
                ) -> list[Row]:
    def measure(p: VA.Point) -> tuple[Row, str]:
        problem = VA.cascade_problem(p, gen, DEVICE)
        full = p["prefix_len"] + max(p["suffix_lens"])
        plain = []
        for s in VP.powers_of_two(key_blocks(full)):
            built = problem.build_splitkv(s)
            plain.append({"splits": s, "rel_error": built.rel_error, **timed(built, 5, 25)})
        casc = []
        for sp in VP.powers_of_two(key_blocks(p["prefix_len"]), 64):
            for ss in VP.powers_of_two(key_blocks(max(p["suffix_lens"])), 32):
                built = problem.build_cascade(sp, ss)
                casc.append({"prefix_splits": sp, "suffix_splits": ss,
                             "rel_error": built.rel_error, **timed(built, 5, 25)})
        bp = min(plain, key=lambda r: r["time_s"])
        bc = min(casc, key=lambda r: r["time_s"])
        winner = "cascade" if bc["time_s"] < bp["time_s"] else "splitkv"
        return ({"block_n": problem.config.block_n,
                 "prefix_block_r": problem.prefix_config.block_r, "splitkv": plain,
                 "cascade": casc, "best_splitkv": bp, "best_cascade": bc, "winner": winner},
                f"{p['id']}: split-KV {bp['time_s'] * 1e6:.1f} us ({bp['splits']}), cascade "
                f"{bc['time_s'] * 1e6:.1f} us ({bc['prefix_splits']}+{bc['suffix_splits']}): "
                f"{winner}")
    return each_point(points, clock, log, measure)


def run_mla(points: list[VA.Point], gen: torch.Generator, clock: Clock, log: Any) -> list[Row]:
    def measure(p: VA.Point) -> tuple[Row, str]:
        problem = MF.mla_problem(p, gen, DEVICE)
        sweep = []
        for s in VP.powers_of_two(triton.cdiv(p["n_kv"], problem.config.block_n), 64):
            built = problem.build(s)
            sweep.append({"splits": s, "rel_error": built.rel_error, **timed(built, 5, 25)})
        best = min(sweep, key=lambda r: r["time_s"])
        return ({"block_r": problem.config.block_r, "block_n": problem.config.block_n,
                 "num_warps": problem.config.num_warps, "sweep": sweep,
                 "best_splits": best["splits"], "best_time_s": best["time_s"]},
                f"{p['id']}: best {best['splits']} splits {best['time_s'] * 1e6:.1f} us")
    return each_point(points, clock, log, measure)


def run_fp8(points: list[VA.Point], gen: torch.Generator, clock: Clock, log: Any) -> list[Row]:
    def measure(p: VA.Point) -> tuple[Row, str]:
        built = MF.build_fp8(p, gen, DEVICE)
        fields = {"rel_error": built.rel_error, **built.info, **timed(built, 25, 100)}
        return fields, f"{p['id']}: {fields['time_s'] * 1e3:.3f} ms err {built.rel_error:.2e}"
    return each_point(points, clock, log, measure)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--deadline-s", type=float, default=300.0, help="phase 1's time budget")
    parser.add_argument("--budget-s", type=float, default=540.0, help="the whole run's budget")
    parser.add_argument("--ncu-timeout-s", type=float, default=150.0)
    parser.add_argument("--sections", default="decode,cascade,paged,flex",
                        help="sections to run, in this order")
    parser.add_argument("--count-also", default="",
                        help="RECORD:SECTION,... — also count (ncu) the best points of these "
                             "sections of an earlier record (their timings are not redone)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    logfile = open(args.out / "run.log", "a")  # noqa: SIM115 (open for the whole run)

    def log(msg: str) -> None:
        print(msg, flush=True)
        logfile.write(msg + "\n")
        logfile.flush()

    torch.manual_seed(14)
    gen = torch.Generator(device=DEVICE).manual_seed(14)
    clock = Clock(args.deadline_s)
    sets = VS.TINY if DEVICE == "cpu" else VS.QUICK if args.quick else VS.FULL
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "command": "PYTHONPATH=$PWD python3 benchmarks/variants_h200.py " + " ".join(argv),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": {**(device_info() if DEVICE == "cuda" else {"name": "cpu (dry run)"}),
                        "platform": platform.platform(),
                        "TORCHINDUCTOR": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")},
        "timing": "triton.testing.do_bench (L2 flushed before every repeat), quantiles 0.5/0.2/0.8;"
                  " Triton decode kernels as CUDA-graph replays; Flex as compiled calls",
        "decode_config": {"block_r": KV.DecodeConfig().block_r, "block_n": KV.DecodeConfig().block_n,
                          "num_warps": KV.DecodeConfig().num_warps,
                          "num_stages": KV.DecodeConfig().num_stages,
                          "prefix_block_r": 64},
        "flex": [], "decode": [], "paged": [], "cascade": [], "mla": [], "fp8": [], "repeat": [],
        "flex2": [], "decode_judge": [], "cascade_judge": [],
        "decode_fresh": [], "cascade_fresh": [], "fp8_e5m2": [], "microbench": {},
        "cascade_fresh2": [], "decode_fresh2": [], "cascade_fresh3": [], "mla_fresh": [],
        "fp8_fresh": [], "fp8_block": [], "fp8_fresh2": [], "mla_fresh2": [],
        "mla_fresh3": [], "cascade_fresh4": [],
        "decode_fresh3": [], "cascade_fresh5": [], "mla_fresh4": [], "fp8_fresh3": [],
        "cascade_fresh6": [], "cascade_fresh7": [], "cascade_fresh8": [],
        "cascade_fresh9": [],
    }
    path = args.out / "variants-h200.json"
    sections = {
        "decode": lambda: run_decode(sets["decode"], gen, clock, log, all_splits=True,
                                     page_sizes=[None]),
        "cascade": lambda: run_cascade(sets["cascade"], gen, clock, log),
        "paged": lambda: run_decode(sets["paged"], gen, clock, log, all_splits=False,
                                    page_sizes=VP.PAGE_SIZES),
        "flex": lambda: run_flex(sets["flex"], gen, clock, log),
        "flex2": lambda: run_flex(sets["flex2"], gen, clock, log),
        "mla": lambda: run_mla(sets["mla"], gen, clock, log),
        "fp8": lambda: run_fp8(sets["fp8"], gen, clock, log),
        "repeat": lambda: [{**r, "id": r["id"] + "-repeat"} for r in run_decode(
            sets["repeat"], gen, clock, log, all_splits=True, page_sizes=[None])],
        # the held-out judgement: timed exactly as "decode" and "cascade" are
        "decode_judge": lambda: run_decode(sets["decode_judge"], gen, clock, log, all_splits=True,
                                           page_sizes=[None]),
        "cascade_judge": lambda: run_cascade(sets["cascade_judge"], gen, clock, log),
        # the fresh judgement of the decoding time model (L2 roof, launch cost) and --splits auto
        "microbench": lambda: run_microbench(log),
        "decode_fresh": lambda: run_decode(sets["decode_fresh"], gen, clock, log, all_splits=True,
                                           page_sizes=[None]),
        "cascade_fresh": lambda: run_cascade(sets["cascade_fresh"], gen, clock, log),
        "fp8_e5m2": lambda: run_fp8(sets["fp8_e5m2"], gen, clock, log),
        "cascade_fresh2": lambda: run_cascade(sets["cascade_fresh2"], gen, clock, log),
        # var4's fresh judgement of the chain term (decode_time.py), frozen at tag var4-frozen
        "decode_fresh2": lambda: run_decode(sets["decode_fresh2"], gen, clock, log,
                                            all_splits=True, page_sizes=[None]),
        "cascade_fresh3": lambda: run_cascade(sets["cascade_fresh3"], gen, clock, log),
        "mla_fresh": lambda: run_mla(sets["mla_fresh"], gen, clock, log),
        "fp8_fresh": lambda: run_fp8(sets["fp8_fresh"], gen, clock, log),
        # FA3 §3.3 block quantization (kernels_mla_fp8.attention_block_scaled)
        "fp8_block": lambda: run_fp8(sets["fp8_block"], gen, clock, log),
        # fp8mla's fresh judgement of the FP8 matmul rate, frozen at tag fp8mla-frozen
        "fp8_fresh2": lambda: run_fp8(sets["fp8_fresh2"], gen, clock, log),
        "mla_fresh2": lambda: run_mla(sets["mla_fresh2"], gen, clock, log),
        # var7's fresh judgement of estimates/launch_order_dram.py, frozen at tag var7-frozen
        "mla_fresh3": lambda: run_mla(sets["mla_fresh3"], gen, clock, log),
        "cascade_fresh4": lambda: run_cascade(sets["cascade_fresh4"], gen, clock, log),
        # var9's fresh judgement of the same rules with the ncu protocol's residue in the judge,
        # frozen at tag var9-frozen (decode at powers of two: the DRAM, not the pick, is judged)
        "decode_fresh3": lambda: run_decode(sets["decode_fresh3"], gen, clock, log,
                                            all_splits=False, page_sizes=[None]),
        "cascade_fresh5": lambda: run_cascade(sets["cascade_fresh5"], gen, clock, log),
        "mla_fresh4": lambda: run_mla(sets["mla_fresh4"], gen, clock, log),
        # var9's fresh judgement of FP8's per-mask key-block cost, frozen at var9-fp8-frozen
        "fp8_fresh3": lambda: run_fp8(sets["fp8_fresh3"], gen, clock, log),
        # var10's fresh judgement of the prefix re-read by later waves (estimates/
        # prefix_waves.py), frozen at tag var10-frozen
        "cascade_fresh6": lambda: run_cascade(sets["cascade_fresh6"], gen, clock, log),
        # var11's fresh judgement of prefix_waves.FAR_COPY_SHARE, frozen at tag var11-frozen
        "cascade_fresh7": lambda: run_cascade(sets["cascade_fresh7"], gen, clock, log),
        # var12's fresh judgement of the paged split kernel's compiled occupancy in the wave
        # rules (analysis/decode_time.py MEASURED_TILES), frozen at tag var12-frozen
        "cascade_fresh8": lambda: run_cascade(sets["cascade_fresh8"], gen, clock, log),
        # var13's fresh judgement of the wave rule over MHA's unpacked grid (estimates/
        # prefix_waves.py prefix_grid), frozen at tag var13-frozen
        "cascade_fresh9": lambda: run_cascade(sets["cascade_fresh9"], gen, clock, log),
    }
    # in the order given: the deadline skips the points of the last sections
    for name in args.sections.split(","):
        if name in sections:
            record[name] = sections[name]()
            path.write_text(json.dumps(record, indent=1))
    record["phase1_s"] = time.monotonic() - clock.start
    log(f"phase 1 done in {record['phase1_s']:.0f} s")
    torch.cuda.empty_cache()
    earlier = earlier_sections(args.count_also)
    spec = count_spec({**record, **{k: record.get(k, []) + v for k, v in earlier.items()}})
    decode_spec = [s_ for s_ in spec if s_["point"]["kind"] != "flex"]  # our Triton kernels
    flex_spec = [s_ for s_ in spec if s_["point"]["kind"] == "flex"]
    record["counters"] = {}
    total = Clock(args.budget_s)
    total.start = clock.start
    for name, part in (("decode", decode_spec), ("flex", flex_spec)):
        if not part:
            continue
        if DEVICE != "cuda":
            record["counters"][name] = {"status": "dry run: no ncu", "spec": part, "points": []}
            continue
        timeout = max(30.0, total.left() - 20.0) if name == "flex" else max(
            30.0, min(args.ncu_timeout_s, 0.6 * total.left()))
        record["counters"][name] = run_ncu(part, args.out, timeout, log, name)
        path.write_text(json.dumps(record, indent=1))
    path.write_text(json.dumps(record, indent=1))
    summary(record, log)
    failed = [r["id"] for name in args.sections.split(",") for r in record.get(name, [])
              if str(r.get("status", "")).startswith("failed")]
    if DEVICE != "cuda" and failed:  # a dry run checks the script's logic: a failure is an error
        log(f"dry run: {len(failed)} point(s) failed: {', '.join(failed)}")
        return 1
    return 0


def run_microbench(log: Any) -> dict[str, Any]:
    """The launch cost and the L2 read bandwidth (calibrate/decode_microbench.py)."""
    t0 = time.monotonic()
    result = MB.measure(DEVICE)
    for r in result["launch"]:
        log(f"launch grid {r['grid']}: {r['per_launch_s'] * 1e6:.2f} us per launch")
    for r in result["l2"]:
        if "bytes_per_s" in r:
            log(f"L2 {r['buffer_mib']} MiB, {r['programs']} programs x {r['reads']} reads, "
                f"{r['streams']} streams, {r['num_warps']} warps: "
                f"{r['bytes_per_s'] / 1e12:.2f} TB/s (check {r['check_ok']})")
    return {**result, "seconds": time.monotonic() - t0}


def earlier_sections(spec: str) -> dict[str, list[Row]]:
    """The ok rows of RECORD:SECTION,... (their best points are counted again, not timed)."""
    if not spec:
        return {}
    path, _, names = spec.partition(":")
    old = json.loads(Path(path).read_text())
    return {n: [r for r in old.get(n, []) if r.get("status") == "ok"] for n in names.split(",")}


def summary(record: dict[str, Any], log: Any) -> None:
    for r in record["flex"] + record["flex2"]:
        log(f"flex {r['id']:24s} {r['status'][:40]:40s} {r.get('time_s', 0) * 1e3:9.3f} ms")
    for r in (record["decode"] + record["paged"] + record["decode_judge"] + record["decode_fresh"]
              + record["decode_fresh2"] + record["decode_fresh3"]):
        log(f"dec  {r['id']:24s} {r['status'][:40]:40s} best {r.get('best_splits')} "
            f"{r.get('best_time_s', 0) * 1e6:9.1f} us")
    for r in (record["cascade"] + record["cascade_judge"] + record["cascade_fresh"]
              + record["cascade_fresh2"] + record["cascade_fresh3"] + record["cascade_fresh4"]
              + record["cascade_fresh5"] + record["cascade_fresh6"]
              + record["cascade_fresh7"] + record["cascade_fresh8"]
              + record["cascade_fresh9"]):
        log(f"cas  {r['id']:24s} {r['status'][:40]:40s} {r.get('winner')}")
    for r in (record["mla"] + record["repeat"] + record["mla_fresh"] + record["mla_fresh2"]
              + record["mla_fresh3"] + record["mla_fresh4"]):
        log(f"mla  {r['id']:24s} {r['status'][:40]:40s} best {r.get('best_splits')} "
            f"{r.get('best_time_s', 0) * 1e6:9.1f} us")
    for r in (record["fp8"] + record["fp8_e5m2"] + record["fp8_fresh"] + record["fp8_block"]
              + record["fp8_fresh2"] + record["fp8_fresh3"]):
        log(f"fp8  {r['id']:24s} {r['status'][:40]:40s} {r.get('time_s', 0) * 1e3:9.3f} ms")
    for name, c in record["counters"].items():
        log(f"ncu {name} {c['status']}: {len(c['points'])} points")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
