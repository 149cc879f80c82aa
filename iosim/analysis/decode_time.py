"""The time of a decoding step's kernels with the two costs the roofline of `compare` leaves out,
and the cascade-vs-split-KV verdict they give (issue 14).

Each kernel k of an estimate (compare's counts at the kernels' own tiles and split counts):

    T_k = t_launch + t_ramp + max(B_DRAM / (η·BW_HBM) + (B_L2 − B_DRAM) / (η·BW_L2),
                                  F_mm / P_mm + F_el / P_el) / u_k

  t_launch  one launch inside a CUDA graph, measured with empty kernels back to back
            (measured.launch_overhead; calibrate/decode_microbench.py). Cascade launches three
            kernels, split-KV one or two: at a small batch this is most of the difference.
  B_DRAM    the L2-aware DRAM estimate of the kernel (estimates/l2.py with shared_prefix_dram's
            rule: a shared prefix comes from DRAM once), over the measured HBM bandwidth.
  B_L2      every load and store of the kernel, which all pass through L2: the L2-oblivious
            count (each request's copy of a shared prefix included); B_L2 − B_DRAM of it hits in
            L2, at the L2's read rate measured by a microbenchmark (measured.l2_bandwidth).
            Split-KV over a shared prefix re-reads B copies of it: all but the first hit in L2,
            so they cost L2 time, not HBM time. The two times add rather than overlap: a
            decoding kernel's rate is set by the loads its SMs keep in flight (Little's law),
            and a load waiting on DRAM holds its slot as long as DRAM's latency, one hitting in
            L2 as long as L2's, so the time is Σ bytes_source / rate_source with each rate the
            in-flight bytes over that source's latency. (The first form, the larger of the two
            times, was judged on the fresh set of issue 14 and called 9 of 14: it is the
            record's "cascade_fresh" judgement; this one is judged on "cascade_fresh2".)
  F         the executed matmul and elementwise FLOPs over the measured matmul peak and the
            fitted softmax rate (they add, as under the measured profile).
  u_k       the grid's share of the GPU's resident slots, P / (c·S·⌈P / (c·S)⌉) with c
            programs per SM (analysis/split_choice.py's rule: a decoding kernel's rate follows
            the loads in flight); 1 for a kernel without a modelled grid (combine, merge).

  t_ramp, η the two fitted constants (measured.decode_fit): the time a kernel takes beyond its
            launch before and after its roofs bind (its programs' first dependent loads, its
            last programs' tail; an empty kernel has none of it), and the share of the two
            memory rates the decoding kernels reach. Fitted on the 24 shared-prefix batches of
            the fit and judge sets of issue 14 (each method at its measured fastest split
            counts: 48 times), judged on a fresh set (benchmarks/decode_choices_h200.py).

The roofs are the measured profile's (copy bandwidth, matmul rate) and the microbenchmarks'
(L2 rate, launch cost). Cascade's prefix and suffix kernels run their own split counts (the
measured kernels do: benchmarks/variants_h200.py times every pair of 1, 2, 4, ..., 64 prefix
and 1, ..., 32 suffix splits), and its prefix kernel its own query tile (64 rows, the suffix and
split-KV kernels 16: the kernels' decode_config). The merge kernel reads s_p prefix states and
s_s suffix states of one size each (one per query row and split), so its bytes at (s_p, s_s) are
the mean of cascade's merge at (s_p, s_p) and at (s_s, s_s) exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.analysis.compare import compare
from iosim.analysis.comparison import AlgorithmEstimate
from iosim.errors import IosimError
from iosim.estimates.occupancy import utilisation
from iosim.estimates.roofline import roofs_for
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import cdiv
from iosim.inputs.workload import Workload
from iosim.record import Record, replace

POWERS = (1, 2, 4, 8, 16, 32, 64, 128)


class Ceilings(Record):
    """The rates and the launch cost the decoding time model charges."""

    hbm_bytes_per_s: float
    l2_bytes_per_s: float
    matmul_flops_per_s: float
    vector_flops_per_s: float
    launch_s: float
    ramp_s: float = 0.0
    efficiency: float = 1.0


class KernelTime(Record):
    """One kernel's terms (seconds) and the share of the GPU its grid keeps busy."""

    kernel: str
    launch_s: float
    dram_s: float
    l2_s: float
    compute_s: float
    utilisation: float
    dram_bytes: float = 0.0
    """The DRAM estimate the dram term charges (a mean of two counts for cascade's merge)."""
    programs: int = 0
    """The grid's programs (0: no modelled grid)."""
    slots: int = 0
    """Programs the GPU holds at once (0: no modelled grid)."""

    l2_hit_s: float = 0.0
    """The bytes that hit in L2 (every load and store less the DRAM estimate) over the L2 rate."""

    @property
    def memory_s(self) -> float:
        """The DRAM bytes at the HBM rate plus the L2 hits at the L2 rate (the two add: see the
        module docstring), and never less than every byte at the L2 rate."""
        return max(self.dram_s + self.l2_hit_s, self.l2_s)

    @property
    def busy_s(self) -> float:
        """The memory time or the compute time, the larger, over the grid's utilisation."""
        return max(self.memory_s, self.compute_s) / self.utilisation

    @property
    def time_s(self) -> float:
        """The launch plus the busy time."""
        return self.launch_s + self.busy_s

    @property
    def bound(self) -> str:
        """Which roof set the busy time: dram, l2 or compute."""
        if self.compute_s >= self.memory_s:
            return "compute"
        return "dram" if self.dram_s >= self.l2_hit_s else "l2"


