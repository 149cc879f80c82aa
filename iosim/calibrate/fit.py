"""Fit what a datasheet cannot know, and hold iosim's model against every measured point.

Ceilings (measured, not fitted). HBM bandwidth: the best of the Triton copy and torch's copy
(bytes read + written over the median time). Matmul FLOP/s per dtype: the best of the Triton
matmul and torch.matmul at 8192³ on random data.

The time model is iosim's measured profile (roofline.py): a kernel takes
    t = max(DRAM bytes / bandwidth, matmul FLOPs / matmul peak + elementwise FLOPs / vector rate) / e_c
with the L2-aware DRAM bytes (l2.py) and one efficiency e_c per kernel class c.

Fitted, on the points at N ∈ plan.FIT_N (main configurations only), by least squares on the
relative error Σ (t_predicted / t_measured − 1)²:
  * e_elementwise from the softmax kernels, e_matmul from S = QKᵀ (row strips) and O = PV;
  * e_fused and the vector rate together from the fused kernel at both head dims: t is then
    a·(matmul time) + b·(elementwise FLOPs), linear in (a, b), e_fused = 1/a, rate = a/b. The
    two parameters are told apart because d = 64 does twice the softmax work per matmul FLOP.
The other N are the hold-out on which the model is judged; every point's error is reported.

Bytes. Every point counted by ncu is compared with iosim's L2-aware DRAM estimate (and the
L2-oblivious count): DRAM reads + writes + the dirty lines its evict kernel wrote back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from iosim.algorithms import get_algorithm
from iosim.algorithms.closedform import Dims, closed_form, kernel_flops, kernel_sums
from iosim.algorithms.loopnest import Kernel
from iosim.calibrate import CalibrationError
from iosim.calibrate.fit_result import BytesCheck, Ceilings, FitResult, Point, is_main_config
from iosim.calibrate.plan import FIT_N, FUSED_CONFIGS
from iosim.calibrate.records import Calibration, Measurement
from iosim.errors import ConfigError
from iosim.estimates.l2 import dram_estimate
from iosim.estimates.l2_model import DramEstimate
from iosim.estimates.occupancy import compute_capability, sm_limits
from iosim.estimates.occupancy import programs_per_sm as occupancy_per_sm
from iosim.estimates.roofline import estimate_kernels, roofs_for
from iosim.inputs.hardware import KERNEL_KINDS, Hardware, MeasuredProfile
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

ATTENTION_KERNELS = {"qk": "standard", "softmax": "standard", "pv": "standard",
                     "attn_fwd": "flash2"}
MODEL_KERNEL = {"qk": "qk", "softmax": "softmax", "pv": "pv", "attn_fwd": "attn"}


def ceilings(calibration: Calibration) -> Ceilings:
    """The measured ceilings: the best copy's bandwidth (B/s) and the best matmul's FLOP/s per
    dtype, each with a source that says what was measured where."""
    copies = [m for m in calibration.measurements if m.kernel in ("copy", "torch_copy")]
    if not copies:
        raise CalibrationError("the measurement file has no copy measurement (the bandwidth "
                               "ceiling); re-run `iosim calibrate` on the GPU")
    best = max(copies, key=lambda m: m.io_bytes / m.time_s)
    bandwidth = best.io_bytes / best.time_s
    who = "Triton copy kernel" if best.kernel == "copy" else "torch copy_"
    others = ", ".join(f"{'Triton' if m.kernel == 'copy' else 'torch'} "
                       f"{m.io_bytes / m.time_s / 1e9:.0f} GB/s" for m in copies)
    streams = [m for m in calibration.measurements if m.kernel in ("read", "write")]
    alone = "; ".join(f"{m.kernel}-only Triton {m.io_bytes / m.time_s / 1e9:.0f} GB/s"
                      for m in streams)
    hbm_source = (f"{who}, {best.io_bytes / 2 / 2**30:g} GiB copied, read + write bytes over the "
                  f"median time ({others}{'; ' + alone if alone else ''}); {_where(calibration)}")
    peaks: dict[str, float] = {}
    sources: dict[str, str] = {}
    for dtype in sorted({m.dtype for m in calibration.measurements
                         if m.kernel in ("matmul", "torch_matmul")}):
        runs = [m for m in calibration.measurements
                if m.kernel in ("matmul", "torch_matmul") and m.dtype == dtype]
        top = max(runs, key=lambda m: m.flops / m.time_s)
        peaks[dtype] = top.flops / top.time_s
        listed = ", ".join(f"{'Triton' if m.kernel == 'matmul' else 'torch'} "
                           f"{m.flops / m.time_s / 1e12:.0f} TFLOP/s" for m in runs)
        sources[dtype] = (f"{'Triton matmul' if top.kernel == 'matmul' else 'torch.matmul'} "
                          f"{top.size}³ {dtype} on random data, median ({listed}); "
                          f"{_where(calibration)}")
    return Ceilings(bandwidth, hbm_source, peaks, sources)


def _where(calibration: Calibration) -> str:
    return f"{calibration.device.get('name')}, {calibration.created[:10]}"


def workload_of(n: int, d: int, batch: int, heads: int, dtype: str, causal: bool) -> Workload:
    """The Workload of a measured shape."""
    return Workload(n, d=d, heads=heads, batch=batch, dtype=dtype, causal=causal)


def tiling_of(block_m: int, block_n: int, hardware: Hardware) -> Tiling:
    """The Tiling of a calibration kernel's BLOCK_M × BLOCK_N on `hardware`."""
    return Tiling(block_m, block_n, int(hardware.sram_per_block_bytes),
                  f"sram_per_block of {hardware.name}", "the calibration kernel's BLOCK_M × BLOCK_N")


