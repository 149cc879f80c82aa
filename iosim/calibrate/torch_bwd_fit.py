"""SDPA's flash backward and eager PyTorch's backward, measured, against iosim: pure, no GPU.

    python -m iosim.calibrate.torch_bwd_fit [RECORD ...] [--out REPORT.md]

The records (benchmarks/backward_h200.py; default RECORDS) hold, per point, the backward's time
(do_bench) and, per kernel, ncu's DRAM bytes in launch order (one evict before, one after).
iosim's side of a point is `iosim compare --impl sdpa-flash` (FA2's CUDA kernels: the layout
copies, dot_do_o, the K/V-outer kernel with dQ accumulated by atomics, convert_dQ, the GQA sum)
or `--impl torch-naive` (Alg. 3's kernels as eager PyTorch launches them), pass bwd:

DRAM. The closed-form L2 estimate of every kernel (estimates/l2.py), with the dirty lines a
kernel leaves in L2 moved to the next one as the Triton backward's comparison does
(backward_fit.handover, DIRTY_SHARE fitted on the Triton record's isolated runs, not on these).
No constant is fitted here: every point is judged. Launches are matched to the loop nest's
kernels by position (the two reduce kernels of the GQA sum count as one). That side (the
records, iosim's model of each point, the per-kernel bytes) is torch_bwd_dram.py; this module
judges it and holds the time model.

Time. Each kernel's roofline time on the measured H200 (HBM bandwidth, matmul peak, vector
rate of configs/gpus/h200.yaml's `measured:`), its memory side at the DRAM estimate; the main
kernel of FA2 is scheduled program by program (estimates/schedule.py) with an efficiency and a
per-program overhead fitted on the points marked `fit` (backward-h200-torch.json) and judged
on every other point of both records; the other kernels at the fitted elementwise efficiency.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import median
from typing import Any

from iosim.analysis.compare import compare
from iosim.analysis.impl_kernels import impl_calibration
from iosim.calibrate import CalibrationError
from iosim.calibrate import eager_unaligned as U
from iosim.calibrate.backward_fit import DIRTY_SHARE, workload_of
from iosim.calibrate.torch_bwd_dram import (
    FRESH,
    FRESH2,
    FRESH3,
    FRESH4,
    FRESH5,
    FRESH6,
    FRESH7,
    FRESH8,
    FRESH9,
    FRESH10,
    FRESH11,
    FRESH12,
    IMPLS,
    RECORDS,
    KernelBytes,
    dram_comparison,
    forget_models,
    items,
    launched,
    load,
    model,
)
from iosim.errors import IosimError
from iosim.estimates import backward_host_floor as BF
from iosim.estimates import eager_backward as EB
from iosim.estimates.eager_backward import MASK_EFFICIENCY
from iosim.inputs.hardware import Hardware
from iosim.inputs.impl_calibration import with_impl_calibration
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

BIG = 50e6
"""Kernels of at least this many DRAM bytes are judged against ±10 %; smaller ones (a few MB,
where the dirty lines one kernel leaves to the next are most of the count) are reported."""

# ---------------------------------------------------------------------------------------------
# time


class TimeModel(Record):
    """Fitted constants of one implementation's backward time (none is a hardware fact)."""

    efficiency: float
    """sdpa: FA2's main kernel's share of the measured matmul/vector rates (schedule.py);
    eager: the cuBLAS matmuls' share of the measured matmul peak."""
    overhead_s: float
    """sdpa: per program of the main kernel (prologue, epilogue: schedule.py); eager: per
    kernel launch."""
    call_s: float
    """Host time per backward call (autograd and the launches from Python), added once."""
    memory_efficiency: float = 1.0
    """eager: its kernels' share of the measured bandwidth (sdpa: the calibration's
    elementwise efficiency)."""


