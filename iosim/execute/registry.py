"""Executors by (algorithm, pass), and what one run of them needs.

An executor is a function of a `Run`: it launches its kernels on `run.hbm` (naming each launch
after the loop nest's kernel, so that counts line up term by term), holds its tiles in
`run.sram`, and reports the scores it holds to `run.scores`. The forward executors are in
forward.py and splitkv.py, the backward executors in backward.py:

    @register("flash1", "bwd")
    def flash1_backward(run: Run) -> None: ...

A backward executor finds Q, K, V, dO and what its forward stored (O and l, m or L; standard's
P, P_drop and Z) in `run.hbm`, and leaves dQ, dK, dV there.
"""

from __future__ import annotations

from collections.abc import Callable

from iosim.execute.hbm import InstrumentedHBM, ScoreMeter, SramBudget
from iosim.execute.numerics import Precision, Problem
from iosim.record import Record


class Run(Record):
    """Everything an executor may touch: the instrumented memories and the problem."""

    hbm: InstrumentedHBM
    sram: SramBudget
    scores: ScoreMeter
    problem: Problem
    precision: Precision
    block_q: int
    block_kv: int
    unfused: tuple[str, ...] = ()
    """Standard attention's extra elementwise kernels (scale, mask, dropout)."""
    dropout_p: float = 0.0
    """Dropout probability, applied when 'dropout' is in `unfused` (on chip by tiled kernels)."""
    seed: int = 0
    bwd_block_q: int | None = None
    bwd_block_kv: int | None = None
    """The backward kernels' B_r × B_c where they differ from the forward's (None: the same)."""
    splits: int = 1
    """Split-KV: programs per query block, each over ⌈T_c/splits⌉ key blocks."""
    page_size: int | None = None
    """A paged KV cache (execute/paged.py): K, V are read through the block table (None: not)."""
    kv_lens: tuple[int, ...] | None = None
    """A ragged batch (a shared-prefix batch): the keys request b attends to (None: all N_kv)."""

    prefix_len: int | None = None
    """A shared-prefix batch's prefix tokens (cascade attends them once)."""

    def kv_len(self, b: int) -> int:
        """Keys request b attends to: its own length in a ragged batch, else N_kv."""
        return self.problem.n_kv if self.kv_lens is None else self.kv_lens[b]

    @property
    def dropout(self) -> bool:
        """Whether this run applies dropout ('dropout' unfused and p > 0)."""
        return "dropout" in self.unfused and self.dropout_p > 0

    @property
    def backward_blocks(self) -> tuple[int, int]:
        """(block_q, block_kv) of the backward: its own when given, else the forward's."""
        return (self.block_q if self.bwd_block_q is None else self.bwd_block_q,
                self.block_kv if self.bwd_block_kv is None else self.bwd_block_kv)


PassExecutor = Callable[[Run], None]

EXECUTORS: dict[tuple[str, str], PassExecutor] = {}
"""(algorithm name, "fwd" or "bwd") → executor."""


def register(algorithm: str, pass_: str) -> Callable[[PassExecutor], PassExecutor]:
    """Decorator: register `executor` as the one for (algorithm, pass_); a second one is an error."""
    def add(executor: PassExecutor) -> PassExecutor:
        key = (algorithm, pass_)
        if key in EXECUTORS:
            raise ValueError(f"an executor for {key} is already registered")
        EXECUTORS[key] = executor
        return executor
    return add
