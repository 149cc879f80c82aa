"""What an implementation (configs/impls) changes in an estimate: which loop nest runs (FA2's
split-KV rule picks the split kernel when the grid is small), the extra kernels it launches
(GQA expansion, a separate scale or mask pass), and the workload its loop nest sees."""

from __future__ import annotations

from iosim.algorithms import ALGORITHMS, Algorithm
from iosim.algorithms.loopnest import Access, FlopCount, Kernel
from iosim.algorithms.packing import packed_problem, packs_heads
from iosim.algorithms.splitkv import MAX_SPLITS, num_splits_heuristic
from iosim.analysis.dense_mask import DENSE_MASK, dense_mask_applies, with_dense_mask
from iosim.analysis.eager_mask import out_of_place_mask
from iosim.analysis.stream_k import RULE as STREAM_K
from iosim.analysis.stream_k import stream_k_splits
from iosim.errors import IosimError, arg
from iosim.estimates import eager_backward
from iosim.estimates.combine import TERMS as COMBINE_TERMS
from iosim.estimates.eager_fallback import FALLBACK_GEMMS, fallback_gemm_s
from iosim.estimates.roofline import KernelEstimate, Roofs
from iosim.inputs.hardware import BackwardSchedule, Hardware, ImplCalibration
from iosim.inputs.implementations import Implementation
from iosim.inputs.ints import cdiv
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import UNFUSED_OPS, Workload
from iosim.record import replace


def impl_workload(impl: Implementation, workload: Workload) -> Workload:
    """The workload the implementation's loop nest runs: an eager pipeline's separate scale and
    mask passes are standard attention's unfused ops (standard.py); a causal mask the
    implementation reads as a dense bias skips no block (analysis/dense_mask.py)."""
    if dense_mask_applies(impl, workload):
        workload = workload.with_(causal=False)
    ops = {k.kind for k in impl.extra_kernels_for(gqa=workload.group_size > 1,
                                                  causal=workload.causal)}
    unfused = tuple(op for op in UNFUSED_OPS if op in ops or op in workload.unfused)
    if unfused != workload.unfused:
        workload = workload.with_(unfused=unfused)
    if impl.runs == "flex" and workload.seqlens is not None and workload.packing != "document":
        # FlexAttention runs packed sequences as a document mask over one sequence
        workload = workload.with_(packing="document")
    return workload


def extra_kernels(impl: Implementation, workload: Workload) -> tuple[Kernel, ...]:
    """Kernels launched before the attention: K, V repeated per query head (repeat_interleave:
    read per KV head, written per query head) when the implementation expands GQA."""
    extras = impl.extra_kernels_for(gqa=workload.group_size > 1, causal=workload.causal)
    expand = [k for k in extras if k.kind == "gqa_expand"]
    if not expand:
        return ()
    cite = f"{impl.name}: {expand[0].source}"
    return (Kernel("gqa_expand", "K, V repeated per query head", "elementwise", (
        Access("K", "read", "prologue", "kv", "d", f"{cite}: read K", per_kv_head=True),
        Access("V", "read", "prologue", "kv", "d", f"{cite}: read V", per_kv_head=True),
        Access("K_rep", "write", "prologue", "kv", "d", f"{cite}: write K per query head"),
        Access("V_rep", "write", "prologue", "kv", "d", f"{cite}: write V per query head"),
    )),)


