"""The NumPy executor: the algorithms run on real numbers through an instrumented HBM.

Three ways to count one algorithm must agree to the element: the closed form and the tile walk
(both from the loop-nest description in iosim/algorithms) and this executor, which is written by
hand, independently, as the papers' loops (forward.py). `iosim verify` runs all three.

    >>> from iosim import Workload
    >>> from iosim.execute import execute, random_inputs, precision
    >>> w = Workload(256, d=16)
    >>> x = random_inputs(w, 0, precision("float64"))
    >>> execute("flash1", w, x, block_q=64, block_kv=64).peak_scores
    4096
"""

from iosim.execute import forward as _forward  # noqa: F401  (registers the forward executors)
from iosim.execute.hbm import (
    ExecutorError,
    InstrumentedHBM,
    ScoreMeter,
    SramBudget,
    SramExceededError,
)
from iosim.execute.numerics import EXECUTOR_DTYPES, Precision, Problem, precision
from iosim.execute.registry import EXECUTORS, PassExecutor, Run, register
from iosim.execute.run import (
    MAX_SCORES,
    MAX_TILE_PAIRS,
    Execution,
    check_limits,
    execute,
    random_inputs,
    reference_attention,
    working_set_bytes,
)

__all__ = [
    "EXECUTORS",
    "EXECUTOR_DTYPES",
    "MAX_SCORES",
    "MAX_TILE_PAIRS",
    "Execution",
    "ExecutorError",
    "InstrumentedHBM",
    "PassExecutor",
    "Precision",
    "Problem",
    "Run",
    "ScoreMeter",
    "SramBudget",
    "SramExceededError",
    "check_limits",
    "execute",
    "precision",
    "random_inputs",
    "reference_attention",
    "register",
    "working_set_bytes",
]
