"""What `compare` returns: every algorithm's kernels on the roofline, and the workload's figures."""

from __future__ import annotations

from typing import Any

from iosim.algorithms.traffic import Traffic, TrafficTotals
from iosim.estimates.footprint import Footprint
from iosim.estimates.l2_model import DramEstimate
from iosim.estimates.paged_dram import PageEfficiency
from iosim.estimates.roofline import CostTotals, KernelEstimate, Roofs, total_cost
from iosim.estimates.training import Occupancy
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record


class Call(Record):
    """One call of a training step as do_bench times it (`--pass fwdbwd`, measured profile, an
    implementation or iosim's Triton kernels): the forward call or the backward call, each
    timed as its pass alone is (and as the calibration judged it: do_bench times each alone)."""

    pass_: str
    """'fwd' or 'bwd'."""
    time_s: float
    """Its kernels' time."""
    call_overhead_s: float = 0.0
    host_floor_s: float = 0.0
    floor: str = ""
    """Which host-bound floor applies (AlgorithmEstimate.floor); '' for none."""

    @property
    def call_time_s(self) -> float:
        """max(host floor, kernels + time per call), as AlgorithmEstimate.call_time_s."""
        return max(self.host_floor_s, self.time_s + self.call_overhead_s)


class AlgorithmEstimate(TrafficTotals, Record):
    """One algorithm: its kernels on the roofline, its traffic terms and totals."""

    name: str
    title: str
    tiling: Tiling | None
    kernels: tuple[KernelEstimate, ...]
    footprint: Footprint
    baseline_time_s: float
    baseline_hbm_bytes: int
    occupancy: tuple[Occupancy, ...] = ()
    """The launch grid of every kernel whose grid iosim models, against the GPU's SMs."""
    convention_flops: int = 0
    """FLOPs by the FA2/FA3 convention (training.convention_flops), beside the executed count."""
    dram: DramEstimate | None = None
    """The L2-aware DRAM estimate (l2.py); None when the GPU's YAML lacks l2_size or sm_count."""
    algorithm: str = ""
    """The loop nest counted ('' : the same as `name`); differs when `name` is an --impl."""
    impl: Implementation | None = None
    call_overhead_s: float = 0.0
    """An implementation's fitted time per call beyond its kernels' (measured profile, the GPU
    YAML's measured.impls.NAME.call_overhead_s: launch gaps, the first kernel's ramp); added to the
    kernels' time."""
    host_floor_s: float = 0.0
    """An implementation's fitted host-bound floor of one call (analysis/impl_kernels.py:
    host_floor), eager's autograd dispatch (estimates/eager_backward.py) or iosim's Triton
    launcher (estimates/launch_floor.py): the call takes at least this."""
    floor: str = ""
    """Which floor host_floor_s is, in words (compare's call line says it); '' for none."""
    calls: tuple[Call, ...] = ()
    """A training step's forward and backward calls, each as its pass alone is timed (`--pass
    fwdbwd`, measured profile); empty: one call."""

    @property
    def traffic(self) -> Traffic:
        """Every kernel's traffic terms, in launch order."""
        return Traffic(tuple(t for k in self.kernels for t in k.traffic))

    @property
    def totals(self) -> CostTotals:
        """The kernels summed (estimates/roofline.py:total_cost, as sweeps sum them)."""
        return total_cost(self.kernels)

    @property
    def matmul_flops(self) -> int:
        """Matmul FLOPs, summed over the kernels."""
        return int(self.totals.matmul_flops)

    @property
    def elementwise_flops(self) -> int:
        """Elementwise (fp32 vector) FLOPs, summed over the kernels."""
        return int(self.totals.elementwise_flops)

    @property
    def time_s(self) -> float:
        """Roofline time in seconds, summed over the kernels."""
        return float(self.totals.time_s)

    @property
    def call_time_s(self) -> float:
        """One call as do_bench times it: the kernels' time plus the implementation's time per
        call (measured profile), and at least its host-bound floor; the kernels' time alone
        for an algorithm or the spec profile; a training step's two calls summed (`calls`)."""
        if self.calls:
            return sum((c.call_time_s for c in self.calls), 0.0)
        return max(self.host_floor_s, self.time_s + self.call_overhead_s)

    @property
    def bound(self) -> str:
        """Memory-bound when the memory-bound kernels hold at least half the time."""
        return "memory" if self.totals.memory_bound else "compute"

    @property
    def underfilled(self) -> tuple[Occupancy, ...]:
        """The kernels whose grid cannot fill the GPU (utilisation below 1/2)."""
        return tuple(o for o in self.occupancy if o.fraction is not None and o.fraction < 0.5)

    @property
    def speedup_vs_standard(self) -> float:
        """Standard attention's time over this algorithm's."""
        return self.baseline_time_s / self.time_s

    @property
    def traffic_ratio_vs_standard(self) -> float:
        """Standard's HBM bytes over this algorithm's: how many times less it moves."""
        return self.baseline_hbm_bytes / self.hbm_bytes


