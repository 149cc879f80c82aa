"""The stable JSON of `iosim compare` (schema iosim.compare/1): a Comparison as plain dicts.

`Comparison.to_dict()` and `to_records()` build on these; field names and units are the
schema, so a change here is a schema change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from iosim._version import __version__
from iosim.estimates.l2_model import DramEstimate
from iosim.estimates.roofline import KernelEstimate
from iosim.inputs.workload import mask_fields

if TYPE_CHECKING:
    from iosim.analysis.comparison import AlgorithmEstimate, Comparison

SCHEMA = "iosim.compare/1"


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The whole comparison (hardware, workload, SRAM, Theorem 2, every algorithm): bytes, FLOPs,
    seconds and FLOP/s as in the core."""
    w, hw = c.workload, c.hardware
    return {
        "schema": SCHEMA,
        "iosim_version": __version__,
        "hardware": {
            "name": hw.name,
            "display_name": hw.display_name,
            "requested": c.requested_gpu,
            "path": hw.path,
            "profile": c.roofs.profile,
            "hbm_bandwidth_bytes_per_s": c.roofs.hbm_bandwidth_bytes_per_s,
            "matmul_peak_flops_per_s": c.roofs.matmul_flops_per_s,
            "vector_peak_flops_per_s": c.roofs.vector_flops_per_s,
            "hbm_capacity_bytes": hw.hbm_capacity_bytes,
            "notes": [n for n in (c.gpu_note, *c.roofs.notes) if n],
        },
        "workload": {
            "batch": w.batch, "heads": w.heads, "kv_heads": w.kv_heads, "n": w.n,
            "n_kv": w.n_kv, "d": w.d, "dtype": w.dtype, "element_bytes": w.element_bytes,
            "causal": w.causal, "pass": w.pass_, "unfused": list(w.unfused),
            "sparsity": w.sparsity, "d_v": w.d_v, "latent_kv": w.latent_kv,
            "output_dtype": w.output_dtype, "fp8_scales": w.fp8_scales, **mask_fields(w),
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in (
                ("page_size", w.page_size), ("prefix_len", w.prefix_len),
                ("suffix_lens", w.suffix_lens)) if v is not None},
        },
        "sram": {"bytes": c.sram_bytes, "elements": c.sram_bytes // w.element_bytes,
                 "source": c.sram_source},
        "theorem2": {
            "sram_elements": c.theorem2.sram_elements,
            "standard_leading_elements": c.theorem2.standard_elements,
            "flash_leading_elements": c.theorem2.flash_elements,
            "ratio": c.theorem2.ratio,
        },
        "score_matrix_bytes_per_head": c.score_matrix_bytes_per_head,
        "compulsory_hbm_bytes": c.compulsory_hbm_bytes,
        "algorithms": [_algorithm_dict(a) for a in c.algorithms],
        **_mask_dict(c),
        **({"paged_kv": c.paging.to_dict()} if c.paging is not None else {}),
    }


def _mask_dict(c: Comparison) -> dict[str, Any]:
    """"mask": each tiled kernel under a window or packed sequences (only with one)."""
    if not c.workload.masked:
        return {}
    from iosim.analysis.mask_summary import comparison_masks

    return {"mask": [m.to_dict() for m in comparison_masks(c.workload, c.algorithms,
                                                           c.hardware.sm_count)]}

def kernel_dict(k: KernelEstimate) -> dict[str, Any]:
    """One kernel on the roofline as a flat row."""
    return {
        "kernel": k.name, "label": k.label, "kind": k.kind,
        "hbm_read_bytes": k.hbm_read_bytes, "hbm_write_bytes": k.hbm_write_bytes,
        "hbm_bytes": k.hbm_bytes, "flops": k.flops, "matmul_flops": k.matmul_flops,
        "elementwise_flops": k.elementwise_flops,
        "intensity_flops_per_byte": k.intensity_flops_per_byte,
        "memory_time_s": k.memory_time_s, "compute_time_s": k.compute_time_s,
        "efficiency": k.efficiency, "time_s": k.time_s, "bound": k.bound,
        "dram_bytes_on_roof": k.dram_bytes, "utilisation": k.utilisation,
        "timed_by": k.timed_by,
    }


