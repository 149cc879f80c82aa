"""Calibration against a real GPU: Triton kernels timed and counted, efficiencies fitted.

    plan.py       what is measured (pure): ceilings, the standard path, the fused kernel
    records.py    the measurement file (pure): one JSON written by a run, read back by the fit
    fit.py        per-kernel-class efficiencies and predictions from iosim's model (pure)
    fit_result.py what the fit found, and the checks a calibration report prints (pure)
    backward_fit.py the backward's DRAM and time model fitted on its H200 record (pure)
    torch_bwd_dram.py SDPA's and eager's backward records, iosim's model of each point and
                  every kernel's DRAM bytes beside ncu's (pure)
    torch_bwd_fit.py their judgement and the sdpa-flash and eager backward time fit; the
                  backward report (pure)
    points.py     measured points for the hierarchical roofline (pure)
    yaml_out.py   the `measured:` section of a hardware YAML, keys a fit does not own kept (pure)
    impl_fit.py   each implementation's efficiencies and host time per call (pure)
    impl_run.py   `calibrate --impl`'s grid and run (measure.py's runner, injectable)
    ncu.py        Nsight Compute: the command line and its CSV (pure); runs ncu in a subprocess
    env.py        what a run needs (torch, triton, a CUDA GPU) and the device it found
    run.py        one run on the GPU: the plan measured, then counted under ncu
    kernels.py    the Triton kernels (imports torch and triton); kernels_common.py the
                  @triton.jit helpers every kernel here shares (imports triton)
    bench.py      checks each kernel against torch, then times it (imports torch and triton)
    ncu_target.py the program ncu profiles (imports torch and triton)
    kernels_bwd.py, bench_bwd.py, ncu_bwd.py, ncu_bwd_target.py  the same for the backward
    measure.py    `iosim measure`: one implementation timed at the user's shape (imports torch)

The report (CSV, Markdown and plots of predicted vs measured) is output/calibration_report.py.

Only the modules marked so (and env.py, to look for them) import torch or triton, and only when
a run on a GPU asks for them; everything else runs on a CPU from a recorded measurement file.
"""

from __future__ import annotations

from iosim.errors import IosimError


class CalibrationError(IosimError):
    """A calibration that cannot start or must stop (no GPU, a kernel that computes wrongly, ...)."""


__all__ = ["CalibrationError"]