class Theorem2(Record):
    """The paper's Theorem 2 leading terms per head, in elements, constants ignored."""

    sram_elements: int
    standard_elements: float
    """Θ(Nd + N²): here N·d + N·N_kv (with d_v ≠ d, d̄ = (d + d_v)/2 for d)."""
    flash_elements: float
    """Θ(N²d²/M): here N·N_kv·d²/M (with d_v ≠ d, N·N_kv·d̄²/M: the block rule's four rows are
    2(d + d_v) = 4d̄ elements)."""

    @property
    def ratio(self) -> float:
        """Standard's leading term over FlashAttention's: Θ(M/d²) up to N_kv/N terms."""
        return self.standard_elements / self.flash_elements


class Comparison(Record):
    """Everything `iosim compare` prints; `to_dict()` is the stable JSON."""

    workload: Workload
    hardware: Hardware
    requested_gpu: str
    gpu_note: str | None
    roofs: Roofs
    sram_bytes: int
    sram_source: str
    theorem2: Theorem2
    algorithms: tuple[AlgorithmEstimate, ...]
    paging: PageEfficiency | None = None
    """A paged workload's calibrated K/V transaction efficiency (None: a contiguous cache)."""

    @property
    def score_matrix_bytes_per_head(self) -> int:
        """One N×N matrix (S or P) of one head in the workload's dtype."""
        return self.workload.n * self.workload.n_kv * self.workload.element_bytes

    @property
    def compulsory_hbm_bytes(self) -> int:
        """Any exact forward: read Q, K, V once (K, V per KV head; a latent cache's V is part
        of K; a shared prefix's once, decoding.held_kv_rows), write O once (in its output
        dtype)."""
        from iosim.inputs.decoding import held_kv_rows

        w = self.workload
        q = w.batch * w.heads * w.n * w.d
        o = w.batch * w.heads * w.n * w.d_v
        rows = int(held_kv_rows(w.batch, w.n_kv, w.prefix_len, w.suffix_lens))
        k_v = w.kv_heads * rows * (w.d if w.latent_kv else w.d + w.d_v)
        return (q + k_v) * w.element_bytes + o * w.output_element_bytes

    def algorithm(self, name: str) -> AlgorithmEstimate:
        """The estimate of the algorithm named `name` (NotInResultError, a KeyError, if it was not run)."""
        for a in self.algorithms:
            if a.name == name:
                return a
        from iosim.errors import NotInResultError
        from iosim.inputs.excerpts import excerpt

        raise NotInResultError(f"no algorithm {excerpt(name)} was run here; this result has "
                               f"{', '.join(a.name for a in self.algorithms)}")

    def to_records(self) -> list[dict[str, Any]]:
        """One flat row per (algorithm, kernel), for pandas.DataFrame(...)."""
        from iosim.analysis.compare_records import kernel_dict

        return [{"algorithm": a.name, **kernel_dict(k)} for a in self.algorithms for k in a.kernels]

    def term_records(self) -> list[dict[str, Any]]:
        """One flat row per traffic term."""
        from iosim.analysis.compare_records import term_dict

        return [{"algorithm": a.name, **term_dict(t)} for a in self.algorithms for t in a.traffic]

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON (schema iosim.compare/1, compare_records.py)."""
        from iosim.analysis.compare_records import comparison_dict

        return comparison_dict(self)
