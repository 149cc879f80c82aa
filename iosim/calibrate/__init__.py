"""Calibration against a real GPU: Triton kernels timed and counted, efficiencies fitted.

    plan.py       what is measured (pure): ceilings, the standard path, the fused kernel
    records.py    the measurement file (pure): one JSON written by a run, read back by the fit
    fit.py        per-kernel-class efficiencies and predictions from iosim's model (pure)
    yaml_out.py   the `measured:` section of a hardware YAML (pure)
    ncu.py        Nsight Compute: the command line and its CSV (pure); runs ncu in a subprocess
    env.py        what a run needs (torch, triton, a CUDA GPU) and the device it found
    run.py        one run on the GPU: the plan measured, then counted under ncu
    kernels.py    the Triton kernels (imports torch and triton)
    bench.py      checks each kernel against torch, then times it (imports torch and triton)
    ncu_target.py the program ncu profiles (imports torch and triton)
    report.py     CSV, Markdown and plots of predicted vs measured (pandas, matplotlib)

Only kernels.py, bench.py and ncu_target.py import torch or triton, and only when a run on a GPU
asks for them; everything else runs on a CPU from a recorded measurement file.
"""

from __future__ import annotations

from iosim.errors import IosimError


class CalibrationError(IosimError):
    """A calibration that cannot start or must stop (no GPU, a kernel that computes wrongly, ...)."""


__all__ = ["CalibrationError"]
