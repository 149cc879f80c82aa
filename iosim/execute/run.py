"""Running an executor: seeded inputs, size limits, the passes of a workload, the results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from iosim.algorithms.loopnest import TileAccess
from iosim.execute.hbm import ExecutorError, InstrumentedHBM, ScoreMeter, SramBudget
from iosim.execute.numerics import Precision, Problem, precision
from iosim.execute.registry import EXECUTORS, Run
from iosim.traffic import Op
from iosim.workload import Workload

Array = np.ndarray[Any, Any]

MAX_SCORES = 1 << 24
"""Scores (batch × heads × N × N_kv) one executor run may compute: standard attention holds
them all in (numpy) HBM, S and P at 8 bytes each in float64 — 256 MiB at the limit."""

MAX_TILE_PAIRS = 1 << 16
"""(query block, key block) pairs one run may visit (batch × heads × T_r × T_c): each is a few
numpy calls in a Python loop, about 10-50 µs, so a run stays within seconds."""


def problem_of(workload: Workload) -> Problem:
    return Problem(workload.batch, workload.heads, workload.heads_kv, workload.n,
                   workload.seq_kv, workload.d, workload.causal)


def check_limits(workload: Workload, block_q: int, block_kv: int) -> None:
    """Refuse runs too large to execute, pointing to the closed form, which has no such limit."""
    w = workload
    scores = w.batch * w.heads * w.n * w.seq_kv
    sizes = f"--n {w.n}" + (f" --n-kv {w.seq_kv}" if w.seq_kv != w.n else "")
    if scores > MAX_SCORES:
        raise ExecutorError(
            f"{sizes} is too large for an executor run: batch × heads × N × N_kv = {scores:,} "
            f"scores, the limit is {MAX_SCORES:,} (e.g. N = N_kv = 4096 for one head); for the "
            f"exact counts at this size use the closed form: iosim compare {sizes} --gpu a100"
        )
    pairs = w.batch * w.heads * -(-w.n // block_q) * -(-w.seq_kv // block_kv)
    if pairs > MAX_TILE_PAIRS:
        raise ExecutorError(
            f"blocks {block_q} × {block_kv} make {pairs:,} tile pairs (batch × heads × T_r × T_c), "
            f"the executor's limit is {MAX_TILE_PAIRS:,}; use larger --block-q/--block-kv, or "
            f"the closed form (iosim compare) for counts at this size"
        )


def working_set_bytes(block_q: int, block_kv: int, d: int, prec: Precision) -> int:
    """The tiles a tiled kernel holds at once: Q_i, O_i, K_j, V_j in the storage dtype and l_i,
    m_i in the statistics dtype (iosim.workload.working_set_bytes with the run's widths)."""
    return (2 * block_q + 2 * block_kv) * d * prec.storage_bytes + 2 * block_q * prec.stats_bytes


def random_inputs(workload: Workload, seed: int, prec: Precision, *,
                  grad: bool = False) -> dict[str, Array]:
    """Seeded standard-normal Q (batch, heads, N, d), K and V (batch, kv_heads, N_kv, d), and dO
    like Q when `grad`, rounded to the storage dtype."""
    rng = np.random.default_rng(seed)
    w = workload
    shapes = {"Q": (w.batch, w.heads, w.n, w.d), "K": (w.batch, w.heads_kv, w.seq_kv, w.d),
              "V": (w.batch, w.heads_kv, w.seq_kv, w.d)}
    if grad:
        shapes["dO"] = (w.batch, w.heads, w.n, w.d)
    return {name: rng.standard_normal(shape).astype(prec.storage) for name, shape in shapes.items()}


@dataclass(frozen=True, slots=True)
class Execution:
    """One executor run: what it computed, what it moved, what it held."""

    algorithm: str
    dtype: str
    counts: dict[tuple[str, str, Op], int]
    """Elements read or written per (kernel, tensor, op), in the order first touched."""
    itemsize: dict[str, int]
    """Bytes per element of each tensor as the run stored it."""
    outputs: dict[str, Array]
    """Every tensor in HBM at the end (inputs, outputs, intermediates)."""
    peak_scores: int
    """The most scores one (batch, head) held at once: N_q·N_kv (standard) or B_r·B_c (tiled)."""
    sram_peak_bytes: int
    sram_budget_bytes: int
    log: tuple[TileAccess, ...] | None
    """Every counted access in order (when run with record=True)."""

    @property
    def output(self) -> Array:
        return self.outputs["O"]


def passes_of(pass_: str) -> tuple[tuple[str, bool], ...]:
    """(pass, counted) in order: a backward-only run still needs the forward's O and statistics."""
    return {"fwd": (("fwd", True),), "bwd": (("fwd", False), ("bwd", True)),
            "fwdbwd": (("fwd", True), ("bwd", True))}[pass_]


def execute(
    algorithm: str,
    workload: Workload,
    inputs: dict[str, Array],
    *,
    dtype: str = "float64",
    block_q: int = 64,
    block_kv: int = 64,
    sram_bytes: int | None = None,
    sram_source: str = "--sram",
    seed: int = 0,
    dropout_p: float = 0.0,
    record: bool = False,
) -> Execution:
    """Run one algorithm's executor(s) for the workload's pass on `inputs` (see random_inputs).

    `sram_bytes` defaults to the working set of the blocks (working_set_bytes). The workload's
    shape, mask and unfused kernels are used; its dtype is replaced by `dtype`.
    """
    prec = precision(dtype)
    for flag, value in (("--block-q", block_q), ("--block-kv", block_kv)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ExecutorError(f"{flag} must be a whole number of at least 1, got {value!r}")
    if not 0.0 <= dropout_p < 1.0:
        raise ExecutorError(f"--dropout-p must be in [0, 1), got {dropout_p}")
    check_limits(workload, block_q, block_kv)
    steps = passes_of(workload.pass_)
    for step, _ in steps:
        if (algorithm, step) not in EXECUTORS:
            have = sorted({a for a, p in EXECUTORS if p == step})
            raise ExecutorError(
                f"no {'backward' if step == 'bwd' else 'forward'} executor for {algorithm} yet"
                + (f" (there is one for {', '.join(have)})" if have else "")
                + ("; use --pass fwd" if step == "bwd" else "")
            )
    if sram_bytes is None:
        sram_bytes = working_set_bytes(block_q, block_kv, workload.d, prec)
        sram_source = f"working set of {block_q}×{block_kv} blocks"
    hbm = InstrumentedHBM(record=record)
    for name, array in inputs.items():
        hbm.place(name, array.astype(prec.storage))
    sram = SramBudget(sram_bytes, source=sram_source, owner=algorithm)
    meter = ScoreMeter()
    run = Run(hbm, sram, meter, problem_of(workload), prec, block_q, block_kv,
              workload.unfused, dropout_p, seed)
    for step, counted in steps:
        if counted:
            EXECUTORS[(algorithm, step)](run)
        else:
            with hbm.uncounted():
                EXECUTORS[(algorithm, step)](run)
    names = [n for n in ("Q", "K", "V", "dO", "S", "P", "Z", "O", "l", "m", "L") if n in hbm]
    return Execution(algorithm, dtype, dict(hbm.counts), dict(hbm.itemsize),
                     {n: hbm.peek(n) for n in names}, meter.peak, sram.peak_bytes, sram_bytes,
                     tuple(hbm.log) if hbm.log is not None else None)


def reference_attention(workload: Workload, inputs: dict[str, Array], *, seed: int = 0,
                        dropout_p: float = 0.0) -> Array:
    """softmax(τQKᵀ, masked) · V in float64 from the given inputs, for all heads at once — a
    direct formula, neither instrumented nor tiled. Rows that see no key give 0."""
    from iosim.execute.numerics import dropout_keep

    pr = problem_of(workload)
    q = inputs["Q"].astype(np.float64)
    k = np.repeat(inputs["K"].astype(np.float64), pr.group, axis=1)
    v = np.repeat(inputs["V"].astype(np.float64), pr.group, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * pr.scale
    s = np.where(pr.causal_allowed(0, pr.n_q, 0, pr.n_kv), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    p = e / np.where(total > 0, total, 1.0)
    if "dropout" in workload.unfused:
        for b in range(pr.batch):
            for h in range(pr.heads):
                keep = dropout_keep(seed, pr, b, h, 0, pr.n_q, 0, pr.n_kv, dropout_p)
                p[b, h] = np.where(keep, p[b, h] / (1.0 - dropout_p), 0.0)
    out: Array = np.einsum("bhqk,bhkd->bhqd", p, v)
    return out
