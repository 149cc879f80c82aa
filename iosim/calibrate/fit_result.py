"""What a calibration fit found: the measured ceilings, each point's measured and predicted
time, ncu's bytes against iosim's estimate, and the checks a calibration report prints.

Computed by fit.py; rendered by output/calibration_report.py.
"""

from __future__ import annotations

from typing import Any

from iosim.calibrate.plan import FIT_N, FUSED_CONFIGS
from iosim.calibrate.records import Calibration, Measurement
from iosim.estimates.l2_model import DramEstimate
from iosim.inputs.hardware import Hardware, MeasuredProfile
from iosim.record import Record


class Ceilings(Record):
    """Measured ceilings: HBM bandwidth (B/s) and matmul peak per dtype (FLOP/s), with sources."""

    hbm_bandwidth_bytes_per_s: float
    hbm_source: str
    peak_flops_per_s: dict[str, float]
    peak_sources: dict[str, str]


class Point(Record):
    """One measured kernel with iosim's predictions for it."""

    m: Measurement
    split: str
    """'fit', 'holdout' (judged), 'other' (other configurations), 'ceiling', 'reference'."""
    roof_time_s: float | None = None
    """Roofline time on the measured ceilings, efficiency 1."""
    predicted_time_s: float | None = None
    l2_oblivious_bytes: int | None = None
    dram_bytes: int | None = None
    """iosim's L2-aware DRAM estimate for this kernel."""
    programs_per_sm: int | None = None

    @property
    def time_error(self) -> float | None:
        """Relative error of the predicted time, (predicted − measured) / measured; None unpredicted."""
        if self.predicted_time_s is None:
            return None
        return self.predicted_time_s / self.m.time_s - 1


class BytesCheck(Record):
    """One ncu-counted point (the standard path's three kernels together, or one fused kernel)."""

    id: str
    algorithm: str
    n: int
    d: int
    heads: int
    causal: bool
    block: str
    grid: bool
    """On the acceptance grid (False: an extra point for the L2 regimes)."""
    main: bool
    """The main block configuration (the fused kernel) or the standard path."""
    measured_dram_read_bytes: float
    measured_dram_write_bytes: float
    measured_l2_bytes: float
    estimate: DramEstimate
    l2_oblivious_bytes: int

    @property
    def measured_dram_bytes(self) -> float:
        """ncu's DRAM bytes: reads plus writes (with the evict kernel's write-backs)."""
        return self.measured_dram_read_bytes + self.measured_dram_write_bytes

    @property
    def predicted_dram_bytes(self) -> int:
        """iosim's L2-aware DRAM estimate of the point, in bytes."""
        return self.estimate.bytes

    @property
    def error(self) -> float:
        """Relative error of the estimate against ncu: predicted / measured − 1."""
        return self.predicted_dram_bytes / self.measured_dram_bytes - 1