def impl_kernels(impl: Implementation, workload: Workload,
                 kernels: tuple[Kernel, ...], *, dense_mask: bool = False) -> tuple[Kernel, ...]:
    """The kernels the implementation launches: the loop nest's, with its extra kernels (the
    GQA expansion before them; a forward's causal mask as eager runs it, out of place
    (analysis/eager_mask.py), or built as a dense bias that the kernel reads where `dense_mask`
    (the call's dense_mask_applies: `workload` is then impl_workload's, not causal;
    analysis/dense_mask.py); in a backward pass its layout copies before the first backward
    kernel and its softmax backward split in two; a stream-K split kernel balanced over the
    SMs, analysis/stream_k.py)."""
    extras = {k.kind: k for k in impl.extra_kernels_for(gqa=workload.group_size > 1,
                                                        causal=workload.causal,
                                                        multihead=workload.heads > 1)}
    # the GQA expansion runs in the forward: a backward pass alone has only its gradient (the
    # group sum, which every backward loop nest already ends with)
    expand = extra_kernels(impl, workload) if workload.pass_ != "bwd" else ()
    if expand:
        kernels = tuple(_reading_the_copies(k) for k in kernels)
    elif BACKWARD_READS_COPIES and extra_kernels(impl, workload):
        # ... but its whole-tensor GEMMs read the copies autograd saved from the forward
        kernels = tuple(_reading_the_copies(k) if k.loop is None else k for k in kernels)
    if impl.walks_down and workload.pass_ != "bwd":
        kernels = tuple(_walking_down(k) for k in kernels)
    if impl.split_kv.rule == STREAM_K:
        kernels = tuple(replace(k, balanced=True) if k.split else k for k in kernels)
    out = list(expand + kernels)
    if dense_mask:
        mask = next(k for k in impl.extra_kernels if k.kind == DENSE_MASK)
        out = with_dense_mask(out, f"{impl.name}: {mask.source}")
    if "mask_out_of_place" in extras and workload.pass_ != "bwd":
        out = out_of_place_mask(out, f"{impl.name}: {extras['mask_out_of_place'].source}")
    first_bwd = next((i for i, k in enumerate(out) if k.name.startswith("bwd_")), None)
    if first_bwd is None:
        return tuple(out)
    if "mask_read" in extras:
        cite = f"{impl.name}: {extras['mask_read'].source}"
        out = [_reading_the_mask(k, cite) if k.name == "bwd_mask" else k for k in out]
    if "out_of_place" in extras:
        out = _out_of_place(out, f"{impl.name}: {extras['out_of_place'].source}")
    if "dk_first" in extras:
        out = _dk_first(out)
    if "softmax_mul" in extras:
        out = [part for k in out for part in (_softmax_in_two(k, impl, extras["softmax_mul"].source)
                                              if k.name == "bwd_softmax" else (k,))]
    if "layout_copy" in extras:
        cite = f"{impl.name}: {extras['layout_copy'].source}"
        out[first_bwd:first_bwd] = [Kernel(
            f"bwd_copy_{t}", f"{t} copied to the kernel's layout", "elementwise", (
                Access(f"{t}_in", "read", "prologue", "q", "dv", f"{cite}: read {t} as given"),
                Access(t, "write", "prologue", "q", "dv", f"{cite}: write {t} contiguous"),
            )) for t in ("dO", "O")]
    return tuple(out)


def _walking_down(kernel: Kernel) -> Kernel:
    """A fused forward kernel (one program per query block, not split) whose programs walk
    their key blocks from the last down (Implementation.forward_walk): the same tiles and
    bytes, in the order the L2 model (l2_launch_walk.py) follows."""
    if kernel.loop != "q" or kernel.grid != "blocks" or kernel.split or kernel.blocks != "forward":
        return kernel
    return replace(kernel, inner_descending=True)


def streams_past_the_l2(impl: Implementation | None, kernel: Kernel, workload: Workload) -> bool:
    """Whether the kernel's memory roof is every byte it touches (its L2-oblivious count), not the
    DRAM estimate: an eager pipeline's elementwise kernels in the forward (the scale, mask and
    softmax passes over S, the GQA expansion) stream at their own rate whether or not S is in
    the L2. Measured on the H200, every torch-naive forward of tests/data/h200-impl-{fit,fit2,
    calibrate,validation..validation6}.json: the scale kernel (read S, write S) moves 3.8-4.45
    TB/s of those bytes with S at 33-47 MB, inside the 60 MiB L2, and 4.0-4.3 TB/s with S at
    0.1-34 GB; the softmax kernel 0.8-2.6 TB/s (by row length) on either side. Charged the DRAM
    estimate, a scale pass over an S held in the L2 took 0.4 µs against 15.5 µs measured
    (validation, N 4,096, one head). The backward's eager kernels keep their own model
    (estimates/eager_backward.py)."""
    return (impl is not None and impl.runs == "eager" and kernel.kind == "elementwise"
            and workload.pass_ == "fwd")