def ceilings(hardware: Hardware) -> Ceilings:
    """The measured profile's roofs, the measured L2 rate and launch cost of `hardware`."""
    m = hardware.measured
    if m is None or m.l2_bandwidth_bytes_per_s is None or m.launch_overhead_s is None:
        raise IosimError(f"{hardware.name}'s YAML has no measured l2_bandwidth and "
                         f"launch_overhead, which the decoding time model needs "
                         f"(benchmarks/variants_h200.py --sections microbench measures them)")
    roofs = roofs_for(hardware, "fp16", "measured")
    fit = m.decode_fit
    return Ceilings(roofs.hbm_bandwidth_bytes_per_s, m.l2_bandwidth_bytes_per_s,
                    roofs.matmul_flops_per_s, roofs.vector_flops_per_s, m.launch_overhead_s,
                    fit.ramp_s if fit else 0.0, fit.efficiency if fit else 1.0)


def kernel_times(estimate: AlgorithmEstimate, c: Ceilings, matmul_flops_per_s: float
                 ) -> tuple[KernelTime, ...]:
    """Every kernel of `estimate` under the model (matmul at the workload dtype's peak)."""
    out = []
    for k in estimate.kernels:
        dram = estimate.dram.of_kernel(k.name).bytes if estimate.dram is not None else k.hbm_bytes
        occupancy = next((o for o in estimate.occupancy if o.kernel == k.name), None)
        slots = occupancy.slots if occupancy is not None else None
        u = float(utilisation(occupancy.programs, slots)) if occupancy and slots else 1.0
        compute = k.matmul_flops / matmul_flops_per_s + k.elementwise_flops / c.vector_flops_per_s
        l2_rate = c.efficiency * c.l2_bytes_per_s
        out.append(KernelTime(k.name, c.launch_s + c.ramp_s,
                              dram / (c.efficiency * c.hbm_bytes_per_s), k.hbm_bytes / l2_rate,
                              compute, u, dram, occupancy.programs if occupancy else 0,
                              slots or 0, max(0, k.hbm_bytes - dram) / l2_rate))
    return tuple(out)


def _matmul_peak(hardware: Hardware, workload: Workload) -> float:
    return roofs_for(hardware, workload.dtype, "measured").matmul_flops_per_s


def _estimate(workload: Workload, hw: Hardware, algorithm: str, splits: int, block_q: int,
              block_kv: int) -> AlgorithmEstimate:
    result = compare(workload, hw, algorithms=[algorithm], block_q=block_q, block_kv=block_kv,
                     splits=splits, profile="measured")
    return next(a for a in result.algorithms if a.algorithm == algorithm)