def programs_per_sm(m: Measurement, hardware: Hardware) -> int | None:
    """Programs one SM holds at once, from the compiled kernel's registers and shared memory
    (estimates/occupancy.py, the rule compare uses)."""
    if not m.regs or not m.num_warps:
        return None
    per_sm = hardware.sram_per_sm_bytes or hardware.sram_per_block_bytes
    limits = sm_limits(int(per_sm), compute_capability(hardware.architecture))
    return int(occupancy_per_sm(limits, shared_bytes=m.shared_bytes, warps=m.num_warps,
                                registers_per_thread=m.regs))


def _split(m: Measurement) -> str:
    if m.kernel in ("copy", "read", "write", "matmul"):
        return "ceiling"
    if m.kind == "reference":
        return "reference"
    if not is_main_config(m):
        return "other"
    return "fit" if m.n in FIT_N else "holdout"


class _Model(Record):
    """What the time model needs of one attention measurement."""

    kernel: Kernel
    workload: Workload
    tiling: Tiling | None
    dram: DramEstimate
    matmul_flops: int
    elementwise_flops: int
    oblivious_bytes: int
    per_sm: int | None


def _model(m: Measurement, hardware: Hardware) -> _Model:
    workload = workload_of(m.n, m.d, m.batch, m.heads, m.dtype, m.causal)
    tiling = tiling_of(m.block_m, m.block_n, hardware) if m.kernel == "attn_fwd" else None
    kernels = get_algorithm(ATTENTION_KERNELS[m.kernel]).kernels(workload)
    kernel = next(k for k in kernels if k.name == MODEL_KERNEL[m.kernel])
    per_sm = programs_per_sm(m, hardware) if m.kernel == "attn_fwd" else None
    dram = dram_estimate(kernels, workload, tiling, hardware, programs_per_sm=per_sm)
    dims = Dims.of(workload, tiling)
    matmul, elementwise = (int(x) for x in kernel_flops(kernel, dims, kernel_sums(kernel, dims)))
    oblivious = closed_form((kernel,), workload, tiling).bytes
    return _Model(kernel, workload, tiling, dram.of_kernel(kernel.name), matmul, elementwise,
                  oblivious, per_sm)


def _scale_fit(ratios: Sequence[float]) -> float:
    """e minimising Σ (r/e − 1)² for r = roof time / measured time: 1/e = Σr / Σr²."""
    return sum(r * r for r in ratios) / sum(ratios)


def _fused_fit(rows: Sequence[tuple[float, float, float]]) -> tuple[float, float] | None:
    """(a, b) minimising Σ ((a·x + b·y)/t − 1)² over (x = matmul time, y = elementwise FLOPs, t)."""
    sxx = sum((x / t) ** 2 for x, _, t in rows)
    syy = sum((y / t) ** 2 for _, y, t in rows)
    sxy = sum(x * y / t**2 for x, y, t in rows)
    sx = sum(x / t for x, _, t in rows)
    sy = sum(y / t for _, y, t in rows)
    det = sxx * syy - sxy * sxy
    if det <= 0:
        return None
    a = (sx * syy - sy * sxy) / det
    b = (sy * sxx - sx * sxy) / det
    return (a, b) if a > 0 and b > 0 else None