def with_fallback_gemms(impl: Implementation | None, workload: Workload,
                        estimates: tuple[KernelEstimate, ...]) -> tuple[KernelEstimate, ...]:
    """An eager forward's two GEMMs at N_kv % 8 != 0 (fp16/bf16): S and P rows are not 16-byte
    aligned, so cuBLAS cannot run its TMA kernels and falls back to CUTLASS ones that move
    every operand through narrow accesses. Measured: every torch-naive forward with N_kv % 8
    != 0 in tests/data/h200-impl-{validation2..validation6,eagerfresh8}.json ran cutlass_75
    (odd N_kv) or cutlass_80 (even) kernels, 2-3× slower than nvjet on the same bytes. Each
    GEMM takes the longer of its roofline time and its fallback time, S's bytes over its own
    stream rate plus its FLOPs over its own compute rate (estimates/eager_fallback.py)."""
    if impl is None or impl.runs != "eager" or workload.pass_ != "fwd" \
            or workload.element_bytes != 2:
        return estimates
    parity = eager_backward.unaligned_class(workload.n_kv)
    if parity is None:
        return estimates
    out = []
    for e in estimates:
        fallback_s = (fallback_gemm_s(e.name, parity, workload) if e.name in FALLBACK_GEMMS
                      else 0.0)
        out.append(replace(e, time_s=fallback_s, timed_by="fallback-gemm")
                   if fallback_s > e.time_s else e)
    return tuple(out)


BACKWARD_READS_COPIES = True
"""bwd13's rule on (a backward's whole-tensor GEMMs read the GQA copies, `_reading_the_copies`);
False: main's (they read K and V per KV head), for the judges' 'before'."""
EXPANDED = {"K": "K_rep", "V": "V_rep"}
"""The copies per query head that the GQA expansion writes, by the tensor they copy."""


def _reading_the_copies(kernel: Kernel) -> Kernel:
    """An attention kernel after the GQA expansion: it reads the copies per query head
    (K_rep, V_rep), not K and V. Its tiles and bytes are those of the loop nest (each query
    head's programs read one head's tiles either way), but for the L2 model the copies are
    per query head: no two query heads share a tile, and the copies were just written by the
    expansion (the part of them still in L2 is not read from DRAM). ncu on the H200: iosim's
    Triton kernel at GQA ratios 3 to 12 read (g − 1) × |K, V| more than one pass over K, V
    (tests/data/h200-impl-dram3.csv, points 6, 8, 9, 10, 40, 42 of VALIDATION2).

    A backward pass alone launches no expansion, but its whole-tensor GEMMs (eager's
    dP = dO V_repᵀ, dQ = dS K_rep: autograd saved the forward's copies for them) read the
    copies too, none of them in L2. ncu (tests/data/backward-h200*.json, every eager GQA run):
    the dP GEMM reads the whole per-query-head V_rep, g × |V|, beside what dO it misses (fresh8
    N 1,650, 6 heads over 3: 3.47 MB, of which 2.53 MB is V_rep; bwd13)."""
    if not any(a.tensor in EXPANDED and a.op == "read" for a in kernel.accesses):
        return kernel
    return replace(kernel, accesses=tuple(
        replace(a, tensor=EXPANDED[a.tensor], per_kv_head=False)
        if a.tensor in EXPANDED and a.op == "read" else a for a in kernel.accesses))


