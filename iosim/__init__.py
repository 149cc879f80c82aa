"""iosim: exact memory traffic (IO) of attention, and what it does to runtime on a roofline.

    >>> import iosim
    >>> result = iosim.compare(iosim.Workload(4096, d=64), "a100")
    >>> result.algorithm("flash1").hbm_bytes < result.algorithm("standard").hbm_bytes
    True

The core never imports click, rich, matplotlib, pandas, torch or triton.
"""

from iosim._version import __version__
from iosim.algorithms import ALGORITHMS, get_algorithm
from iosim.algorithms.loopnest import TileAccess, closed_form, walk
from iosim.algorithms.tilestream import TileStream, walk_arrays
from iosim.algorithms.traffic import Term, Traffic
from iosim.analysis.compare import compare
from iosim.analysis.comparison import AlgorithmEstimate, Comparison, Theorem2
from iosim.analysis.sweep import SweepResult, SweepSpec, sweep
from iosim.analysis.verify import Verification, verify
from iosim.errors import ConfigError, IosimError, TilingError, UnknownGpuError, WorkloadError
from iosim.estimates.footprint import Footprint
from iosim.estimates.l2 import DramEstimate, dram_estimate
from iosim.estimates.roofline import KernelEstimate, Roofs, roofs_for
from iosim.inputs.hardware import Hardware, list_hardware, load_hardware, resolve_hardware
from iosim.inputs.tiling import Tiling, make_tiling
from iosim.inputs.workload import Workload

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
    "dram_estimate",
    "get_algorithm",
    "list_hardware",
    "load_hardware",
    "make_tiling",
    "resolve_hardware",
    "roofs_for",
    "sweep",
    "verify",
    "walk",
    "walk_arrays",
]