def term_dict(t: Any) -> dict[str, Any]:
    """One traffic term as a flat row."""
    return {"kernel": t.kernel, "tensor": t.tensor, "category": t.category, "op": t.op,
            "elements": t.elements, "element_bytes": t.element_bytes, "bytes": t.bytes,
            "cite": t.cite}


def _algorithm_dict(a: AlgorithmEstimate) -> dict[str, Any]:
    tiling = None if a.tiling is None else {
        "block_q": a.tiling.block_q, "block_kv": a.tiling.block_kv, "rule": a.tiling.rule,
        "splits": a.tiling.splits, "splits_rule": a.tiling.splits_rule,
        "bwd_block_q": a.tiling.bwd_block_q, "bwd_block_kv": a.tiling.bwd_block_kv,
        "programs_per_sm": a.tiling.programs_per_sm,
        "bwd_programs_per_sm": a.tiling.bwd_programs_per_sm, "fits_note": a.tiling.fits_note}
    return {
        "name": a.name,
        "algorithm": a.algorithm or a.name,
        "impl": None if a.impl is None else a.impl.name,
        "call_overhead_s": a.call_overhead_s,
        "host_floor_s": a.host_floor_s,
        "floor": a.floor,
        "call_time_s": a.call_time_s,
        "calls": [{"pass": k.pass_, "time_s": k.time_s, "call_overhead_s": k.call_overhead_s,
                   "host_floor_s": k.host_floor_s, "floor": k.floor,
                   "call_time_s": k.call_time_s} for k in a.calls],
        "title": a.title,
        "tiling": tiling,
        "hbm_read_bytes": a.hbm_read_bytes,
        "hbm_write_bytes": a.hbm_write_bytes,
        "hbm_bytes": a.hbm_bytes,
        "flops": a.flops,
        "matmul_flops": a.matmul_flops,
        "elementwise_flops": a.elementwise_flops,
        "flops_fa_convention": a.convention_flops,
        "time_s": a.time_s,
        "bound": a.bound,
        "speedup_vs_standard": a.speedup_vs_standard,
        "traffic_ratio_vs_standard": a.traffic_ratio_vs_standard,
        "footprint": {
            "io_bytes": a.footprint.io_bytes,
            "extra_bytes": a.footprint.extra_bytes,
            "extra": dict(a.footprint.extra),
            "total_bytes": a.footprint.total_bytes,
            "fits_in_hbm": a.footprint.fits,
            "saved_for_backward": dict(a.footprint.saved),
        },
        "occupancy": [{"kernel": o.kernel, "programs": o.programs, "sm_count": o.sm_count,
                       "programs_per_sm": o.per_sm, "utilisation": o.fraction,
                       "waves": o.waves} for o in a.occupancy],
        "kernels": [kernel_dict(k) for k in a.kernels],
        "bytes_by_tensor": a.traffic.by_category(),
        "terms": [term_dict(t) for t in a.traffic],
        "dram_estimate": None if a.dram is None else _dram_dict(a.dram),
    }


def _dram_dict(e: DramEstimate) -> dict[str, Any]:
    return {
        "model": e.model, "l2_bytes": e.l2_bytes, "concurrent_programs": e.concurrent_programs,
        "read_bytes": e.read_bytes, "write_bytes": e.write_bytes, "bytes": e.bytes,
        "l2_oblivious_bytes": e.oblivious_bytes,
        "terms": [{"kernel": t.kernel, "tensor": t.tensor, "op": t.op, "bytes": t.bytes,
                   "l2_oblivious_bytes": t.oblivious_bytes, "note": t.note} for t in e.terms],
    }
