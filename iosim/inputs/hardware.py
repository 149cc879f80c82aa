"""One GPU's hardware model in SI units (bytes, bytes/s, FLOP/s), each figure with its source.

Loaded from YAML by hardware_yaml.py; the shipped GPUs and the --gpu lookup are in gpus.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from iosim.errors import ConfigError, IosimError, arg
from iosim.inputs.excerpts import excerpt
from iosim.inputs.limits import MAX_SM_COUNT, check_figure, check_measured_ceiling
from iosim.inputs.units import DTYPE_BYTES, FP8_DTYPES
from iosim.record import Record, field

SCHEMA_VERSION = 1
PEAK_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")
FP8_CAUSAL_KEY = "fp8_causal"
"""measured.peak_flops' one key that is not a dtype: the FP8 matmul rate of a causal kernel."""
KERNEL_KINDS = ("elementwise", "matmul", "fused")
"""Kernel classes that calibration fits separately (streaming/elementwise, matmul, fused attention)."""


class BackwardSchedule(Record):
    """Fitted constants of the scheduled time of iosim's Triton backward kernels
    (estimates/schedule.py; fitted by calibrate/backward_fit.py)."""

    efficiency: float
    program_overhead_s: float
    programs_per_sm: Mapping[int, int]
    """By head dim; a d not listed takes the smallest listed d's."""
    source: str = ""
    causal_loops: int = 1
    """Software-pipelined inner loops a program of a causal kernel runs, each paying the
    overhead (its pipeline's fill and drain): 2 for iosim's Triton kernels (the masked diagonal
    band, then the rest: kernels_bwd.py), 1 where one loop masks its first steps (FA2's CUDA)."""
    step_scale: float = 1.0
    """The factor on every inner step's time: FlexAttention's bounds-checked steps where N or
    N_kv is not a multiple of 128 (analysis/impl_forward.py); 1 elsewhere."""
    lone_share: float | None = None
    """The share of its SM's rate a program reaches with the SM to itself, where an SM holds
    more than one program (estimates/sm_sharing.py); None: every program at its slot's rate
    (the backward, whose lone programs run no faster: schedule.py)."""

    def per_sm(self, d: int) -> int:
        """Programs per SM of the backward kernels at head dim `d`."""
        return self.programs_per_sm.get(d, self.programs_per_sm[min(self.programs_per_sm)])


class Alg4Time(Record):
    """Fitted constants (none is a hardware fact) of Algorithm 4's per-tile latency model
    (estimates/alg4_time.py; fitted by calibrate/fresh_bwd.py `fit_alg4_time`): the GPU YAML's
    `measured.alg4_time`, what times flash1's fused backward kernel in the measured profile."""

    solo_flops_per_s: float
    """Matmul FLOP/s of one program walking its tiles alone on an SM."""
    program_bytes_per_s: float
    """DRAM bytes/s one program streams (one tile's loads in flight at a time)."""
    shared_sm_slowdown: float
    """Per extra program resident on the same SM, the fraction each program runs slower."""
    source: str = ""


class MlaPrefillTime(Record):
    """Fitted constants (none a hardware fact) of the MLA prefill kernel's time
    (estimates/mla_prefill_time.py): the GPU YAML's `measured.mla_prefill_time`."""

    scale: float
    """The factor on the kernel's roofline time."""
    wave_s: float
    """Seconds each wave of programs pays apart from its key loop."""
    launch_s: float
    """Seconds per launch as a timed call sees it."""
    source: str = ""


class ImplCalibration(Record):
    """One implementation's fitted figures on one GPU (the GPU YAML's `measured.impls.NAME`,
    written by `iosim calibrate --impl`, calibrate/impl_fit.py): efficiency per kernel class
    and the share of the measured bandwidth its memory-bound kernels reach (`memory`), the host
    time per call, and optionally its fused backward's schedule (calibrate/torch_bwd_fit.py)."""

    efficiency: Mapping[str, float]
    """fused / matmul / elementwise efficiencies, and `memory` (a share of the bandwidth)."""
    source: str
    call_overhead_s: float | None = None
    backward: Mapping[str, float] = field(default_factory=dict)
    """efficiency, program_overhead_s, call_overhead_s of the fused backward kernel (and the
    `memory` efficiency its other kernels were fitted at); empty: none fitted."""
    backward_source: str = ""
    terms: Mapping[str, float] = field(default_factory=dict)
    """The forward's time terms beyond the efficiencies (inputs/impl_calibration.py
    TIME_TERMS: solo_rate, program_bandwidth, host_floor_s, decode_host_floor_s); a missing
    one is no such limit."""
    forward: Mapping[str, float] = field(default_factory=dict)
    """The fused forward kernel's list schedule (estimates/schedule.py; FlexAttention's
    template, analysis/impl_kernels.py:impl_forward_roofs): `efficiency_dN` per head-dim
    bucket, `program_overhead_s` per software-pipelined loop, `causal_loops`; empty: the
    forward kernel on its roofline."""
    forward_source: str = ""