def _reading_the_mask(kernel: Kernel, cite: str) -> Kernel:
    """The mask pass's backward (dS ← mask(dS)) with its read of the bool mask: one byte per
    score, per (batch, head) from the one broadcast copy (Access.broadcast)."""
    return replace(kernel, accesses=(*kernel.accesses, Access(
        "mask", "read", "prologue", "q", "kv", f"{cite}: read the bool mask", element="u8",
        broadcast=True)))


OUT_OF_PLACE = {"bwd_mask": "dS_masked", "bwd_scale": "dS_scaled"}
"""The new tensor each unfused pass's backward writes when it runs out of place."""


def _out_of_place(kernels: list[Kernel], cite: str) -> list[Kernel]:
    """The backward's mask and scale passes as autograd runs them: each reads the gradient the
    kernel before it wrote and writes a new N×N tensor (OUT_OF_PLACE), which the next pass and
    the dQ and dK GEMMs read. Every access keeps its bytes (an N×N read and an N×N write per
    pass), so the L2-oblivious count is standard's (Alg. 3 with the unfused passes); only which
    tensor each access touches changes, and with it what the L2 model holds."""
    grad = "dS"
    out = []
    for k in kernels:
        if k.name in OUT_OF_PLACE:
            new = OUT_OF_PLACE[k.name]
            accesses = tuple(
                replace(a, tensor=new, cite=f"{cite}: write {new}, a new tensor")
                if a.tensor == "dS" and a.op == "write" else
                replace(a, tensor=grad, cite=f"{cite}: read {grad}")
                if a.tensor == "dS" else a for a in k.accesses)
            label = f"{new} = {k.label.split(' ← ', 1)[-1].replace('dS', grad)}"
            out.append(replace(k, label=label, accesses=accesses))
            grad = new
        elif grad != "dS" and any(a.tensor == "dS" and a.op == "read" for a in k.accesses):
            out.append(replace(k, accesses=tuple(
                replace(a, tensor=grad, cite=f"{a.cite} ({grad}: {cite})")
                if a.tensor == "dS" and a.op == "read" else a for a in k.accesses)))
        else:
            out.append(k)
    return out


def _dk_first(kernels: list[Kernel]) -> list[Kernel]:
    """Alg. 3's dQ and dK GEMMs in the order autograd launches them: dK = dSᵀQ first, then
    dQ = dS K (impl.extra_kernels' dk_first: measured). The same kernels and bytes; the L2 model
    sees the other order (what the group sum and the closing evict find)."""
    names = [k.name for k in kernels]
    if "bwd_dq" not in names or "bwd_dk" not in names:
        return kernels
    dq, dk = names.index("bwd_dq"), names.index("bwd_dk")
    out = list(kernels)
    out[dq], out[dk] = kernels[dk], kernels[dq]
    return out


def _softmax_in_two(kernel: Kernel, impl: Implementation, source: str) -> tuple[Kernel, ...]:
    """Alg. 3 line 3 as eager PyTorch runs it: T = P∘dP (one pass), dS = T − P·rowsum(T)."""
    cite = f"{impl.name}: {source}"
    p_read, dp_read, ds_write = kernel.accesses
    mul = Kernel("bwd_softmax_mul", "T = P∘dP", "elementwise", (
        p_read, dp_read, Access("T", "write", "prologue", "q", "kv", f"{cite}: write T = P∘dP"),
    ), (FlopCount("elementwise", "score", 1, f"{cite}: P∘dP"),))
    rest = Kernel("bwd_softmax", "dS = T − P·rowsum(T)", "elementwise", (
        Access("T", "read", "prologue", "q", "kv", f"{cite}: read T"),
        Access("P", "read", "prologue", "q", "kv", f"{cite}: read P"), ds_write,
    ), (FlopCount("elementwise", "score", 3, f"{cite}: rowsum(T), P·rowsum, T − ·"),))
    return mul, rest