class Timed(Record):
    """One method at one split choice: its kernels' times and total."""

    method: str
    splits: tuple[int, ...]
    """(s,) for split-KV; (prefix splits, suffix splits) for cascade."""
    kernels: tuple[KernelTime, ...]

    @property
    def time_s(self) -> float:
        """The kernels' times added (they run one after another)."""
        return sum(k.time_s for k in self.kernels)

    @property
    def dram_bytes(self) -> float:
        """The kernels' DRAM estimates added."""
        return sum(k.dram_bytes for k in self.kernels)

    def label(self) -> str:
        """'8' or '16+2'."""
        return "+".join(str(s) for s in self.splits)


class Tiles(Record):
    """The measured kernels' tiles (calibrate/kernels_variants.py DecodeConfig): query rows per
    tile of the split-KV and suffix kernels, the most of the prefix kernel, keys per tile."""

    block_q: int = 16
    prefix_block_q: int = 64
    block_kv: int = 64

    def prefix_rows(self, workload: Workload) -> int:
        """The prefix kernel's query tile: its B·g rows (B per head unpacked) rounded up to a
        power of two, at least 16 (tl.dot's least) and at most prefix_block_q, as the kernel's
        decode_split picks BLOCK_R."""
        g = workload.heads // workload.kv_heads
        rows = workload.batch * (g if g > 1 else 1)
        return max(16, min(self.prefix_block_q, 1 << max(0, rows - 1).bit_length()))


MEASURED_TILES = Tiles()
"""The tiles of benchmarks/variants_h200.py's kernels (its record's decode_config)."""


def splitkv_timed(workload: Workload, hardware: Hardware | str, splits: int,
                  tiles: Tiles = MEASURED_TILES) -> Timed:
    """Split-KV over each request's full KV at `splits` splits."""
    hw = _hardware(hardware)
    c = ceilings(hw)
    est = _estimate(workload, hw, "splitkv", splits, tiles.block_q, tiles.block_kv)
    return Timed("splitkv", (splits,), kernel_times(est, c, _matmul_peak(hw, workload)))


class CascadeTimer:
    """Cascade's kernels at any (prefix, suffix) split pair, each kernel counted once per split
    count it runs at."""

    def __init__(self, workload: Workload, hardware: Hardware | str, tiles: Tiles = MEASURED_TILES):
        self.workload, self.hw, self.tiles = workload, _hardware(hardware), tiles
        self.c = ceilings(self.hw)
        self.peak = _matmul_peak(self.hw, workload)
        self._prefix: dict[int, KernelTime] = {}
        self._suffix: dict[int, tuple[KernelTime, KernelTime]] = {}

    def _kernels(self, splits: int, block_q: int) -> dict[str, KernelTime]:
        est = _estimate(self.workload, self.hw, "cascade", splits, block_q, self.tiles.block_kv)
        return {k.kernel: k for k in kernel_times(est, self.c, self.peak)}

    def prefix(self, splits: int) -> KernelTime:
        """The prefix kernel at `splits` splits, its query tile as the kernel picks it."""
        if splits not in self._prefix:
            rows = self.tiles.prefix_rows(self.workload)
            self._prefix[splits] = self._kernels(splits, rows)["cascade_prefix"]
        return self._prefix[splits]

    def suffix_and_merge(self, splits: int) -> tuple[KernelTime, KernelTime]:
        """The suffix kernel and the merge (its states at `splits` of each pass) at `splits`."""
        if splits not in self._suffix:
            k = self._kernels(splits, self.tiles.block_q)
            self._suffix[splits] = (k["cascade_suffix"], k["cascade_merge"])
        return self._suffix[splits]

    def timed(self, prefix_splits: int, suffix_splits: int) -> Timed:
        """The three kernels at (prefix_splits, suffix_splits); the merge's terms the mean of
        its terms at either count (its two state sets are one size each)."""
        suffix, merge_s = self.suffix_and_merge(suffix_splits)
        merge_p = self.suffix_and_merge(prefix_splits)[1]
        merge = replace(merge_s, dram_s=(merge_s.dram_s + merge_p.dram_s) / 2,
                        l2_s=(merge_s.l2_s + merge_p.l2_s) / 2,
                        compute_s=(merge_s.compute_s + merge_p.compute_s) / 2,
                        dram_bytes=(merge_s.dram_bytes + merge_p.dram_bytes) / 2)
        return Timed("cascade", (prefix_splits, suffix_splits),
                     (self.prefix(prefix_splits), suffix, merge))