class Figure(Record):
    """One hardware figure in SI units, with where it comes from."""

    value: float
    source: str
    estimate: bool = False
    note: str | None = None


class DecodeFit(Record):
    """Fitted (not ceilings) constants of the decoding time model (analysis/decode_time.py),
    fitted by benchmarks/decode_choices_h200.py --fit on the shared-prefix batches it names."""

    ramp_s: float
    """Per kernel beyond the launch: its first loads' latency and its last programs' tail."""
    efficiency: float
    """The share of the HBM and L2 rates the decoding kernels reach."""
    source: str = ""
    block_s: float | None = None
    """A split-KV program's latency per key block on its walk (None: not fitted)."""
    program_flops_per_s: float | None = None
    """A split-KV program's matmul rate on its walk (None: not fitted)."""
    latent_shared_dots: float = 0.0
    """κ: how much each further MLA split program resident on the same SM slows a program's
    dots (they share the SM's tensor cores; 0: not fitted)."""


class MeasuredProfile(Record):
    """Achieved ceilings and per-kernel-class efficiencies written by `iosim calibrate`."""

    provenance: str
    hbm_bandwidth_bytes_per_s: float | None
    peak_flops_per_s: Mapping[str, float]
    kernel_efficiency: Mapping[str, float]
    """Fraction of the measured roof each kernel class reaches (elementwise, matmul, fused)."""
    figures: Mapping[str, Figure] = field(default_factory=dict)
    vector_flops_per_s: float | None = None
    """Rate of the elementwise (softmax) FLOPs, fitted from the fused kernels' timings."""
    backward_schedule: BackwardSchedule | None = None
    paged_kv_efficiency: Mapping[int, float] = field(default_factory=dict)
    """Tokens per page → the fraction of a contiguous cache's K/V read rate that a paged one
    reaches (measured; estimates/paged_dram.py). Empty: not calibrated."""
    paged_kv_source: str = ""
    impls: Mapping[str, ImplCalibration] = field(default_factory=dict)
    """Implementation name → its fitted figures on this GPU (`measured.impls`, what
    `--impl NAME --profile measured` uses)."""
    l2_bandwidth_bytes_per_s: float | None = None
    """The L2's read rate, measured by a microbenchmark (calibrate/decode_microbench.py): the
    roof of the bytes that hit in L2 (analysis/decode_time.py). None: not measured."""
    launch_overhead_s: float | None = None
    """One kernel launch inside a CUDA graph, measured with empty kernels back to back
    (calibrate/decode_microbench.py). None: not measured."""
    decode_fit: DecodeFit | None = None
    """The decoding time model's two fitted constants (analysis/decode_time.py)."""
    alg4_time: Alg4Time | None = None
    """Algorithm 4's per-tile latency model (flash1's backward); None: flash1's backward on
    its roofline."""
    mla_prefill_time: MlaPrefillTime | None = None
    """The MLA prefill kernel's fitted time (estimates/mla_prefill_time.py); None: on its
    roofline."""
    fp8_causal_flops_per_s: float | None = None
    """measured.peak_flops.fp8_causal: the FP8 matmul rate of a causal kernel (its diagonal's
    masking costs cycles: benchmarks/fp8_mask_fit.py); None: peak_flops.fp8 for both masks."""