def impl_calibration(impl: Implementation, hardware: Hardware) -> ImplCalibration:
    """The implementation's fitted figures on this GPU (the GPU YAML's `measured.impls`);
    refused, saying what to run, when the YAML has none for it."""
    fitted = hardware.measured.impls if hardware.measured is not None else {}
    if impl.name not in fitted:
        have = ", ".join(fitted) or "none"
        raise IosimError(
            f"{hardware.path} has no measured.impls entry for {impl.name} (it has: {have}); "
            f"run `iosim calibrate --gpu {hardware.name} --impl {impl.name} --out FILE` on that "
            f"GPU (or with --from RECORD, a record of `iosim measure --record`), or use "
            f"{arg('profile', 'spec')}")
    return fitted[impl.name]


HEAD_DIM_BUCKETS = (64, 128, 256)
"""The head dims whose fused kernels an implementation's calibration may fit apart
(`fused_d64`, `fused_d128`, `fused_d256`): each runs its own tile configuration."""


def head_dim_bucket(d: int) -> int:
    """The calibration's head-dim bucket of d: the first of HEAD_DIM_BUCKETS at least d."""
    return next((b for b in HEAD_DIM_BUCKETS if d <= b), HEAD_DIM_BUCKETS[-1])


def impl_roofs(roofs: Roofs, impl: Implementation, hardware: Hardware, d: int = 128,
               pass_: str = "fwd") -> Roofs:
    """The measured roofs with the implementation's own fitted figures (the GPU YAML's
    `measured.impls` entry for it): the fused kernels' efficiency at head dim d (`fused_dN`
    where fitted, else `fused`), its split-KV pass's (`fused_split`), its memory efficiency
    (an eager kernel's own `memory_<kernel>`), solo rate and per-program bandwidth; refused
    when it has none. A pass with a backward takes the memory efficiency its backward fit was
    made with (`backward.memory`, else the forward's) and none of the forward-only terms (per
    head dim, split, solo rate, per-program bandwidth: fitted on forward calls only)."""
    fitted = impl_calibration(impl, hardware)
    eff = fitted.efficiency
    efficiency = {**roofs.efficiency, **{k: v for k, v in eff.items()
                                         if k in ("fused", "matmul", "elementwise")}}
    note = (f"{impl.name}'s efficiencies fitted on {hardware.name}: "
            + ", ".join(f"{k} {v:.3g}" for k, v in eff.items()))
    if fitted.call_overhead_s is not None:
        note += f", {fitted.call_overhead_s * 1e6:.1f} µs per call"
    terms = fitted.terms
    for key, say in (("host_floor_s", "host-bound floor"),
                     ("decode_host_floor_s", "decode host-bound floor")):
        if key in terms:
            note += f", {say} {terms[key] * 1e6:.0f} µs"
    if "solo_rate" in terms:
        note += f", solo rate {terms['solo_rate']:.3g}"
    if "solo_rate_one" in terms:  # estimates/lone_prologue.py
        note += f" ({terms['solo_rate_one']:.3g} where busy SMs hold one program)"
    if "lone_prologue_bandwidth" in terms:
        note += (f", a lone program's prologue at "
                 f"{terms['lone_prologue_bandwidth'] / 1e9:.1f} GB/s")
    if "program_bandwidth" in terms:
        note += f", {terms['program_bandwidth'] / 1e9:.1f} GB/s per program"
    if all(k in terms for k in COMBINE_TERMS):
        note += (f", split-KV combine kernel {terms['combine_latency_s'] * 1e6:.1f} µs + "
                 f"{terms['combine_program_bandwidth'] / 1e9:.1f} GB/s per program, "
                 f"{terms['combine_memory']:.2g} of the bandwidth")
    notes = (*roofs.notes, note)
    from iosim.analysis.lean_time import LEAN_TERMS, lean_note

    if pass_ == "fwd" and all(k in terms for k in LEAN_TERMS):
        notes = (*notes, lean_note(terms))
    from iosim.analysis.program_chain import CHAIN_TERMS, chain_note

    if pass_ == "fwd" and all(k in terms for k in CHAIN_TERMS):
        notes = (*notes, chain_note(terms))
    if pass_ == "fwd" and fitted.forward:
        from iosim.analysis.impl_forward import forward_schedule_note

        notes = (*notes, str(forward_schedule_note(impl, hardware)))
        from iosim.analysis.impl_decoding import DECODE_TERMS, decoding_note

        if all(k in fitted.forward for k in DECODE_TERMS):
            notes = (*notes, decoding_note(fitted.forward))
    if pass_ != "fwd":
        # an eager pipeline's backward `memory` is its own rule's (analysis/impl_backward.py),
        # which times its kernels: the roofline of the rest keeps the forward's
        backward_memory = None if impl.runs == "eager" else fitted.backward.get("memory")
        return replace(roofs, efficiency=efficiency, notes=notes,
                       memory_efficiency=(eff.get("memory") if backward_memory is None
                                          else backward_memory))
    by_dim = eff.get(f"fused_d{head_dim_bucket(d)}")
    if by_dim is not None:
        efficiency["fused"] = by_dim
    return replace(roofs, efficiency=efficiency, notes=notes,
                   memory_efficiency=eff.get("memory"),
                   kernel_efficiency=({"splitkv_attn": eff["fused_split"]}
                                      if "fused_split" in eff else {}),
                   kernel_memory_efficiency={k.removeprefix("memory_"): v for k, v in eff.items()
                                             if k.startswith("memory_")},
                   solo_rate=terms.get("solo_rate"),
                   program_bandwidth=terms.get("program_bandwidth"),
                   solo_rate_one=terms.get("solo_rate_one"),
                   lone_prologue_bandwidth=terms.get("lone_prologue_bandwidth"),
                   combine=({k: terms[k] for k in COMBINE_TERMS}
                            if all(k in terms for k in COMBINE_TERMS) else {}))