def _roofs(hardware: Hardware, dtype: str) -> tuple[float, float, float]:
    """(bandwidth, matmul peak, vector rate) of the measured profile."""
    m = hardware.measured
    if m is None or not m.hbm_bandwidth_bytes_per_s or not m.vector_flops_per_s:
        raise CalibrationError(f"{hardware.path} has no measured bandwidth and vector rate; "
                               "the backward's time needs the calibrated GPU YAML")
    return m.hbm_bandwidth_bytes_per_s, m.peak_flops_per_s[dtype], m.vector_flops_per_s


_SDPA_KERNELS: dict[tuple[Workload, str, float, float], tuple[float, list[str]]] = {}


def predict_time(p: dict[str, Any], what: str, hardware: Hardware, tm: TimeModel, *,
                 host_floor: bool = True) -> float:
    """The backward's time. sdpa: `iosim compare --impl sdpa-flash --pass bwd --profile
    measured` itself, with `tm` as its backward calibration (the main kernel scheduled program
    by program, the others at the DRAM estimate over the measured bandwidth and the profile's
    memory efficiency). eager: estimates/eager_backward.py's rule, the one `compare --impl
    torch-naive --pass bwd --profile measured` times with (its fit `tm`, the YAML's
    measured.impls.torch-naive.backward): each kernel at max(its DRAM estimate over the
    bandwidth, its compute), plus a fixed time per kernel and one per call. Then, with
    `host_floor`, no less than the implementation's backward host floor
    (estimates/backward_host_floor.py, the one function compare applies too: eager's is
    autograd's dispatch of its launches, bwd9; SDPA's its flash backward's, bwd12). `fit_time`
    fits `tm` without the floor, as SDPA_TIME and EAGER_TIME were."""
    w = workload_of(p)
    if what == "sdpa":
        key = (w, hardware.path, tm.efficiency, tm.overhead_s)
        if key not in _SDPA_KERNELS:
            impl = get_implementation(IMPLS[what])
            shipped = impl_calibration(impl, hardware)
            trial = with_impl_calibration(hardware, impl.name, replace(shipped, backward={
                **shipped.backward,  # its `memory`, if any
                "efficiency": tm.efficiency, "program_overhead_s": tm.overhead_s,
                "call_overhead_s": 0.0}, backward_source="trial"))
            a = compare(w, trial, impl=impl, profile="measured").algorithms[1]
            _SDPA_KERNELS[key] = a.time_s, [k.name for k in a.kernels]
        kernels_s, names = _SDPA_KERNELS[key]
        total = kernels_s + tm.call_s
        return BF.floored(IMPLS[what], total, names) if host_floor else total
    a = model(w, what, hardware)
    assert a.dram is not None and hardware.sm_count is not None
    bandwidth, matmul_peak, vector = _roofs(hardware, p["dtype"])
    fit = {"efficiency": tm.efficiency, "memory": tm.memory_efficiency,
           "program_overhead_s": tm.overhead_s}
    kernels = launched(w, what, a)
    total = sum(EB.kernel_time_s(kernel.name, kernel.kind, a.dram.of_kernel(kernel.name).bytes,
                                 est.matmul_flops, est.elementwise_flops, w, bandwidth=bandwidth,
                                 matmul_peak=matmul_peak, vector_rate=vector, fit=fit)
                for kernel, est in zip(kernels, a.kernels, strict=True)) + tm.call_s
    if host_floor:
        return BF.floored(IMPLS[what], total, [k.name for k in kernels])
    return total


