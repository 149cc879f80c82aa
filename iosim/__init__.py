"""iosim: exact memory traffic (IO) of attention, and what it does to runtime on a roofline.

    >>> import iosim
    >>> result = iosim.compare(iosim.Workload(4096, d=64), "a100")
    >>> result.algorithm("flash1").hbm_bytes < result.algorithm("standard").hbm_bytes
    True

The core never imports click, rich, matplotlib, pandas, torch or triton.
"""

from typing import TYPE_CHECKING, Any

from iosim._version import __version__

_PUBLIC = {
    "ALGORITHMS": "iosim.algorithms",
    "AlgorithmEstimate": "iosim.analysis.comparison",
    "Comparison": "iosim.analysis.comparison",
    "ConfigError": "iosim.errors",
    "DramEstimate": "iosim.estimates.l2_model",
    "Footprint": "iosim.estimates.footprint",
    "Hardware": "iosim.inputs.hardware",
    "IosimError": "iosim.errors",
    "KernelEstimate": "iosim.estimates.roofline",
    "NotInResultError": "iosim.errors",
    "Roofs": "iosim.estimates.roofline",
    "SweepResult": "iosim.analysis.sweep",
    "SweepSpec": "iosim.analysis.sweep",
    "Term": "iosim.algorithms.traffic",
    "Theorem2": "iosim.analysis.comparison",
    "TileAccess": "iosim.algorithms.tilewalk",
    "TileStream": "iosim.algorithms.tilestream",
    "Tiling": "iosim.inputs.tiling",
    "TilingError": "iosim.errors",
    "Traffic": "iosim.algorithms.traffic",
    "UnknownGpuError": "iosim.errors",
    "Verification": "iosim.analysis.verification",
    "Workload": "iosim.inputs.workload",
    "WorkloadError": "iosim.errors",
    "closed_form": "iosim.algorithms.closedform",
    "compare": "iosim.analysis.compare",
    "dram_estimate": "iosim.estimates.l2",
    "get_algorithm": "iosim.algorithms",
    "list_hardware": "iosim.inputs.gpus",
    "load_hardware": "iosim.inputs.hardware_yaml",
    "make_tiling": "iosim.inputs.tiling",
    "resolve_hardware": "iosim.inputs.gpus",
    "roofs_for": "iosim.estimates.roofline",
    "sweep": "iosim.analysis.sweep",
    "verify": "iosim.analysis.verify",
    "walk": "iosim.algorithms.tilewalk",
    "walk_arrays": "iosim.algorithms.tilestream",
    "Model": "iosim.inputs.models",
    "ModelComparison": "iosim.analysis.model_compare",
    "compare_model": "iosim.analysis.model_compare",
    "list_models": "iosim.inputs.model_files",
    "load_model": "iosim.inputs.model_files",
    "model_layers": "iosim.inputs.model_presets",
    "resolve_model": "iosim.inputs.model_files",
}
"""Each public name and the module it lives in: imported on first use (PEP 562), so that
`import iosim` loads none of the executor, sweeps or plots until a caller asks for them."""

if TYPE_CHECKING:
    from iosim.algorithms import ALGORITHMS, get_algorithm
    from iosim.algorithms.closedform import closed_form
    from iosim.algorithms.tilestream import TileStream, walk_arrays
    from iosim.algorithms.tilewalk import TileAccess, walk
    from iosim.algorithms.traffic import Term, Traffic
    from iosim.analysis.compare import compare
    from iosim.analysis.comparison import AlgorithmEstimate, Comparison, Theorem2
    from iosim.analysis.model_compare import ModelComparison, compare_model
    from iosim.analysis.sweep import SweepResult, SweepSpec, sweep
    from iosim.analysis.verification import Verification
    from iosim.analysis.verify import verify
    from iosim.errors import (
        ConfigError,
        IosimError,
        NotInResultError,
        TilingError,
        UnknownGpuError,
        WorkloadError,
    )
    from iosim.estimates.footprint import Footprint
    from iosim.estimates.l2 import dram_estimate
    from iosim.estimates.l2_model import DramEstimate
    from iosim.estimates.roofline import KernelEstimate, Roofs, roofs_for
    from iosim.inputs.gpus import list_hardware, resolve_hardware
    from iosim.inputs.hardware import Hardware
    from iosim.inputs.hardware_yaml import load_hardware
    from iosim.inputs.model_files import list_models, load_model, resolve_model
    from iosim.inputs.model_presets import model_layers
    from iosim.inputs.models import Model
    from iosim.inputs.tiling import Tiling, make_tiling
    from iosim.inputs.workload import Workload


def __getattr__(name: str) -> Any:
    """The public name `name`, imported from its module on first use."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'iosim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ALGORITHMS",
    "AlgorithmEstimate",
    "Comparison",
    "ConfigError",
    "DramEstimate",
    "Footprint",
    "Hardware",
    "IosimError",
    "KernelEstimate",
    "Model",
    "ModelComparison",
    "NotInResultError",
    "Roofs",
    "SweepResult",
    "SweepSpec",
    "Term",
    "Theorem2",
    "TileAccess",
    "TileStream",
    "Tiling",
    "TilingError",
    "Traffic",
    "UnknownGpuError",
    "Verification",
    "Workload",
    "WorkloadError",
    "__version__",
    "closed_form",
    "compare",
    "compare_model",
    "dram_estimate",
    "get_algorithm",
    "list_hardware",
    "list_models",
    "load_hardware",
    "load_model",
    "make_tiling",
    "model_layers",
    "resolve_hardware",
    "resolve_model",
    "roofs_for",
    "sweep",
    "verify",
    "walk",
    "walk_arrays",
]