def _fitted(impl: Implementation, hardware: Hardware) -> ImplCalibration | None:
    impls = hardware.measured.impls if hardware.measured is not None else {}
    return impls.get(impl.name)


def call_overhead(impl: Implementation | None, hardware: Hardware, profile: str,
                  pass_: str = "fwd") -> float:
    """Seconds of host time per call the implementation's calibration fitted on this GPU (0
    for the spec profile, an algorithm, or a calibration without it): the forward's, the
    backward's (its `backward` fit), or both for a training step."""
    if impl is None or profile != "measured":
        return 0.0
    fitted = _fitted(impl, hardware)
    if fitted is None:
        return 0.0
    forward = fitted.call_overhead_s or 0.0
    backward = fitted.backward.get("call_overhead_s", 0.0)
    return {"fwd": forward, "bwd": backward}.get(pass_, forward + backward)


def host_floor(impl: Implementation | None, hardware: Hardware, profile: str,
               workload: Workload) -> float:
    """The host-bound floor of one forward call (measured profile): do_bench times a call from
    its start event to its end, and when the host needs longer to dispatch it (Python, the
    library's checks, a decode step's reshapes and split buffers) than the GPU needs to run the
    work queued ahead of it and the call's kernels, the GPU waits for the host: the call takes
    at least this. Fitted per implementation, one floor for prefill and one for a decode step
    (query length 1); 0 without a calibration or for a backward pass."""
    if impl is None or profile != "measured" or workload.pass_ != "fwd":
        return 0.0
    fitted = _fitted(impl, hardware)
    if fitted is None:
        return 0.0
    return fitted.terms.get("decode_host_floor_s" if workload.n == 1 else "host_floor_s", 0.0)


