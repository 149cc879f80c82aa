"""What a calibration run needs (torch, triton, a CUDA GPU), and what it found."""

from __future__ import annotations

import importlib
import platform
import re
import subprocess
from typing import Any

from iosim.calibrate import CalibrationError

INSTALL_HINT = 'pip install -e ".[gpu]"'


def require_gpu(what: str = "calibrate") -> None:
    """Raise CalibrationError naming the first missing piece: torch, triton, or a CUDA GPU
    (`what` is the command, for the message)."""
    for module in ("torch", "triton"):
        try:
            importlib.import_module(module)
        except ImportError:
            raise CalibrationError(
                f"{what} needs {module}, which is not installed; on a machine with an NVIDIA "
                f"GPU run {INSTALL_HINT}"
            ) from None
    import os

    import torch

    if os.environ.get("TRITON_INTERPRET") == "1":
        raise CalibrationError("TRITON_INTERPRET=1 is set: the interpreter is for tests; unset it "
                               "to time kernels on the GPU")
    if not torch.cuda.is_available():
        raise CalibrationError(
            f"{what} needs a CUDA GPU and torch found none (torch {torch.__version__}, "
            f"torch.cuda.is_available() is False); run it on the GPU you want to calibrate"
        )


def _driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (nvidia-smi not available)"
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else (
        "unknown")


def device_info() -> dict[str, Any]:
    """The device and software a run measured on (recorded in the measurement file)."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "name": torch.cuda.get_device_name(0),
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
        "memory_bytes": int(props.total_memory),
        "driver": _driver_version(),
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
    }


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def names_match(device_name: str, yaml_name: str, aliases: tuple[str, ...] = ()) -> bool:
    """Whether the device (e.g. 'NVIDIA H200') is the GPU a YAML describes (name h200).

    The YAML's model token (the first word of its name or an alias: h200, a100, rtx) must
    appear among the device name's words; 'rtx-4090' needs both rtx and 4090.
    """
    device = _tokens(device_name)
    for name in (yaml_name, *aliases):
        words = re.findall(r"[a-z0-9]+", name.lower())
        wanted = [w for w in words if not re.fullmatch(r"\d+gb|sxm\d*|pcie|hgx", w)]
        if wanted and all(w in device for w in wanted):
            return True
    return False