def fit_unaligned(records: list[dict[str, Any]], hardware: Hardware
                  ) -> tuple[dict[str, float], float, dict[str, float]]:
    """(eager_unaligned's FALLBACK_GEMM_EFFICIENCY, SOFTMAX_UNALIGNED_EFFICIENCY,
    FALLBACK_GEMM_BYTES_PER_S) from
    the ncu kernel times of the UNALIGNED_FIT eager runs: each GEMM's FLOPs over (its time ×
    the matmul peak) and its N×N_kv operand's bytes over its time, the softmax backward's DRAM
    bytes over (its time × the bandwidth); medians."""
    gemm: dict[str, list[float]] = {"odd": [], "even": []}
    rate: dict[str, list[float]] = {"odd": [], "even": []}
    softmax: list[float] = []
    for p, what, segment in items(records):
        if what != "eager" or p["id"] not in U.UNALIGNED_FIT:
            continue
        w = workload_of(p)
        a = model(w, what, hardware)
        bandwidth, peak, _ = _roofs(hardware, p["dtype"])
        kind = U.unaligned_class(w.n_kv)
        assert kind is not None
        for est, k in zip(a.kernels, segment["kernels"], strict=False):
            if est.matmul_flops:
                gemm[kind].append(est.matmul_flops / (k["time_s"] * peak))
                rate[kind].append(U.square_bytes(w) / k["time_s"])
            elif est.name == "bwd_softmax":
                softmax.append((k["dram_read_bytes"] + k["dram_write_bytes"])
                               / (k["time_s"] * bandwidth))
    if not softmax or not all(gemm.values()):
        raise CalibrationError(f"the records lack eager runs of {', '.join(U.UNALIGNED_FIT)}")
    return ({kind: float(median(v)) for kind, v in gemm.items()}, float(median(softmax)),
            {kind: float(median(v)) for kind, v in rate.items()})


def fit_mask_efficiency(records: list[dict[str, Any]], hardware: Hardware) -> float:
    """Median over the `fit` causal eager runs of the mask kernel's ncu DRAM bytes per ncu
    second, over the measured bandwidth (the mask kernel is the launch after the softmax's)."""
    bandwidth = _roofs(hardware, "fp16")[0]
    rates = []
    for p, what, segment in items(records):
        if what == "eager" and p["causal"] and p.get("split") == "fit":
            k = segment["kernels"][4]
            rates.append((k["dram_read_bytes"] + k["dram_write_bytes"]) / k["time_s"] / bandwidth)
    if not rates:
        raise CalibrationError("no causal eager runs marked fit in the records")
    return float(median(rates))


def timed(records: list[dict[str, Any]], what: str) -> list[tuple[dict[str, Any], str]]:
    """(point, split) of every point with a time of `what`: the torch record's own split, the
    Triton record's points (not chosen for this fit) all judged."""
    key = f"{what}_s"
    return [(p, p.get("split", "judge")) for r in records for p in r["points"] if key in p]


def fit_loss(records: list[dict[str, Any]], what: str, hardware: Hardware,
             tm: TimeModel) -> float:
    """Σ (relative error)² over the `fit` points."""
    fit = [p for p, split in timed(records, what) if split == "fit"]
    if not fit:
        raise CalibrationError(f"no {what} points marked fit in the records")
    return float(sum(((predict_time(p, what, hardware, tm, host_floor=False) - p[f"{what}_s"])
                      / p[f"{what}_s"]) ** 2 for p in fit))


def fit_time(records: list[dict[str, Any]], what: str, hardware: Hardware) -> TimeModel:
    """Least squares of the relative error over the `fit` points, on a grid."""

    def loss(tm: TimeModel) -> float:
        return fit_loss(records, what, hardware, tm)

    if what == "sdpa":  # each (efficiency, overhead) is one compare per point, cached
        grid = [TimeModel(e / 100, o * 1e-6, c * 1e-6) for e in range(40, 71, 5)
                for o in range(0, 16, 5) for c in range(0, 61, 10)]
    else:
        grid = [TimeModel(e / 100, o * 1e-6, c * 1e-6, m / 100) for e in range(40, 101, 10)
                for o in range(0, 13, 4) for c in range(0, 61, 20) for m in range(50, 101, 10)]
    best = min(grid, key=loss)
    fine = [TimeModel(best.efficiency + de / 100, max(0.0, best.overhead_s + do * 1e-6),
                      max(0.0, best.call_s + dc * 1e-6), best.memory_efficiency + dm / 100)
            for de in range(-4, 5, 2) for do in range(-2, 3, 2 if what == "sdpa" else 1)
            for dc in range(-6, 7, 3) for dm in ((-4, -2, 0, 2, 4) if what == "eager" else (0,))]
    return min(fine, key=loss)


# ---------------------------------------------------------------------------------------------
# report

