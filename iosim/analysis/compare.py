"""`compare`: every algorithm's traffic, FLOPs and roofline time for one workload on one GPU.

The orchestration only: the request is checked by requests.py, tiles are sized by
inputs/tiling.py and each algorithm's `finish_tiling`, kernels are costed by
estimates/roofline.py, the footprint by estimates/footprint.py; the result types are
comparison.py and their JSON compare_records.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms import ALGORITHMS, Algorithm
from iosim.algorithms.closedform import Dims, kernel_programs
from iosim.algorithms.loopnest import Kernel
from iosim.analysis.comparison import AlgorithmEstimate, Comparison, Theorem2
from iosim.analysis.dense_mask import dense_mask_applies, dense_mask_estimates
from iosim.analysis.impl_backward import (
    as_impl,
    backward_nest,
    eager_backward_fit,
    eager_backward_kernels,
    impl_backward_floor,
    timed_as_calls,
    training_step,
)
from iosim.analysis.impl_decoding import impl_decoding_estimates
from iosim.analysis.impl_forward import impl_forward_roofs
from iosim.analysis.impl_kernels import (
    call_overhead,
    host_floor,
    impl_algorithm,
    impl_backward_note,
    impl_backward_roofs,
    impl_kernels,
    impl_roofs,
    impl_workload,
    streams_past_the_l2,
    with_fallback_gemms,
)
from iosim.analysis.lean_time import lean_estimates
from iosim.analysis.program_chain import chain_estimates
from iosim.analysis.requests import check_splits, choose_algorithms, default_algorithms, sram_budget
from iosim.analysis.stream_k import RULE as STREAM_K
from iosim.analysis.stream_k import stream_k_rule
from iosim.errors import IosimError, arg
from iosim.estimates.alg4_time import alg4_kernel, alg4_note
from iosim.estimates.footprint import footprint, kept_for_backward
from iosim.estimates.l2 import dram_estimate
from iosim.estimates.l2_model import DramEstimate
from iosim.estimates.launch_floor import triton_backward_floor
from iosim.estimates.mla_prefill_time import (
    mla_prefill_kernel,
    mla_prefill_note,
    mla_prefill_time_s,
)
from iosim.estimates.occupancy import compute_capability
from iosim.estimates.paged_dram import page_efficiency, paged_roof_bytes
from iosim.estimates.roofline import (
    Profile,
    Roofs,
    estimate_kernels,
    kernel_programs_per_sm,
    roofs_for,
    schedule_note,
    scheduled,
    total_cost,
)
from iosim.estimates.spills import spill_terms
from iosim.estimates.training import (
    Occupancy,
    convention_flops,
)
from iosim.inputs.api_values import as_names, check_choice, check_instance, check_path_text
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.inputs.impl_features import refuse_missing_features
from iosim.inputs.implementations import Implementation
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.tiling import TILE_RULES, Tiling, TilingInputs, make_tiling
from iosim.inputs.workload import WORKLOAD_EXAMPLE, Workload
from iosim.record import replace

__all__ = ["compare", "default_algorithms", "dram_or_none", "finish_tiling", "finished_tiling", "tiling_for"]


def dram_or_none(kernels: Sequence[Kernel], workload: Workload, tiling: Tiling | None,
                  hardware: Hardware) -> DramEstimate | None:
    """The L2 model's DRAM estimate of `kernels`, or None on a GPU whose YAML lacks the L2 size
    or the SM count."""
    if hardware.l2_bytes is None or hardware.sm_count is None:
        return None
    return dram_estimate(kernels, workload, tiling, hardware)


def tiling_for(
    algorithm: Algorithm, workload: Workload, sram_bytes: int, sram_source: str, *,
    block_q: int | None = None, block_kv: int | None = None, hardware: Hardware | None = None,
    tile_rule: str = "code", impl: Implementation | None = None,
) -> Tiling | None:
    """The forward's blocks of a tiled algorithm (make_tiling for its loop order and its tile
    table), else None."""
    if not algorithm.tiled:
        return None
    return make_tiling(workload, sram_bytes, sram_source, block_q=block_q, block_kv=block_kv,
                       outer=algorithm.outer, code_for=algorithm.code_tiles,
                       cc=gpu_cc(hardware), sram_per_sm=gpu_sram_per_sm(hardware),
                       tile_rule=tile_rule, impl=impl)


def finished_tiling(
    algorithm: Algorithm, workload: Workload, hardware: Hardware, sram_bytes: int,
    sram_source: str, *, block_q: int | None, block_kv: int | None, tiles: str,
    splits: int | None, impl: Implementation | None = None,
) -> Tiling | None:
    """The tiling `compare` runs `algorithm` at: its forward blocks (tiling_for) completed by
    its finish_tiling (splitkv's splits, flash2's backward blocks); None untiled."""
    tiling = tiling_for(algorithm, workload, sram_bytes, sram_source, block_q=block_q,
                        block_kv=block_kv, hardware=hardware, tile_rule=tiles, impl=impl)
    return finish_tiling(algorithm, tiling, workload, hardware, tiles=tiles, splits=splits,
                         blocks_given=block_q is not None or block_kv is not None, impl=impl)


def finish_tiling(algorithm: Algorithm, tiling: Tiling | None, workload: Workload,
                  hardware: Hardware, *, tiles: str, splits: int | None, blocks_given: bool,
                  impl: Implementation | None = None) -> Tiling | None:
    """The forward blocks `tiling` (tiling_for's, which no split count changes) completed by
    the algorithm's finish_tiling at `splits`, as compare completes them."""
    base = None if tiling is None else TilingInputs.of(
        workload, tiling.sram_bytes, cc=gpu_cc(hardware),
        sram_per_sm=gpu_sram_per_sm(hardware), tile_rule=tiles, impl=impl)
    return algorithm.finish_tiling(tiling, workload, sm_count=hardware.sm_count, splits=splits,
                                   blocks_given=blocks_given, base=base)


def gpu_cc(hardware: Hardware | None) -> int:
    """The GPU's compute capability as an int (80 for sm_80) from its YAML architecture; 0 when
    there is no GPU or it is unknown (the tile tables' `cc` match)."""
    return compute_capability(hardware.architecture) if hardware is not None else 0


def gpu_sram_per_sm(hardware: Hardware | None) -> int:
    """The GPU's shared memory per SM in bytes (the tile tables' `smem_per_sm_below` match); 0 when
    there is no GPU or its YAML lacks sram_per_sm."""
    return int(hardware.sram_per_sm_bytes or 0) if hardware is not None else 0


def compare(
    workload: Workload,
    hardware: Hardware | str,
    *,
    algorithms: Sequence[str] | None = None,
    block_q: int | None = None,
    block_kv: int | None = None,
    sram: str | int | None = None,
    sram_elements: int | None = None,
    profile: Profile = "spec",
    splits: int | None = None,
    tiles: str = "code",
    impl: str | Implementation | None = None,
) -> Comparison:
    """Count, place on the roofline and time every requested algorithm; returns a Comparison.

    Default algorithms: standard, flash1, flash2, and splitkv for a decoding step (N = 1,
    forward). `hardware` is a Hardware, a shipped GPU name or alias, or a path to a YAML file.
    `block_q`/`block_kv` are B_r/B_c in rows (default: flash1 Alg. 1 line 1, flash2 and splitkv
    FlashAttention-2's code per head dim; `tiles="alg1"` gives flash2 Alg. 1's rule too), `sram`
    a size ("192KiB" or bytes) and `sram_elements` elements, replacing the GPU's sram_per_block.
    Speed-ups and traffic ratios are against standard attention, computed even when not listed.
    `splits` is splitkv's number of KV splits (default: FlashAttention-2's heuristic). `impl`
    (a shipped name or a YAML path, configs/impls) estimates that implementation instead of the
    algorithms: its loop nest, its tiles, its extra kernels, beside standard attention.
    Every modelled grid's time is divided by its waves' utilisation (estimates/occupancy.py).
    """
    check_instance("workload", workload, Workload, WORKLOAD_EXAMPLE)
    if isinstance(hardware, Hardware):
        hw, requested, note = hardware, hardware.name, None
    else:
        requested = check_path_text("hardware", hardware)
        resolved = resolve_hardware(requested)
        hw, note = resolved.hardware, resolved.note
    if algorithms is not None:
        algorithms = as_names("algorithms", algorithms)
    check_splits([splits])
    check_choice("tiles", tiles, TILE_RULES, what="tile rule")
    implementation = impl if isinstance(impl, Implementation) or impl is None else \
        get_implementation(impl)
    if implementation is not None:
        if algorithms:
            raise IosimError(f"{arg('impl')} picks the algorithm ({implementation.name} runs "
                             f"{implementation.algorithm}); drop {arg('algorithms')}")
        implementation.check_shape(workload.d, workload.dtype, gqa=workload.group_size > 1,
                                   d_v=workload.d_v, latent_kv=workload.latent_kv,
                                   backward=workload.pass_ != "fwd")
        refuse_missing_features(implementation, impl_workload(implementation, workload))
    chosen = choose_algorithms(algorithms or default_algorithms(workload),
                               splits_given=splits is not None) if implementation is None else ()
    roofs = roofs_for(hw, workload.dtype, profile, causal=workload.causal)
    gpu_roofs = roofs

    def pass_roofs(pass_: str) -> Roofs:
        """The roofs of one pass: an implementation's fitted figures for it (measured)."""
        if implementation is None or profile != "measured":
            return gpu_roofs
        own = impl_roofs(gpu_roofs, implementation, hw, workload.d, pass_)
        timed_by = impl_backward_note(implementation, hw) if pass_ != "fwd" else None
        return own if timed_by is None else replace(own, notes=(*own.notes, timed_by))

    roofs = pass_roofs(workload.pass_)
    sram_bytes, sram_source = sram_budget(hw, workload.element_bytes, sram=sram,
                                          sram_elements=sram_elements)
    paging = page_efficiency(hw, workload.page_size) if workload.page_size else None

    triton_scheduled: list[bool] = []  # whether iosim's own kernels ran on the fitted schedule
    alg4_timed: list[bool] = []  # whether flash1's backward ran on Alg. 4's per-tile model
    mla_timed: list[bool] = []  # whether the MLA prefill kernel ran on its fitted time

    def estimate(algorithm: Algorithm, baseline: tuple[float, int] | None, *,
                 impl_: Implementation | None = None, impl_splits: int | None = None,
                 pass_: str | None = None, gpu: bool = False) -> AlgorithmEstimate:
        # pass_: one call of a training step (its own pass's workload and roofs); gpu: the
        # GPU's roofs, as `--algo` has them (an implementation's backward run by an algorithm)
        given = workload if pass_ is None else workload.with_(pass_=pass_)
        roofs = gpu_roofs if gpu else pass_roofs(given.pass_)
        w = given if impl_ is None else impl_workload(impl_, given)
        tiling = finished_tiling(algorithm, w, hw, sram_bytes, sram_source, block_q=block_q,
                                 block_kv=block_kv, tiles=tiles,
                                 splits=splits if impl_splits is None else impl_splits,
                                 impl=impl_)
        if (tiling is not None and impl_ is not None and impl_splits is not None
                and splits is None and impl_.split_kv.rule == STREAM_K):
            tiling = replace(tiling, splits_rule=stream_k_rule(impl_, w, hw, sram_bytes,
                                                               impl_splits))
        kernels = algorithm.kernels(w, tiling)
        dense = dense_mask_applies(impl_, given)
        if impl_ is not None:
            kernels = impl_kernels(impl_, w, kernels, dense_mask=dense)
        dram = dram_or_none(kernels, w, tiling, hw)
        if dram is not None and impl_ is not None and w.pass_ == "fwd":
            spilled = spill_terms(impl_, kernels, Dims.of(w, tiling))
            if spilled:  # the kernel's register spills written back (estimates/spills.py)
                dram = replace(dram, terms=(*dram.terms, *spilled))
        if profile == "measured" and dram is None:
            raise IosimError(f"the measured profile charges DRAM bytes, which need l2_size and "
                             f"sm_count in {hw.path}")
        on_roof = None if profile != "measured" or dram is None else {
            k.name: paged_roof_bytes(k, [(t.tensor, t.bytes) for t in dram.of_kernel(k.name).terms],
                                     paging) for k in kernels
            if not streams_past_the_l2(impl_, k, w)}
        own_roofs = roofs
        if impl_ is not None:  # Alg. 4's constants are iosim's Triton kernel's, not a library's
            own_roofs = replace(roofs, alg4=None)
        if impl_ is not None and profile == "measured" and w.pass_ != "fwd":
            own_roofs = impl_backward_roofs(own_roofs, impl_, hw, tiling, w.d)
        elif impl_ is not None and profile == "measured":
            own_roofs = impl_forward_roofs(own_roofs, impl_, hw, tiling, w)
        kernel_estimates = estimate_kernels(kernels, w, tiling, own_roofs, dram_bytes=on_roof,
                                            sm_count=hw.sm_count)
        if profile == "measured":
            kernel_estimates = with_fallback_gemms(impl_, w, kernel_estimates)
        eager_fit = eager_backward_fit(impl_, hw, profile) if w.pass_ == "bwd" else None
        if eager_fit is not None and dram is not None:  # the rule torch_bwd_fit judges
            kernel_estimates = eager_backward_kernels(kernel_estimates, dram, w, own_roofs,
                                                      eager_fit)
        if impl_ is not None and profile == "measured" and w.pass_ == "fwd":
            kernel_estimates = impl_decoding_estimates(kernel_estimates, impl_, hw, w)
            kernel_estimates = lean_estimates(kernel_estimates, impl_, hw, w, sram_bytes)
            kernel_estimates = chain_estimates(kernel_estimates, tuple(kernels), impl_, hw, w,
                                               tiling)
            if dense:
                kernel_estimates = dense_mask_estimates(kernel_estimates, impl_, hw, given)
        dims = Dims.of(w, tiling)
        fit = own_roofs.mla_prefill
        if impl_ is None and fit is not None and hw.sm_count:
            timed = [mla_prefill_kernel(algorithm.name, k, w, tiling) for k in kernels]
            kernel_estimates = tuple(
                replace(e, time_s=mla_prefill_time_s(
                    e.time_s, int(kernel_programs(k, dims)), kernel_programs_per_sm(k, tiling),
                    hw.sm_count, fit), timed_by="mla-prefill") if on else e
                for k, e, on in zip(kernels, kernel_estimates, timed, strict=True))
            mla_timed.append(any(timed))
        if impl_ is None:
            triton_scheduled.append(any(scheduled(k, own_roofs) for k in kernels))
            alg4_timed.append(own_roofs.alg4 is not None and any(alg4_kernel(k) for k in kernels))
        totals = total_cost(kernel_estimates)
        time_s, hbm = float(totals.time_s), int(totals.hbm_read_bytes + totals.hbm_write_bytes)
        base_time, base_bytes = baseline if baseline is not None else (time_s, hbm)
        saved, fixed = kept_for_backward(algorithm, w)
        occupancy = tuple(
            Occupancy(k.name, k.label, int(kernel_programs(k, dims)), hw.sm_count,
                      kernel_programs_per_sm(k, tiling))
            for k in kernels if k.grid is not None)
        # the host-bound floor of one call: an implementation's fitted one, or, for iosim's own
        # Triton backward timed by its measured schedule, the launcher floor it was judged with
        own_triton_backward = (impl_ is None and algorithm.name == "triton" and w.pass_ == "bwd"
                               and triton_scheduled[-1])
        if own_triton_backward:
            floor = triton_backward_floor([(e.name, e.time_s) for e in kernel_estimates])
            floor_words = "the Python launcher's, estimates/launch_floor.py"
        elif w.pass_ == "bwd":  # the implementation's backward host floor, where fitted
            floor, floor_words = impl_backward_floor(impl_, hw, profile, kernel_estimates)
        else:
            floor = host_floor(impl_, hw, profile, w)
            floor_words = f"{impl_.name}'s fitted floor" if impl_ is not None else ""
        return AlgorithmEstimate(
            impl_.name if impl_ is not None else algorithm.name,
            f"{impl_.title} — {algorithm.name}'s loop nest" if impl_ is not None
            else algorithm.title, tiling, kernel_estimates,
            footprint(kernels, w, hw, saved=saved, tiling=tiling, fixed=fixed),
            base_time, base_bytes, occupancy,
            convention_flops(w, recompute=algorithm.tiled), dram, algorithm.name, impl_,
            call_overhead(impl_, hw, profile, w.pass_), floor, floor_words if floor else "")

    def step(algorithm: Algorithm, baseline: tuple[float, int], *,
             impl_: Implementation | None = None, impl_splits: int | None = None
             ) -> AlgorithmEstimate:
        """The estimate; a training step of the measured profile (an implementation, iosim's
        Triton kernels) as its forward call + its backward call, each as validated."""
        nest = backward_nest(impl_)
        if nest is not None and workload.pass_ != "fwd":
            # its backward is that algorithm's, timed as `--algo` times it (impl_backward.py)
            whole = as_impl(estimate(nest, baseline, gpu=True), impl_)
        else:
            whole = estimate(algorithm, baseline, impl_=impl_, impl_splits=impl_splits)
        if not timed_as_calls(impl_, algorithm.name, workload.pass_, profile):
            return whole
        own, own_splits = (algorithm, impl_splits) if impl_ is None else impl_algorithm(
            impl_, workload.with_(pass_="fwd"), hw, sram_bytes, splits)
        forward = estimate(own, baseline, impl_=impl_, impl_splits=own_splits, pass_="fwd")
        if nest is not None:
            backward = as_impl(estimate(nest, baseline, pass_="bwd", gpu=True), impl_)
        else:
            backward = estimate(algorithm, baseline, impl_=impl_, impl_splits=impl_splits,
                                pass_="bwd")
        return training_step(whole, forward, backward)

    standard = estimate(ALGORITHMS["standard"], None)
    baseline = (standard.time_s, standard.hbm_bytes)
    if implementation is not None:
        algorithm, impl_splits = impl_algorithm(implementation, workload, hw, sram_bytes, splits)
        results: tuple[AlgorithmEstimate, ...] = (standard, step(
            algorithm, baseline, impl_=implementation, impl_splits=impl_splits))
    else:
        results = tuple(standard if a.name == "standard" else step(a, baseline)
                        for a in chosen)

    if roofs.schedule is not None and any(triton_scheduled):  # said only where it applies
        roofs = replace(roofs, notes=(*roofs.notes, schedule_note(roofs.schedule)))
    if roofs.alg4 is not None and any(alg4_timed):
        roofs = replace(roofs, notes=(*roofs.notes, alg4_note(roofs.alg4)))
    if roofs.mla_prefill is not None and any(mla_timed):
        roofs = replace(roofs, notes=(*roofs.notes, mla_prefill_note(roofs.mla_prefill)))
    m = sram_bytes // workload.element_bytes
    n, n_kv, d = workload.n, workload.n_kv, workload.d
    if workload.d_v == d:
        theorem2 = Theorem2(m, float(n * d + n * n_kv), n * n_kv * d * d / m)
    else:  # Q, K d wide and V, O d_v wide: the mean d̄ = (d + d_v)/2 where the paper has d
        mean = (d + workload.d_v) / 2
        theorem2 = Theorem2(m, n * mean + n * n_kv, n * n_kv * mean * mean / m)
    return Comparison(workload, hw, requested, note, roofs, sram_bytes, sram_source, theorem2,
                      results, paging)