class Hardware(Record):
    """One GPU. Every quantity in bytes, bytes/s or FLOP/s; `figures` keeps the sources."""

    name: str
    display_name: str
    path: str
    hbm_capacity_bytes: float
    hbm_bandwidth_bytes_per_s: float
    sram_per_block_bytes: float
    peak_flops_per_s: Mapping[str, float]
    aliases: tuple[str, ...] = ()
    l2_bytes: float | None = None
    l2_bandwidth_bytes_per_s: float | None = None
    sram_per_sm_bytes: float | None = None
    sram_bandwidth_bytes_per_s: float | None = None
    sm_count: int | None = None
    vendor: str | None = None
    architecture: str | None = None
    notes: str | None = None
    figures: Mapping[str, Figure] = field(default_factory=dict)
    measured: MeasuredProfile | None = None

    def __post_init__(self) -> None:
        # A Hardware built in Python meets the same bounds as one loaded from YAML (issue 12: one
        # input boundary), so a subnormal peak or an infinite bandwidth cannot reach the model.
        figures: dict[str, object] = {
            "hbm_capacity_bytes": self.hbm_capacity_bytes,
            "hbm_bandwidth_bytes_per_s": self.hbm_bandwidth_bytes_per_s,
            "sram_per_block_bytes": self.sram_per_block_bytes,
            "l2_bytes": self.l2_bytes,
            "l2_bandwidth_bytes_per_s": self.l2_bandwidth_bytes_per_s,
            "sram_per_sm_bytes": self.sram_per_sm_bytes,
            "sram_bandwidth_bytes_per_s": self.sram_bandwidth_bytes_per_s,
        }
        figures.update({f"peak_flops_per_s[{dtype!r}]": peak
                        for dtype, peak in self.peak_flops_per_s.items()})
        for name, value in figures.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(self.path, name, f"must be a number, got {excerpt(value)}")
            problem = check_figure(float(value), value)
            if problem:
                raise ConfigError(self.path, name, problem)
        if self.sm_count is not None and (isinstance(self.sm_count, bool)
                                          or not isinstance(self.sm_count, int)
                                          or not 1 <= self.sm_count <= MAX_SM_COUNT):
            raise ConfigError(self.path, "sm_count",
                              f"must be a whole number from 1 to {MAX_SM_COUNT}, got "
                              f"{excerpt(self.sm_count)}")
        self._check_sizes_nest()
        if self.measured is not None:
            self._check_measured_ceilings(self.measured)

    def _check_sizes_nest(self) -> None:
        """A block's shared memory is part of one SM's, and the L2 caches a part of HBM: a
        sram_per_sm of 100 KiB under a 227 KiB sram_per_block (occupancy then counted on a
        per-SM size no block fits), or an L2 of "60 GB" for "60 MiB" (every byte an L2 hit
        to the DRAM estimate) were accepted (hostile10)."""
        if self.sram_per_sm_bytes is not None and self.sram_per_sm_bytes < self.sram_per_block_bytes:
            raise ConfigError(self.path, "sram_per_sm",
                              f"{self.sram_per_sm_bytes:,.0f} bytes is less than sram_per_block's "
                              f"{self.sram_per_block_bytes:,.0f}: a block's shared memory lives "
                              f"in one SM; check the two figures' units")
        if self.l2_bytes is not None and self.l2_bytes >= self.hbm_capacity_bytes:
            raise ConfigError(self.path, "l2_size",
                              f"{self.l2_bytes:,.0f} bytes is not less than hbm_capacity's "
                              f"{self.hbm_capacity_bytes:,.0f}: the L2 caches a part of HBM; "
                              f"check the two figures' units (MiB, GB)")

    def _check_measured_ceilings(self, measured: MeasuredProfile) -> None:
        """No measured ceiling above its datasheet figure (limits.MEASURED_OVER_SPEC), here so
        that a YAML, a `calibrate --from` fit (fit.py builds its profile as a Hardware) and
        a Hardware built in Python meet the one rule. A datasheet figure marked `estimate:
        true` is a guess, not a ceiling: a measurement above it corrects it. A measured peak of a
        dtype the datasheet lacks is refused (a measured FP8 rate on a GPU without FP8 tensor
        cores); a measured L2 rate needs no datasheet one."""
        ceilings: list[tuple[str, float | None, float | None, str]] = [
            ("hbm_bandwidth", measured.hbm_bandwidth_bytes_per_s,
             self.hbm_bandwidth_bytes_per_s, "B/s")]
        if self.l2_bandwidth_bytes_per_s is not None:  # few datasheets give one: then a
            ceilings.append(("l2_bandwidth", measured.l2_bandwidth_bytes_per_s,  # measurement
                             self.l2_bandwidth_bytes_per_s, "B/s"))  # stands alone
        ceilings += [(f"peak_flops.{dtype}", value, self.peak_flops_per_s.get(dtype), "FLOP/s")
                     for dtype, value in measured.peak_flops_per_s.items()]
        for key, value, spec, unit in ceilings:
            figure = self.figures.get(key)
            if value is None or (figure is not None and figure.estimate):
                continue
            problem = check_measured_ceiling(value, spec, unit)
            if problem is not None:
                raise ConfigError(self.path, f"measured.{key}", problem)

    @property
    def ridge_point_flops_per_byte(self) -> float:
        """Machine balance for fp16: the intensity above which a kernel is compute-bound."""
        return self.peak_flops("fp16") / self.hbm_bandwidth_bytes_per_s

    def peak_flops(self, dtype: str) -> float:
        """Peak dense matmul FLOP/s for an input dtype (fp32 means non-tensor-core fp32; e4m3
        and e5m2 run at the YAML's one FP8 tensor-core figure, peak_flops.fp8)."""
        if dtype in FP8_DTYPES:
            if "fp8" not in self.peak_flops_per_s:
                from pathlib import Path  # for this message only (start-up time)

                raise IosimError(
                    f"{self.name} has no FP8 tensor cores in its YAML (no peak_flops.fp8: e.g. "
                    f"Ampere and Turing have none); use {arg('dtype', 'bf16')}, or add "
                    f"peak_flops.fp8, with its source, to {Path(self.path).name}", param="dtype")
            return self.peak_flops_per_s["fp8"]
        try:
            return self.peak_flops_per_s[dtype]
        except KeyError:
            listed = ", ".join(self.peak_flops_per_s)
            raise IosimError(
                f"{self.name} has no {dtype} peak in its YAML (it lists {listed}); "
                f"pick another {arg('dtype')} or add peak_flops.{dtype} to {self.path}"
            ) from None

    def sram_elements(self, dtype: str) -> int:
        """M of the paper: the per-block SRAM in elements of the dtype."""
        return int(self.sram_per_block_bytes) // DTYPE_BYTES[dtype]