SDPA_TIME = TimeModel(0.52, 17e-6, 20e-6)
"""`fit_time` on the `fit` points of backward-h200-torch.json, as shipped in
configs/gpus/h200.yaml (measured.impls.sdpa-flash.backward); tests hold the two equal."""
EAGER_TIME = TimeModel(1.04, 12e-6, 46e-6, 1.04)
"""`fit_time` on the `fit` points for eager (this report's model only; compare keeps the
torch-naive profile's forward fit), fitted with the mask and scale passes in place; under
bwd8's out-of-place rule the fit's optimum moves (efficiency 0.94, 8 µs per kernel, 66 µs per
call: the report says so) and these are kept, as frozen at bwd8-frozen and judged on fresh8.
Efficiencies above 1: the matmuls are memory-bound at these shapes, and elementwise kernels
that read two matrices and write one pass 4.4 TB/s, above the copy bandwidth the profile
measured (4.27)."""
LAUNCH_BOUND_S = 2e-4
"""Below this a backward call is mostly host time (autograd, 5-10 launches from Python): such
points are shown, not judged (as for the Triton backward, backward_fit.LAUNCH_BOUND_S)."""


def per_backward(rows: list[KernelBytes]) -> dict[tuple[int, str], float]:
    """Per ncu run (its index, its point): the error of all its kernels' bytes together."""
    sums: dict[tuple[int, str], list[float]] = {}
    for r in rows:
        pair = sums.setdefault((r.run, r.point), [0.0, 0.0])
        pair[0] += r.estimate
        pair[1] += r.measured
    return {key: (e - m) / m for key, (e, m) in sums.items()}


def within(rows: list[KernelBytes], bound: float = 0.10) -> tuple[int, int]:
    """(kernels of ≥ BIG bytes within ±bound, kernels of ≥ BIG bytes)."""
    big = [r for r in rows if r.measured >= BIG]
    return sum(abs(r.error) <= bound for r in big), len(big)


def sensitivity(records: list[dict[str, Any]], hardware: Hardware) -> list[str]:
    """Kernels of ≥ 50 MB within ±10 % as SHARED_COPIES and DIRTY_SHARE move."""
    from iosim.estimates import l2_model

    lines = ["| SHARED_COPIES | ACCUMULATOR_COPIES | DIRTY_SHARE | SDPA kernels within ±10 % | "
             "eager kernels within ±10 % |", "|---:|---:|---:|---:|---:|"]
    shipped = l2_model.SHARED_COPIES, l2_model.ACCUMULATOR_COPIES
    try:
        for copies, acc, share in ((1, 1, DIRTY_SHARE), (1.5, 1, DIRTY_SHARE),
                                   (2, 1, DIRTY_SHARE), (2.5, 1, DIRTY_SHARE),
                                   (3, 1, DIRTY_SHARE), (2, 2, DIRTY_SHARE), (2, 1, 0.5),
                                   (2, 1, 0.9)):
            l2_model.SHARED_COPIES, l2_model.ACCUMULATOR_COPIES = copies, acc  # type: ignore[assignment]
            forget_models()
            rows = dram_comparison(records, hardware, share)
            cells = []
            for what in IMPLS:
                ok, n = within([r for r in rows if r.what == what])
                cells.append(f"{ok} / {n}")
            lines.append(f"| {copies:g} | {acc:g} | {share:g} | {cells[0]} | {cells[1]} |")
    finally:
        l2_model.SHARED_COPIES, l2_model.ACCUMULATOR_COPIES = shipped
        forget_models()
    return lines


