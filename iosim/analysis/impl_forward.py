"""An implementation's fused forward kernel timed by the list schedule of its programs
(estimates/schedule.py), where its calibration fits one (`measured.impls.NAME.forward`):
FlexAttention's Inductor template on the H200.

Why a schedule and not the roofline ÷ utilisation: compiled alone, a flex call is kernel-bound
(kernel time / call time 0.97-1.01 on all 8 points of tests/data/h200-impl-flexfresh7.json),
and its kernel time is that of its programs, one per (query block, batch, head), each walking
its key blocks, placed on the SMs in launch order. A program of s key steps takes

    s · (the BLOCK_M × BLOCK_N tile's FLOPs at the slot's share of the SM's rate) / efficiency
      + program_overhead_s · loops

`loops` being the template's software-pipelined key loops: 1 without a mask, 2 with a causal
BlockMask (torch/_inductor/kernel/flex/templates/flex_attention.py.jinja: the partial blocks
with mask_mod first, then the full blocks, each loop its own pipeline fill and drain and its
own reads of the block mask's indices). The tile is the template's whole BLOCK_M rows even
where the query has fewer (a decode step of a GQA ratio that is not a power of two runs this
template with one query row padded to 128). What the overhead stands for: the program's
prologue and epilogue (its Q tile, the block mask's counts and indices, O and the
log-sum-exp written back), a few microseconds; not a per-call floor. Where N or N_kv is not a
multiple of 128 torch compiles the template without IS_DIVISIBLE (`aligned`) and every step
checks its bounds: its time is scaled by the fitted `unaligned_dN`. Where the tiling puts
more than one program on an SM (d 64: two), a program its SM was given alone at launch runs at the
fitted `lone_share` of the SM's rate, not at half of it (estimates/sm_sharing.py; round 9).

Where it does not apply: a head dim the fit has no efficiency for (the roofline as before),
and the queries torch hands to its split-KV decoding template instead (`runs_decoding_kernel`:
timed by analysis/impl_decoding.py where the profile has its figures, else the roofline).
"""

from __future__ import annotations

from iosim.estimates.eager_mask_fill import with_mask_fill
from iosim.estimates.eager_softmax import with_softmax_kernel
from iosim.estimates.roofline import Roofs
from iosim.inputs.hardware import BackwardSchedule, Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import replace

DECODING_QUERY_LEN = 128
"""torch/_inductor/kernel/flex/flex_decoding.py `_use_flex_decoding`: a query shorter than
this (`query.get_size()[-2] < 128`) runs the flex decoding template when its GQA ratio
Hq // Hkv is a power of two (`pw_of_two`); any other query runs the main template."""


ALIGNMENT = 128
"""torch/_inductor/kernel/flex/flex_attention.py: `IS_DIVISIBLE` only when both sequence lengths
are multiples of 128 (`Mod(seq_len_q, 128) == 0` and the same for seq_len_kv); otherwise every
key step loads K and V bounds-checked and applies the mask and its bounds to the whole tile
(templates/common.py.jinja: `CHECK_BLOCK_BOUNDARY=True` on each block, "even we applied mod &
mask to each block for non divisible seqlen")."""


def aligned(workload: Workload) -> bool:
    """Whether torch compiles the flex template with IS_DIVISIBLE (ALIGNMENT)."""
    return workload.n % ALIGNMENT == 0 and workload.n_kv % ALIGNMENT == 0


def runs_decoding_kernel(impl: Implementation, workload: Workload) -> bool:
    """Whether torch runs FlexAttention's split-KV decoding template for this workload (not the
    main template the forward schedule was fitted on): DECODING_QUERY_LEN's rule. Measured on
    the H200 (tests/data/h200-impl-flexrefit7.json): the decode steps at GQA ratios 5, 6 and 7
    (points 8, 15, 16) launch the main template alone, the one at ratio 4 (point 6) a fourth
    kernel, the decoding template's reduction."""
    if impl.runs != "flex" or workload.n >= DECODING_QUERY_LEN:
        return False
    ratio = workload.heads // workload.kv_heads
    return ratio > 0 and ratio & (ratio - 1) == 0


def forward_schedule(impl: Implementation, hardware: Hardware, tiling: Tiling | None,
                     workload: Workload) -> BackwardSchedule | None:
    """The fitted schedule of the implementation's fused forward kernel at this workload (its
    efficiency at the workload's head-dim bucket, the tiling's programs per SM), or None where
    none applies (the module docstring)."""
    from iosim.analysis.impl_kernels import head_dim_bucket

    impls = hardware.measured.impls if hardware.measured is not None else {}
    fitted = impls.get(impl.name)
    if (fitted is None or not fitted.forward or tiling is None or hardware.sm_count is None
            or workload.pass_ != "fwd" or runs_decoding_kernel(impl, workload)):
        return None
    efficiency = fitted.forward.get(f"efficiency_d{head_dim_bucket(workload.d)}")
    if efficiency is None:
        return None
    scale = 1.0
    if not aligned(workload):
        scale = fitted.forward.get(f"unaligned_d{head_dim_bucket(workload.d)}", 1.0)
    return BackwardSchedule(efficiency, fitted.forward["program_overhead_s"],
                            {workload.d: tiling.programs_per_sm}, fitted.forward_source,
                            causal_loops=int(fitted.forward.get("causal_loops", 1)),
                            step_scale=scale, lone_share=fitted.forward.get("lone_share"))


def impl_forward_roofs(roofs: Roofs, impl: Implementation, hardware: Hardware,
                       tiling: Tiling | None, workload: Workload) -> Roofs:
    """The measured roofs with the implementation's fitted forward schedule, which then times
    its fused forward kernel (estimates/roofline.py:scheduled), and an eager pipeline's softmax
    at the efficiency of the kernel torch picks for its rows (estimates/eager_softmax.py) and
    its causal fill at its class's (estimates/eager_mask_fill.py);
    unchanged where neither applies."""
    if impl.runs == "eager":
        roofs = with_softmax_kernel(roofs, workload.n_kv, workload.element_bytes)
        roofs = with_mask_fill(roofs, workload)
    schedule = forward_schedule(impl, hardware, tiling, workload)
    if schedule is None:
        return roofs
    return replace(roofs, schedule=schedule, schedules_untiled=True, schedules_forward=True,
                   sm_count=hardware.sm_count)


def forward_schedule_note(impl: Implementation, hardware: Hardware) -> str | None:
    """The line saying that the implementation's forward kernel is timed by its schedule."""
    impls = hardware.measured.impls if hardware.measured is not None else {}
    fitted = impls.get(impl.name)
    if fitted is None or not fitted.forward:
        return None
    f = fitted.forward
    by_dim = ", ".join(f"d {k.removeprefix('efficiency_d')} {v:g}" for k, v in f.items()
                       if k.startswith("efficiency_d"))
    unaligned = ", ".join(f"×{v:g} at d {k.removeprefix('unaligned_d')}" for k, v in f.items()
                          if k.startswith("unaligned_d"))
    return (f"{impl.name}'s fused forward kernel is timed by scheduling its programs on the SMs "
            f"(efficiency {by_dim}; {f['program_overhead_s'] * 1e6:g} µs per program and "
            f"key loop, {int(f.get('causal_loops', 1))} loops in a causal program"
            + (f"; steps {unaligned} where N or N_kv is not a multiple of {ALIGNMENT}"
               if unaligned else "")
            + (f"; a program given its SM alone at launch at {f['lone_share']:g} of its rate"
               if "lone_share" in f else "") + "; analysis/impl_forward.py)")