class FitResult(Record):
    """A fit: the calibration and hardware it used, the ceilings, efficiencies per kernel class,
    the vector rate (FLOP/s), every point's prediction and every ncu point's bytes check."""

    calibration: Calibration
    hardware: Hardware
    ceilings: Ceilings
    efficiency: dict[str, float]
    vector_flops_per_s: float | None
    points: tuple[Point, ...]
    bytes_checks: tuple[BytesCheck, ...]

    @property
    def provenance(self) -> str:
        """One line saying what was measured, on which device and software, when, and what was fitted."""
        c, dev = self.calibration, self.calibration.device
        return (f"{c.command} — for {self.hardware.name} ({self.hardware.display_name}), measured "
                f"on {dev.get('name')} (driver {dev.get('driver')}, CUDA "
                f"{dev.get('cuda')}, torch {dev.get('torch')}, Triton {dev.get('triton')}), "
                f"{c.created}; efficiencies fitted at N in {list(FIT_N)}")

    def profile(self) -> MeasuredProfile:
        """The fit as a MeasuredProfile (what `--profile measured` uses)."""
        return MeasuredProfile(self.provenance, self.ceilings.hbm_bandwidth_bytes_per_s,
                               dict(self.ceilings.peak_flops_per_s), dict(self.efficiency),
                               vector_flops_per_s=self.vector_flops_per_s)

    def profile_yaml(self) -> dict[str, Any]:
        """The `measured:` section of a hardware YAML for this fit, in YAML units (GB/s, TFLOP/s)."""
        c = self.ceilings
        out: dict[str, Any] = {
            "provenance": self.provenance,
            "hbm_bandwidth": {"value": f"{c.hbm_bandwidth_bytes_per_s / 1e9:.1f} GB/s",
                              "source": c.hbm_source},
            "peak_flops": {dtype: {"value": f"{v / 1e12:.1f} TFLOP/s",
                                   "source": c.peak_sources[dtype]}
                           for dtype, v in c.peak_flops_per_s.items()},
        }
        if self.vector_flops_per_s is not None:
            out["vector_flops"] = {
                "value": f"{self.vector_flops_per_s / 1e12:.2f} TFLOP/s",
                "source": ("fitted (not a ceiling): the rate of the online softmax's elementwise "
                           "FLOPs (5 per score) in the fused Triton kernel at d = 64 and 128, "
                           "with its matmul time added; see iosim/calibrate/fit.py"),
            }
        out["kernel_efficiency"] = {k: round(v, 4) for k, v in self.efficiency.items()}
        return out

    def standard_paths(self) -> list[dict[str, Any]]:
        """Per (N, d): the standard path's three kernels (main S = QKᵀ), times summed."""
        groups: dict[tuple[int, int, str], list[Point]] = {}
        for p in self.points:
            if p.m.algorithm == "standard" and p.split in ("fit", "holdout"):
                groups.setdefault((p.m.n, p.m.d, p.m.dtype), []).append(p)
        rows = []
        for (n, d, dtype), pts in sorted(groups.items()):
            measured = sum(p.m.time_s for p in pts)
            predicted = sum(p.predicted_time_s or 0.0 for p in pts)
            rows.append({"n": n, "d": d, "dtype": dtype, "split": pts[0].split,
                         "measured_time_s": measured, "predicted_time_s": predicted,
                         "error": predicted / measured - 1})
        return rows

    def acceptance(self) -> list[dict[str, Any]]:
        """The issue's acceptance checks, each with its worst case."""
        out: list[dict[str, Any]] = []
        ratios = [r for r in sdpa_ratios(self) if r["n"] >= 4096 and r["d"] == 128
                  and r["dtype"] == "fp16"]
        if ratios:
            worst = min(ratios, key=lambda r: r["ratio"])
            out.append({"check": "fused forward vs SDPA flash, N ≥ 4096, d = 128, fp16",
                        "target": "≥ 0.80×", "worst": f"{worst['ratio']:.2f}× (N {worst['n']}, "
                        f"{'causal' if worst['causal'] else 'full'})",
                        "passed": worst["ratio"] >= 0.8})
        for algorithm, label in (("standard", "standard path"), ("flash2", "fused kernel")):
            checks = [b for b in self.bytes_checks if b.grid and b.main and b.algorithm == algorithm]
            if checks:
                worst_b = max(checks, key=lambda b: abs(b.error))
                out.append({"check": f"DRAM bytes, {label}, N 1024…16384, d 64/128",
                            "target": "±10%", "worst": f"{100 * worst_b.error:+.1f}% "
                            f"(N {worst_b.n}, d {worst_b.d})", "passed": abs(worst_b.error) <= 0.10})
        fused = [p for p in self.points if p.m.kernel == "attn_fwd" and p.split == "holdout"]
        if fused:
            worst_p = max(fused, key=lambda p: abs(p.time_error or 0))
            err = worst_p.time_error or 0.0
            out.append({"check": "time, fused kernel, hold-out N", "target": "±15%",
                        "worst": f"{100 * err:+.1f}% (N {worst_p.m.n}, d {worst_p.m.d}, "
                        f"{'causal' if worst_p.m.causal else 'full'})", "passed": abs(err) <= 0.15})
        paths = [r for r in self.standard_paths() if r["split"] == "holdout"]
        if paths:
            worst_r = max(paths, key=lambda r: abs(r["error"]))
            out.append({"check": "time, standard path, hold-out N", "target": "±20%",
                        "worst": f"{100 * worst_r['error']:+.1f}% (N {worst_r['n']}, "
                        f"d {worst_r['d']})", "passed": abs(worst_r["error"]) <= 0.20})
        return out


def sdpa_ratios(result: FitResult) -> list[dict[str, Any]]:
    """Fused Triton forward vs torch SDPA (flash backend), side by side: throughput ratio."""
    rows = []
    for ref in (p.m for p in result.points if p.m.kernel == "sdpa_flash"):
        ours = [p.m for p in result.points if p.m.kernel == "attn_fwd" and p.m.n == ref.n
                and p.m.d == ref.d and p.m.causal == ref.causal and p.m.dtype == ref.dtype]
        if not ours:
            continue
        main = [m for m in ours if is_main_config(m)] or ours
        best = min(ours, key=lambda m: m.time_s)
        rows.append({"n": ref.n, "d": ref.d, "causal": ref.causal, "dtype": ref.dtype,
                     "main_block": main[0].block_label, "best_block": best.block_label,
                     "triton_tflops": main[0].flops / main[0].time_s / 1e12,
                     "best_tflops": best.flops / best.time_s / 1e12,
                     "sdpa_tflops": ref.flops / ref.time_s / 1e12,
                     "ratio": ref.time_s / main[0].time_s})
    return rows


def is_main_config(m: Measurement) -> bool:
    """Whether a measurement is of the main configuration (the fused kernel's first config in
    plan.FUSED_CONFIGS, the row-strip QK kernel), the one the fit and the hold-out use."""
    if m.kernel == "attn_fwd":
        main = FUSED_CONFIGS.get(m.d, (None,))[0]
        return main is not None and (m.block_m, m.block_n, m.num_warps, m.num_stages) == (
            main.block_m, main.block_n, main.num_warps, main.num_stages)
    if m.kernel == "qk":
        return m.variant in ("", "rows")
    return True