def report(records: list[dict[str, Any]], hardware: Hardware) -> str:
    """The Markdown section of reports/backward-h200.md on SDPA's and eager's backward."""
    rows = dram_comparison(records, hardware)
    lines = ["## SDPA's flash backward and eager PyTorch's backward: record vs iosim", "",
             "Records: " + "; ".join(f"`{r.get('command', '')}` ({Path(r['path']).name}, torch "
                                     f"{r.get('torch')})" for r in records) + ". "
             "`python -m iosim.calibrate.torch_bwd_fit --out reports/backward-h200.md` writes "
             "this page (the Triton section above by calibrate/backward_fit.py).", "",
             "iosim's side: `iosim compare --impl sdpa-flash --pass bwd` (FA2's CUDA kernels: "
             "the two layout copies, dot_do_o, the K/V-outer kernel with dQ accumulated in fp32 "
             "by atomics, convert_dQ, the GQA sum) and `--impl torch-naive` (Alg. 3's kernels as "
             "eager PyTorch launches them). No DRAM constant is fitted on these records: every "
             "point is judged (SHARED_COPIES = 2 and DIRTY_SHARE = 0.66 come from the Triton "
             "record; their sensitivity below).", ""]
    for what, title in (("sdpa", "SDPA flash backward"), ("eager", "eager backward")):
        ok, n = within([r for r in rows if r.what == what])
        totals = per_backward([r for r in rows if r.what == what])
        inside = [p for p, e in totals.items() if abs(e) <= 0.10]
        worst = max(totals, key=lambda k: abs(totals[k]))
        lines.append(f"- {title}: {ok} of {n} kernels of ≥ 50 MB within ±10 % of ncu; the whole "
                     f"backward (every kernel, and the closing evict's write-backs) within ±10 % "
                     f"at {len(inside)} of {len(totals)} runs (worst {worst[1]}, "
                     f"{totals[worst]:+.1%}).")
    lines += ["", "### Sensitivity of the DRAM estimate", "", *sensitivity(records, hardware), ""]
    for what in IMPLS:
        tm = fit_time(records, what, hardware)
        judged = [(p, split) for p, split in timed(records, what)]
        errs = []
        table = ["| point | measured ms | predicted ms | error | split |", "|---|---:|---:|---:|---|"]
        for p, split in judged:
            t = predict_time(p, what, hardware, tm)
            m = p[f"{what}_s"]
            shown = "launch-bound" if m < LAUNCH_BOUND_S and split != "fit" else split
            if what == "eager" and p["id"] in U.UNALIGNED_FIT:
                shown = "fit (N % 8 ≠ 0)"  # the fallback kernels' constants: seen, not judged
            if shown == "judge":
                errs.append((t - m) / m)
            table.append(f"| {p['id']} | {m * 1e3:.3f} | {t * 1e3:.3f} | {(t - m) / m:+.1%} | "
                         f"{shown} |")
        inside = sum(abs(e) <= (0.15 if what == "sdpa" else 0.20) for e in errs)
        shipped = SDPA_TIME if what == "sdpa" else EAGER_TIME
        same = all(abs(x - y) <= 1e-9 for x, y in zip(
            (tm.efficiency, tm.overhead_s, tm.call_s, tm.memory_efficiency),
            (shipped.efficiency, shipped.overhead_s, shipped.call_s, shipped.memory_efficiency),
            strict=True))
        lines += [f"### Time: {IMPLS[what]}", "",
                  f"Fitted on the `fit` points: efficiency {tm.efficiency:.2f}, "
                  + (f"{tm.overhead_s * 1e6:.0f} µs per program of the main kernel, "
                     if what == "sdpa" else
                     f"{tm.overhead_s * 1e6:.0f} µs per kernel, memory efficiency "
                     f"{tm.memory_efficiency:.2f}, ")
                  + f"{tm.call_s * 1e6:.0f} µs per call"
                  + (" (= the shipped constants)" if same else f" (shipped: {shipped})")
                  + (f"; the mask pass at {MASK_EFFICIENCY:g} of the bandwidth"
                     if what == "eager" else "") + ". Judged points above "
                  f"{LAUNCH_BOUND_S * 1e3:.1f} ms within ±{15 if what == 'sdpa' else 20} %: "
                  f"{inside} of {len(errs)}"
                  + (f" (worst {max(errs, key=abs):+.1%})." if errs else "."), "", *table, ""]
    lines += ["### DRAM bytes per kernel (launch order, dirty lines handed to the next kernel)",
              "", "| point | impl | kernel | L2-oblivious MB | estimate MB | ncu MB | error |",
              "|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.point} | {IMPLS[r.what]} | {r.kernel} | {r.oblivious / 1e6:.1f} | "
                     f"{r.estimate / 1e6:.1f} | {r.measured / 1e6:.1f} | {r.error:+.1%} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """`python -m iosim.calibrate.torch_bwd_fit`: the report (to stdout, or the whole page to
    --out, never over an existing file); exit 2 with one line on a bad record."""
    from iosim.calibrate import backward_fit
    from iosim.inputs.gpus import config_dir
    from iosim.inputs.hardware_yaml import load_hardware

    ap = argparse.ArgumentParser(prog="python -m iosim.calibrate.torch_bwd_fit")
    ap.add_argument("records", nargs="*", default=[str(p) for p in RECORDS])
    ap.add_argument("--gpu-yaml", default=str(config_dir() / "h200.yaml"))
    ap.add_argument("--out", help="the whole report (the Triton record's section first)")
    args = ap.parse_args(argv)
    try:
        hw = load_hardware(args.gpu_yaml)
        records = load([Path(p) for p in args.records])
        text = report(records, hw)
        if args.out:
            from iosim.calibrate import fresh_bwd

            triton = backward_fit.report(backward_fit.load_record(RECORDS[0]), hw)
            text = triton + "\n" + text
            if FRESH.exists():
                text += "\n" + fresh_bwd.report(load([FRESH])[0], hw)
            if FRESH2.exists():
                text += "\n" + fresh_bwd.report(
                    load([FRESH2])[0], hw, "Gaps (a) and (c) as shipped, on a second fresh set "
                    "(backward-h200-fresh2.json)", grid="fresh2_grid", rules_seen=False)
            if FRESH3.exists():
                from iosim.calibrate import fresh3_bwd

                text += "\n" + fresh3_bwd.report(load([FRESH3])[0], hw)
                if FRESH4.exists():
                    text += "\n" + fresh3_bwd.report(
                        load([FRESH4])[0], hw, with_sensitivity=False, grid="fresh4_grid",
                        title="The Triton backward at small N, a fourth fresh set "
                              "(backward-h200-fresh4.json)")
            if FRESH5.exists():
                from iosim.calibrate import fresh5_bwd

                text += "\n" + fresh5_bwd.report(load([FRESH5])[0], hw,
                                                 seen=load([FRESH3, FRESH4]))
            if FRESH6.exists():
                from iosim.calibrate import fresh6_bwd

                text += "\n" + fresh6_bwd.report(load([FRESH6])[0], hw,
                                                 seen=load([FRESH3, FRESH4, FRESH5]))
            if FRESH7.exists():
                from iosim.calibrate import fresh7_bwd

                text += "\n" + fresh7_bwd.report(load([FRESH7])[0], hw)
            if FRESH8.exists():
                from iosim.calibrate import fresh8_bwd

                text += "\n" + fresh8_bwd.report(load([FRESH8])[0], hw)
            if FRESH9.exists():
                from iosim.calibrate import fresh9_bwd

                text += "\n" + fresh9_bwd.report(load([FRESH9])[0], hw)
            from iosim.calibrate import gemm_handover_fit

            text += "\n" + gemm_handover_fit.seen_section(hw)
            if FRESH10.exists():
                from iosim.calibrate import fresh10_bwd

                text += "\n" + fresh10_bwd.report(load([FRESH10])[0], hw)
            if FRESH11.exists():
                from iosim.calibrate import fresh11_bwd

                text += "\n" + fresh11_bwd.report(load([FRESH11])[0], hw)
            from iosim.calibrate import fresh12_bwd

            text += "\n" + fresh12_bwd.seen_section(hw)
            if FRESH12.exists():
                text += "\n" + fresh12_bwd.report(load([FRESH12])[0], hw)
    except (CalibrationError, IosimError) as exc:
        print(f"torch_bwd_fit: {exc}", file=sys.stderr)
        return 2
    return backward_fit.write_report(text, args.out, "torch_bwd_fit")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
