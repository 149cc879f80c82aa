"""The measured profile's time of iosim's Triton MLA prefill kernel (qk head dim ≠ v head dim:
calibrate/kernels_mla_prefill.py, FA2's loop nest at 128 × 64 tiles), from the GPU YAML's
`measured.mla_prefill_time`:

    time = scale · roofline time + wave_s · waves + launch_s,
    waves = ⌈programs / (programs per SM · SMs)⌉

scale: the roofline's fused rate as this kernel reaches it (its efficiency was fitted on
d_v = d kernels); wave_s: what each program pays once apart from its key loop (Q_i's load, the
pipeline's fill, O_i's and L_i's stores), in series on its SM, since the kernel's 128 KiB of
shared memory leaves one program per SM; launch_s: the launch as do_bench sees it. All three
are fitted (not hardware facts) by benchmarks/mla_prefill_compare.py on the FIT set of
tests/data/h200-mla-prefill.json and judged on sets measured after (reports/variants-h200.md).
The rule times only what it was fitted on: flash2's fused forward kernel at d ≠ d_v, the
kernel's tiles (128 × 64) at its one program per SM (tiles given: FA2's code tiles for d = 192
are the same size but two programs per SM, FA2's CUDA kernel, which the fit did not see), fp16
or bf16, decompressed K and V (not MLA's latent decode).
"""

from __future__ import annotations

from iosim.algorithms.loopnest import Kernel
from iosim.inputs.hardware import MlaPrefillTime
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload

FITTED_TILES = (128, 64)
"""block_q × block_kv of kernels_mla_prefill.PrefillConfig, the only tiles the fit saw."""
FITTED_DTYPES = ("fp16", "bf16")


def mla_prefill_kernel(algorithm: str, kernel: Kernel, workload: Workload,
                       tiling: Tiling | None) -> bool:
    """Whether `measured.mla_prefill_time` times this kernel (the module docstring)."""
    return (algorithm == "flash2" and kernel.name == "attn" and kernel.blocks == "forward"
            and workload.d_v != workload.d and not workload.latent_kv
            and workload.dtype in FITTED_DTYPES and tiling is not None
            and (tiling.block_q, tiling.block_kv) == FITTED_TILES
            and tiling.programs_per_sm == 1)


def mla_prefill_time_s(roofline_s: float, programs: int, per_sm: int, sm_count: int,
                       fit: MlaPrefillTime) -> float:
    """The kernel's time: fit.scale · roofline_s + fit.wave_s · waves + fit.launch_s."""
    waves = -(-int(programs) // max(1, per_sm * sm_count))
    return fit.scale * roofline_s + fit.wave_s * waves + fit.launch_s


def mla_prefill_note(fit: MlaPrefillTime) -> str:
    """The line saying the MLA prefill kernel is timed by this model."""
    return (f"MLA prefill (d ≠ d_v, 128 × 64 tiles): iosim's Triton kernel's fitted time, "
            f"{fit.scale:g} × roofline + {fit.wave_s * 1e6:g} µs per wave + "
            f"{fit.launch_s * 1e6:g} µs per launch (measured.mla_prefill_time)")