def fit(calibration: Calibration, hardware: Hardware) -> FitResult:
    """Fit the efficiencies (and the vector rate) on the FIT_N points and predict every point's
    time (s) and DRAM bytes on the measured ceilings (see the module docstring)."""
    ceil = ceilings(calibration)
    models = {m.id: _model(m, hardware) for m in calibration.measurements
              if m.kernel in ATTENTION_KERNELS}
    splits = {m.id: _split(m) for m in calibration.measurements}
    peak = {m.id: ceil.peak_flops_per_s.get(m.dtype) or hardware.peak_flops(m.dtype)
            for m in calibration.measurements if m.id in models}

    fused_rows = [(models[m.id].matmul_flops / peak[m.id], float(models[m.id].elementwise_flops),
                   m.time_s) for m in calibration.measurements
                  if m.kernel == "attn_fwd" and splits[m.id] == "fit"]
    # The two parameters are only told apart when the rows do different softmax work per matmul
    # FLOP (several head dims: d = 64 does twice d = 128's); with one head dim (--quick) the rows
    # are collinear and the vector rate stays the spec one, the efficiency alone is fitted.
    softmax_per_matmul = {round(y / x, 6) for x, y, _ in fused_rows if x > 0}
    identifiable = len(fused_rows) >= 2 and len(softmax_per_matmul) >= 2
    fused_ab = _fused_fit(fused_rows) if identifiable else None
    vector = fused_ab[0] / fused_ab[1] if fused_ab else None

    unit = MeasuredProfile("fit", ceil.hbm_bandwidth_bytes_per_s, dict(ceil.peak_flops_per_s),
                           {k: 1.0 for k in KERNEL_KINDS}, vector_flops_per_s=vector)
    try:  # the ceilings meet the datasheet's (Hardware._check_measured_ceilings) before a fit
        measured_hw = replace(hardware, measured=unit)
    except ConfigError as exc:
        problem = str(exc).removeprefix(f"{exc.path}: ")
        raise CalibrationError(f"its ceilings are not ones {hardware.name} can have: {problem} "
                               f"({_where(calibration)})") from None

    def roof(m: Measurement) -> float:
        model = models[m.id]
        roofs = roofs_for(measured_hw, m.dtype, "measured")
        tiling = model.tiling if model.tiling is None or model.per_sm is None else replace(
            model.tiling, programs_per_sm=model.per_sm)
        return estimate_kernels((model.kernel,), model.workload, tiling, roofs,
                                dram_bytes={model.kernel.name: model.dram.bytes},
                                sm_count=hardware.sm_count)[0].time_s

    roofs_s = {mid: roof(m) for m in calibration.measurements if (mid := m.id) in models}
    efficiency: dict[str, float] = {}
    for kind in KERNEL_KINDS:
        ratios = [roofs_s[m.id] / m.time_s for m in calibration.measurements
                  if m.id in models and m.kind == kind and splits[m.id] == "fit"]
        if kind == "fused" and fused_ab is not None:
            efficiency[kind] = 1 / fused_ab[0]
        elif ratios:
            efficiency[kind] = _scale_fit(ratios)
    points = []
    for m in calibration.measurements:
        model = models.get(m.id)
        if model is None:
            points.append(Point(m, splits[m.id]))
            continue
        t = roofs_s[m.id]
        predicted = t / efficiency[m.kind] if m.kind in efficiency else None
        points.append(Point(m, splits[m.id], t, predicted, model.oblivious_bytes, model.dram.bytes,
                            model.per_sm))
    return FitResult(calibration, hardware, ceil, efficiency, vector, tuple(points),
                     bytes_checks(calibration, hardware))


def bytes_checks(calibration: Calibration, hardware: Hardware) -> tuple[BytesCheck, ...]:
    """ncu's DRAM bytes of every counted point against iosim's estimate."""
    counters = calibration.counters
    if counters.status != "ok":
        return ()
    occupancy: dict[tuple[int, bool, str], int] = {}
    for m in calibration.measurements:
        if m.kernel == "attn_fwd" and (per_sm := programs_per_sm(m, hardware)) is not None:
            occupancy[(m.d, m.causal, m.block_label)] = per_sm
    checks = []
    for item in counters.spec:
        rows = counters.of(item["id"])
        if not rows:
            continue
        kernel_rows = [r for r in rows if r.role == "kernel"]
        reads = sum(r.dram_read_bytes for r in kernel_rows)
        # writes: the kernels' own plus the dirty lines the evict kernels flushed after them
        # (the first evict's writes belong to whatever ran before the point)
        writes = sum(r.dram_write_bytes for r in kernel_rows) + sum(
            r.dram_write_bytes for r in rows[1:] if r.role == "evict")
        l2 = sum(r.l2_bytes for r in kernel_rows)
        causal = bool(item.get("causal", False))
        workload = workload_of(item["n"], item["d"], item["batch"], item["heads"],
                               item.get("dtype", "fp16"), causal)
        if item["what"] == "standard":
            algorithm, tiling, block, per_sm, main = "standard", None, "", None, True
        else:
            algorithm = "flash2"
            tiling = tiling_of(item["block_m"], item["block_n"], hardware)
            block = (f"{item['block_m']}x{item['block_n']}/w{item['num_warps']}/"
                     f"s{item['num_stages']}")
            per_sm = occupancy.get((item["d"], causal, block))
            main_cfg = FUSED_CONFIGS.get(item["d"], (None,))[0]
            main = main_cfg is not None and block == main_cfg.label
        kernels = get_algorithm(algorithm).kernels(workload)
        checks.append(BytesCheck(
            item["id"], algorithm, item["n"], item["d"], item["batch"] * item["heads"], causal,
            block, not item["id"].startswith("l2/"), main, reads, writes, l2,
            dram_estimate(kernels, workload, tiling, hardware, programs_per_sm=per_sm),
            closed_form(kernels, workload, tiling).bytes))
    return tuple(checks)


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive values."""
    return math.exp(sum(math.log(v) for v in values) / len(values))
