"""Shared test setup."""

from __future__ import annotations

import os
import shutil

import matplotlib

matplotlib.use("Agg")

# Without an NVIDIA GPU the Triton kernels run under Triton's interpreter; the variable must be
# set before triton is first imported (its own jit functions are decorated at import).
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")
