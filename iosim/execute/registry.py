"""Executors by (algorithm, pass), and what one run of them needs.

An executor is a function of a `Run`: it launches its kernels on `run.hbm` (naming each launch
after the loop nest's kernel, so that counts line up term by term), holds its tiles in
`run.sram`, and reports the scores it holds to `run.scores`. The forward executors are in
forward.py; a backward executor registers itself the same way:

    @register("flash1", "bwd")
    def flash1_backward(run: Run) -> None: ...

It finds Q, K, V, dO and the forward's outputs (O and l, m or L) in `run.hbm`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iosim.execute.hbm import InstrumentedHBM, ScoreMeter, SramBudget
from iosim.execute.numerics import Precision, Problem


@dataclass(frozen=True, slots=True)
class Run:
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

    @property
    def dropout(self) -> bool:
        return "dropout" in self.unfused and self.dropout_p > 0


PassExecutor = Callable[[Run], None]

EXECUTORS: dict[tuple[str, str], PassExecutor] = {}
"""(algorithm name, "fwd" or "bwd") → executor."""


def register(algorithm: str, pass_: str) -> Callable[[PassExecutor], PassExecutor]:
    def add(executor: PassExecutor) -> PassExecutor:
        key = (algorithm, pass_)
        if key in EXECUTORS:
            raise ValueError(f"an executor for {key} is already registered")
        EXECUTORS[key] = executor
        return executor
    return add
