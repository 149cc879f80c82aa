"""The NumPy executor: the algorithms run on real numbers through an instrumented HBM.

Three ways to count one algorithm must agree to the element: the closed form and the tile walk
(both from the loop-nest description in iosim/algorithms) and this executor, which is written by
hand, independently, as the papers' loops (forward.py, splitkv.py, backward.py). `iosim verify`
runs all three; reference.py has the float64 formulas the outputs and gradients are checked on.

    >>> from iosim import Workload
    >>> from iosim.execute import execute, random_inputs, precision
    >>> w = Workload(256, d=16)
    >>> x = random_inputs(w, 0, precision("float64"))
    >>> execute("flash1", w, x, block_q=64, block_kv=64).peak_scores
    4096
"""

# importing the executor modules registers them
from iosim.execute import backward as _backward  # noqa: F401
from iosim.execute import cascade as _cascade  # noqa: F401
from iosim.execute import forward as _forward  # noqa: F401
from iosim.execute import splitkv as _splitkv  # noqa: F401
from iosim.execute import triton_bwd as _triton_bwd  # noqa: F401
from iosim.execute.hbm import (
    ExecutorError,
    InstrumentedHBM,
    ScoreMeter,
    SramBudget,
    SramExceededError,
)
from iosim.execute.numerics import EXECUTOR_DTYPES, Precision, Problem, precision, problem_of
from iosim.execute.reference import reference_attention, reference_gradients
from iosim.execute.registry import EXECUTORS, PassExecutor, Run, register
from iosim.execute.run import (
    MAX_SCORES,
    MAX_TILE_PAIRS,
    Execution,
    backward_sram_bytes,
    check_limits,
    default_sram_bytes,
    execute,
    forward_sram_bytes,
    random_inputs,
    refusal,
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
    "backward_sram_bytes",
    "check_limits",
    "default_sram_bytes",
    "execute",
    "forward_sram_bytes",
    "precision",
    "problem_of",
    "random_inputs",
    "reference_attention",
    "reference_gradients",
    "refusal",
    "register",
]