def impl_backward_roofs(roofs: Roofs, impl: Implementation, hardware: Hardware,
                        tiling: Tiling | None, d: int) -> Roofs:
    """The measured roofs with the implementation's fitted backward schedule (its
    `measured.impls.NAME.backward`), which times its fused backward kernel program by program
    (estimates/schedule.py) at the tiling's backward occupancy; unchanged without one."""
    fitted = _fitted(impl, hardware)
    if (fitted is None or not fitted.backward or tiling is None or hardware.sm_count is None
            or impl.runs == "eager"):  # eager's backward: analysis/impl_backward.py
        return roofs
    schedule = BackwardSchedule(fitted.backward["efficiency"],
                                fitted.backward["program_overhead_s"],
                                {d: tiling.bwd_programs_per_sm}, fitted.backward_source)
    return replace(roofs, schedule=schedule, schedules_untiled=True, sm_count=hardware.sm_count)


def impl_backward_note(impl: Implementation, hardware: Hardware) -> str | None:
    """The line saying that the implementation's backward calibration times its backward, or
    that it has none (then its backward is on the roofline, which no measurement judged)."""
    fitted = _fitted(impl, hardware)
    if fitted is None:
        return None
    if impl.backward_algorithm:
        return (f"{impl.name}'s backward runs the {impl.backward_algorithm} algorithm's loop "
                f"nest and is timed as `--algo {impl.backward_algorithm}` is (the GPU's "
                "measured backward schedule and the Python launcher's floor; judged by "
                "calibrate/backward_fit.py)")
    if not fitted.backward:
        return (f"{impl.name}'s backward has no fitted model on {hardware.name} (no "
                f"measured.impls.{impl.name}.backward in {hardware.path}): its kernels are on "
                "the roofline at the forward's fitted efficiencies, not validated against a "
                "measured backward")
    b = fitted.backward
    if impl.runs == "eager":
        return eager_backward.note(impl.name, b)
    return (f"{impl.name}'s fused backward kernel is timed by scheduling its programs on the "
            f"SMs (efficiency {b['efficiency']:g}, {b['program_overhead_s'] * 1e6:g} µs "
            f"per program, {b['call_overhead_s'] * 1e6:g} µs host time per backward call; "
            "calibrate/torch_bwd_fit.py)")


def impl_algorithm(impl: Implementation, workload: Workload, hardware: Hardware,
                   sram_bytes: int, splits: int | None) -> tuple[Algorithm, int | None]:
    """The loop nest the implementation runs for this workload, and the split count to use.

    FlashAttention-2's mha_fwd (flash_api.cpp set_params_splitkv, run_mha_fwd) computes
    num_splits_heuristic whenever dropout is 0 and runs the split kernel only when it gives
    more than one split; --splits forces the split kernel. cuDNN's lean decode (rule
    stream-k) splits a decode step's keys into as many splits as fill the SMs
    (analysis/stream_k.py)."""
    base = ALGORITHMS[impl.algorithm]
    if workload.pass_ != "fwd" or impl.split_kv.rule == "none":
        return base, None
    splitkv = ALGORITHMS["splitkv"]
    if splits is not None:
        return splitkv, splits
    if impl.split_kv.rule == STREAM_K:
        chosen = stream_k_splits(impl, workload, hardware, sram_bytes)
        return (splitkv, chosen) if chosen > 1 else (base, None)
    if hardware.sm_count is None:
        return base, None
    from iosim.inputs.code_tiles import lookup
    from iosim.inputs.implementations import dtype_code

    code = lookup(impl.split_kv.tiles, impl.shared_memory, d=workload.d, causal=workload.causal,
                  dtype=dtype_code(workload.dtype), element_bytes=workload.element_bytes, cc=0,
                  smem_per_block=sram_bytes, smem_per_sm=sram_bytes)
    if not code.found:
        return base, None
    rows, heads = packed_problem(workload.n, workload.heads, workload.kv_heads,
                                 packs_heads(workload.n, workload.heads, workload.kv_heads)
                                 and not workload.masked)
    chosen = num_splits_heuristic(workload.batch * heads * cdiv(rows, 64),
                                  2 * hardware.sm_count, cdiv(workload.n_kv, code.block_kv),
                                  MAX_SPLITS)
    return (splitkv, None) if chosen > 1 else (base, None)