def _hardware(hardware: Hardware | str) -> Hardware:
    return resolve_hardware(hardware).hardware if isinstance(hardware, str) else hardware


def _counts(blocks: int, top: int) -> list[int]:
    return [s for s in POWERS if s <= min(blocks, top)]


class TimedVerdict(Record):
    """Each method at the split choice the model finds fastest, and the winner."""

    splitkv: Timed
    cascade: Timed

    @property
    def winner(self) -> str:
        """'cascade' or 'splitkv' (split-KV on a tie: one launch fewer)."""
        return "cascade" if self.cascade.time_s < self.splitkv.time_s else "splitkv"

    @property
    def ratio(self) -> float:
        """The loser's time over the winner's (≥ 1)."""
        a, b = self.splitkv.time_s, self.cascade.time_s
        return max(a, b) / min(a, b)


def timed_verdict(workload: Workload, hardware: Hardware | str, tiles: Tiles = MEASURED_TILES, *,
                  splitkv_top: int = 128, prefix_top: int = 64, suffix_top: int = 32
                  ) -> TimedVerdict:
    """Split-KV at 1, 2, 4, ..., splitkv_top splits and cascade at every pair of 1, ...,
    prefix_top and 1, ..., suffix_top (as benchmarks/variants_h200.py times them), each at
    its fastest under the model."""
    if workload.prefix_len is None or workload.suffix_lens is None:
        raise IosimError("the cascade verdict needs a shared-prefix batch (prefix_len and "
                         "suffix_lens)", param="prefix_len")
    hw = _hardware(hardware)
    full_blocks = int(cdiv(workload.n_kv, tiles.block_kv))
    split = min((splitkv_timed(workload, hw, s, tiles)
                 for s in _counts(full_blocks, splitkv_top)), key=lambda t: t.time_s)
    timer = CascadeTimer(workload, hw, tiles)
    prefix_blocks = int(cdiv(workload.prefix_len, tiles.block_kv))
    suffix_blocks = int(cdiv(max(workload.suffix_lens), tiles.block_kv))
    pairs: Sequence[tuple[int, int]] = [(p, s) for p in _counts(prefix_blocks, prefix_top)
                                        for s in _counts(suffix_blocks, suffix_top)]
    cascade = min((timer.timed(p, s) for p, s in pairs), key=lambda t: t.time_s)
    return TimedVerdict(split, cascade)


def rescaled(kernels: Sequence[KernelTime], ramp_s: float, efficiency: float,
             base: Ceilings) -> float:
    """The total time of `kernels` (made under `base`) at another ramp and efficiency."""
    total = 0.0
    scale = base.efficiency / efficiency
    for k in kernels:
        busy = max(k.memory_s * scale, k.compute_s) / k.utilisation
        total += base.launch_s + ramp_s + busy
    return total


def fit_ramp_efficiency(points: Sequence[tuple[Sequence[KernelTime], float]], base: Ceilings
                        ) -> tuple[float, float, float]:
    """(ramp_s, efficiency, rms log error) minimising Σ log(model/measured)² over `points`
    (kernels made under `base`, measured seconds): a grid of ramps 0..10 µs by 0.05 µs and
    efficiencies 0.50..1.00 by 0.01."""
    import math

    best = (math.inf, 0.0, 1.0)
    for i in range(201):
        ramp = i * 0.05e-6
        for j in range(51):
            eff = 0.5 + j * 0.01
            sse = sum(math.log(rescaled(ks, ramp, eff, base) / m) ** 2 for ks, m in points)
            if sse < best[0]:
                best = (sse, ramp, eff)
    return best[1], best[2], math.sqrt(best[0] / max(1, len(points)))
