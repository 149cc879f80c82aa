"""A resident grid lasts its longest program's chain of key blocks (issue 11, round cudnn11),
where the implementation's calibration has the two figures (`measured.impls.NAME`'s
CHAIN_TERMS; sdpa-efficient on the H200).

What the kernel does (PyTorch's memory-efficient attention, `fmha_cutlassF_*` from
aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernel_forward.h): one program per
(query block, head, batch), no split of the keys (configs/impls/sdpa-efficient.yaml
split_kv: none); each program walks every key block of its row in turn — load a K tile,
QKᵀ, the online softmax, load a V tile, PV — and the next block's loads wait on this one's.
When every program of the grid is resident at once (programs ≤ programs per SM × SMs: one
wave), no later program is left to hide that wait behind, and the kernel takes as long as its
longest program:

    time ≥ ⌈N_kv / block_kv⌉ · (chain_block_s + block_kv · (d + d_v) · element_bytes
                                                 ÷ chain_program_bandwidth)

(the longest program walks all N_kv keys, causal or not: the last query block's row). The
seen decode steps measure it: the fmha kernel of b·h = 80-120 programs at d 64 (64 × 64 tiles,
16 KiB of K and V a block) took 2.43-2.46 µs per key block at every N_kv from 24,000 to 36,000
(tests/data/h200-impl-validation{3,4,5,6}.json #35), d 128's 64 × 128 tiles 4.2 µs (fit2 #15),
d 256's 32 × 128 6.1-6.4 µs (fit2 #20, validation2 #37): a fixed wait per block plus the
block's bytes at one program's rate (calibrate/chain_fit.py). The roofline (the grid's DRAM
bytes over the GPU's bandwidth) predicted these steps 25-68 % fast (validation6 #35: −67 %,
the implementation's worst point in reports/impl-validation/validation.md). A grid of more
than one wave is left to the roofline: its programs overlap one another's waits.
"""

from __future__ import annotations

from collections.abc import Mapping

from iosim.algorithms.closedform import Dims, kernel_programs
from iosim.algorithms.loopnest import Kernel
from iosim.estimates.roofline import KernelEstimate, kernel_programs_per_sm
from iosim.inputs.hardware import Hardware
from iosim.inputs.implementations import Implementation
from iosim.inputs.ints import cdiv
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import replace

CHAIN_TERMS = ("chain_block_s", "chain_program_bandwidth")
"""The fitted figures, both needed: the wait per key block (s) and one program's rate over a
block's K and V bytes (B/s)."""


def chain_time_s(workload: Workload, block_kv: int, terms: Mapping[str, float]) -> float:
    """The longest program's chain of key blocks (module docstring)."""
    blocks = cdiv(workload.n_kv, block_kv)
    block_bytes = block_kv * (workload.d + workload.d_v) * workload.element_bytes  # K and V
    return float(blocks * (terms["chain_block_s"]
                           + block_bytes / terms["chain_program_bandwidth"]))


def resident(kernel: Kernel, dims: Dims, tiling: Tiling, sm_count: int) -> bool:
    """Whether the kernel's whole grid fits on the GPU at once (one wave)."""
    programs = kernel_programs(kernel, dims)
    return programs is not None and int(programs) <= (
        kernel_programs_per_sm(kernel, tiling) * sm_count)


def chain_estimates(estimates: tuple[KernelEstimate, ...], kernels: tuple[Kernel, ...],
                    impl: Implementation | None, hardware: Hardware, workload: Workload,
                    tiling: Tiling | None) -> tuple[KernelEstimate, ...]:
    """The estimates with each resident forward kernel timed at least its chain (timed_by
    "chain") where the implementation's calibration has CHAIN_TERMS; unchanged elsewhere."""
    impls = hardware.measured.impls if hardware.measured is not None else {}
    fitted = impls.get(impl.name) if impl is not None else None
    if (fitted is None or tiling is None or hardware.sm_count is None
            or workload.pass_ != "fwd" or not all(k in fitted.terms for k in CHAIN_TERMS)):
        return estimates
    dims = Dims.of(workload, tiling)
    out = []
    for kernel, e in zip(kernels, estimates, strict=True):
        if kernel.grid is not None and resident(kernel, dims, tiling, hardware.sm_count):
            chain = chain_time_s(workload, int(tiling.block_kv), fitted.terms)
            if chain > e.time_s:
                e = replace(e, time_s=chain, timed_by="chain")
        out.append(e)
    return tuple(out)


def chain_note(terms: Mapping[str, float]) -> str:
    """The line saying how a resident grid is timed (compare's notes)."""
    return (f"a grid resident at once lasts its longest program: {terms['chain_block_s'] * 1e6:.2f}"
            f" µs per key block + its K and V tiles at "
            f"{terms['chain_program_bandwidth'] / 1e9:.1f} GB/s (analysis/program_chain.py)")
