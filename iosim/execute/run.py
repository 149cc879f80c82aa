"""Running an executor: seeded inputs, size limits, the passes of a workload, the results."""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.algorithms.packing import packs_heads
from iosim.algorithms.tilewalk import TileAccess
from iosim.algorithms.traffic import Op
from iosim.algorithms.triton_bwd import triton_unsupported
from iosim.errors import IosimError, arg
from iosim.execute.cascade import batch_major, place_cascade
from iosim.execute.hbm import ExecutorError, InstrumentedHBM, ScoreMeter, SramBudget
from iosim.execute.numerics import Precision, precision, problem_of
from iosim.execute.paged import PAGED_EXECUTORS, place_paged
from iosim.execute.registry import EXECUTORS, Run
from iosim.inputs.api_values import check_instance, check_int, check_probability
from iosim.inputs.excerpts import excerpt
from iosim.inputs.limits import MAX_SRAM_BYTES, check_block, check_executor_memory, check_seed
from iosim.inputs.tiling import working_set_bytes
from iosim.inputs.workload import WORKLOAD_EXAMPLE, Workload
from iosim.record import Record

Array = np.ndarray[Any, Any]

MAX_SCORES = 1 << 24
"""Scores (batch × heads × N × N_kv) one executor run may compute: standard attention holds
them all in (numpy) HBM, S and P at 8 bytes each in float64 — 256 MiB at the limit, and about
1 GiB with its backward's dP and dS and an unfused dropout's P_drop."""

MAX_TILE_PAIRS = 1 << 16
"""(query block, key block) pairs one run may visit (batch × heads × T_r × T_c): each is a few
numpy calls in a Python loop, about 10-50 µs, so a run stays within seconds."""


def check_limits(workload: Workload, block_q: int, block_kv: int) -> None:
    """Refuse runs too large to execute, pointing to the closed form, which has no such limit."""
    w = workload
    scores = w.batch * w.heads * w.n * w.n_kv
    sizes = f"--n {w.n}" + (f" --n-kv {w.n_kv}" if w.n_kv != w.n else "")
    named = arg("n", w.n) + (f" {arg('n_kv', w.n_kv)}" if w.n_kv != w.n else "")
    if scores > MAX_SCORES:
        raise ExecutorError(
            f"{named} is too large for an executor run: batch × heads × N × N_kv = {scores:,} "
            f"scores, the limit is {MAX_SCORES:,} (e.g. N = N_kv = 4096 for one head); for the "
            f"exact counts at this size use the closed form: iosim compare {sizes} --gpu a100"
        )
    try:  # before any array is made: --d alone can ask for gigabytes
        check_executor_memory(w.batch, w.heads, w.kv_heads, w.n, w.n_kv, max(w.d, w.d_v))
    except IosimError as exc:
        raise ExecutorError(exc.problem, param=exc.param) from None
    pairs = w.batch * w.heads * -(-w.n // block_q) * -(-w.n_kv // block_kv)
    if pairs > MAX_TILE_PAIRS:
        raise ExecutorError(
            f"blocks {block_q} × {block_kv} make {pairs:,} tile pairs (batch × heads × T_r × T_c), "
            f"the executor's limit is {MAX_TILE_PAIRS:,}; use larger {arg('block_q')}/"
            f"{arg('block_kv')}, or "
            f"the closed form (iosim compare) for counts at this size"
        )


def forward_sram_bytes(block_q: int, block_kv: int, d: int, prec: Precision,
                       d_v: int | None = None, v_in_k: bool = False) -> int:
    """Bytes of the tiles a tiled forward kernel holds at once: the model's working set
    (inputs/tiling.py:working_set_bytes) at the run's storage and statistics widths."""
    return int(working_set_bytes(block_q, block_kv, d, prec.storage_bytes,
                                 stat_bytes=prec.stats_bytes, d_v=d_v, v_in_k=v_in_k))


def backward_sram_bytes(block_q: int, block_kv: int, d: int, prec: Precision,
                        d_v: int | None = None) -> int:
    """The tiles a tiled backward kernel holds at once, the larger of the two:

    Alg. 4 (flash1): K_j, V_j, dK_j, dV_j (B_c × d), Q_i, O_i, dO_i, dQ_i (B_r × d), l_i, m_i;
    FlashAttention-2: K_j, V_j, dK_j, dV_j, Q_i, dO_i, an fp32 dQ_i, and L_i, D_i.
    The dK_j, dV_j accumulators are charged at the storage width, as O_i is in the forward; the
    scores' tiles (S, P, dP, dS) live in registers and are not charged, as in the forward.
    V, O, dO and dV are d_v wide (None: d).
    """
    s, t = prec.storage_bytes, prec.stats_bytes
    dv = d if d_v is None else d_v
    flash1 = (2 * block_kv + 2 * block_q) * (d + dv) * s + 2 * block_q * t
    flash2 = (2 * block_kv * (d + dv) + block_q * (d + dv)) * s + block_q * d * t + 2 * block_q * t
    return max(flash1, flash2)


def default_sram_bytes(pass_: str, block_q: int, block_kv: int, bwd_blocks: tuple[int, int],
                       d: int, prec: Precision, d_v: int | None = None,
                       v_in_k: bool = False) -> int:
    """The budget a run gets by default: the working set of every pass it runs."""
    need = forward_sram_bytes(block_q, block_kv, d, prec, d_v, v_in_k)
    if pass_ != "fwd":
        need = max(need, backward_sram_bytes(*bwd_blocks, d, prec, d_v))
    return need


def refusal(algorithm: str, workload: Workload, *, block_q: int, block_kv: int,
            bwd_blocks: tuple[int, int]) -> str | None:
    """Why an executor cannot run this workload (None if it can): combinations whose block-sparse
    mask would not be the one every other run of the same verification uses, and what iosim's
    Triton backward does not do."""
    if algorithm == "triton":
        why = triton_unsupported(workload)
        if why is not None:
            return why
    if (workload.page_size is not None and workload.fp8_scales is not None
            and algorithm in PAGED_EXECUTORS):
        return (f"the executor quantises a contiguous K/V cache to FP8, not a paged pool; verify "
                f"a paged cache without FP8 (drop {arg('fp8_scales')}) or FP8 without "
                f"{arg('page_size')} (compare counts both together)")
    if workload.sparsity == 1:
        return None
    if workload.pass_ != "fwd" and bwd_blocks != (block_q, block_kv):
        return (f"a block-sparse mask lives on the grid of the blocks, and the backward's "
                f"{bwd_blocks[0]} × {bwd_blocks[1]} blocks are not the forward's {block_q} × "
                f"{block_kv}: the two passes would mask different scores; give both passes the "
                f"same blocks")
    if algorithm == "splitkv" and packs_heads(workload.n, workload.heads, workload.kv_heads):
        return ("splitkv packs the query heads of a KV head into one tile when N = 1 "
                "(seqlenq_ngroups_swapped), which puts its block-sparse mask on another block grid "
                f"than the other algorithms'; verify it with {arg('sparsity', 1)}, or "
                f"{arg('kv_heads')} equal to {arg('heads')}")
    return None


def kv_lens(workload: Workload) -> tuple[int, ...] | None:
    """The keys each request of a shared-prefix batch attends to (None: every N_kv)."""
    if workload.prefix_len is None or workload.suffix_lens is None:
        return None
    return tuple(workload.prefix_len + s for s in workload.suffix_lens)


def random_inputs(workload: Workload, seed: int, prec: Precision, *,
                  grad: bool = False) -> dict[str, Array]:
    """Seeded standard-normal Q (batch, heads, N, d), K and V (batch, kv_heads, N_kv, d), and dO
    like Q when `grad`, rounded to the storage dtype."""
    check_instance("workload", workload, Workload, WORKLOAD_EXAMPLE)
    if not isinstance(prec, Precision):
        raise IosimError(f"{arg('prec')} must be a precision, e.g. precision('float64'), got "
                         f"{excerpt(prec)}", param="prec")
    rng = np.random.default_rng(check_seed(seed))
    w = workload
    shapes = {"Q": (w.batch, w.heads, w.n, w.d), "K": (w.batch, w.kv_heads, w.n_kv, w.d),
              "V": (w.batch, w.kv_heads, w.n_kv, w.d_v)}
    if w.latent_kv:
        del shapes["V"]  # MLA: V is the first d_v columns of the latent K, not a tensor of its own
    if grad:
        shapes["dO"] = (w.batch, w.heads, w.n, w.d_v)
    arrays = {name: rng.standard_normal(shape).astype(prec.storage)
              for name, shape in shapes.items()}
    if w.prefix_len is not None:  # a shared prefix: every request's first L keys are one cache
        for name in ("K", "V"):
            if name in arrays:
                arrays[name][:, :, :w.prefix_len] = arrays[name][:1, :, :w.prefix_len]
    return arrays


class Execution(Record):
    """One executor run: what it computed, what it moved, what it held."""

    algorithm: str
    dtype: str
    counts: dict[tuple[str, str, Op], int]
    """Elements read or written per (kernel, tensor, op), in the order first touched."""
    itemsize: dict[str, int]
    """Bytes per element of each tensor as the run stored it."""
    outputs: dict[str, Array]
    """The inputs, outputs and statistics in HBM at the end (Q, K, V, dO; S, P, Z; O, l, m, L,
    split-KV's partials; D, dQ, dK, dV) — not the backward's N×N dP, dS."""
    peak_scores: int
    """The most scores one (batch, head) held at once: N_q·N_kv (standard) or B_r·B_c (tiled)."""
    sram_peak_bytes: int
    sram_budget_bytes: int
    log: tuple[TileAccess, ...] | None
    """Every counted access in order (when run with record=True)."""

    @property
    def output(self) -> Array:
        """The attention output O, shape (batch, heads, N, d)."""
        return self.outputs["O"]

    def gradients(self) -> dict[str, Array]:
        """dQ, dK, dV (KV heads) after a run with a backward pass."""
        return {n: self.outputs[n] for n in ("dQ", "dK", "dV")}


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
    bwd_block_q: int | None = None,
    bwd_block_kv: int | None = None,
    splits: int = 1,
) -> Execution:
    """Run one algorithm's executor(s) for the workload's pass on `inputs` (see random_inputs;
    `grad=True` adds the dO a backward needs).

    `block_q`, `block_kv` tile the tiled kernels and place a block-sparse mask (standard applies
    the same mask, so give every run of one comparison the same blocks); `bwd_block_q`,
    `bwd_block_kv` tile the backward where it differs (Tiling.bwd_block_q/bwd_block_kv);
    `splits` is split-KV's programs per query block. `sram_bytes` defaults to the working set
    of every pass run (default_sram_bytes). The workload's shape, masks, pass and unfused kernels
    are used; its dtype is replaced by `dtype`.
    """
    check_instance("workload", workload, Workload, WORKLOAD_EXAMPLE)
    if not isinstance(algorithm, str):
        raise ExecutorError(f"{arg('algorithm')} must be an algorithm's name, got "
                            f"{excerpt(algorithm)}", param="algorithm")
    prec = precision(dtype)
    block_q, block_kv = (check_block(name, value, error=ExecutorError)
                         for name, value in (("block_q", block_q), ("block_kv", block_kv)))
    bwd_blocks = (block_q if bwd_block_q is None else bwd_block_q,
                  block_kv if bwd_block_kv is None else bwd_block_kv)
    bwd_blocks = (check_block("bwd_block_q", bwd_blocks[0], error=ExecutorError),
                  check_block("bwd_block_kv", bwd_blocks[1], error=ExecutorError))
    dropout_p = check_probability("dropout_p", dropout_p, error=ExecutorError)
    seed = check_seed(seed, error=ExecutorError)
    if sram_bytes is not None:
        sram_bytes = check_int("sram_bytes", sram_bytes, high=MAX_SRAM_BYTES, error=ExecutorError)
    key_blocks = -(-workload.n_kv // block_kv)
    if isinstance(splits, bool) or not isinstance(splits, int) or not 1 <= splits <= key_blocks:
        raise ExecutorError(f"{arg('splits')} must be a whole number from 1 to the {key_blocks} key "
                            f"blocks (N_kv {workload.n_kv} in blocks of {block_kv}), got {splits!r}")
    check_limits(workload, block_q, block_kv)
    if workload.pass_ != "fwd":
        check_limits(workload, *bwd_blocks)
    steps = passes_of(workload.pass_)
    for step, _ in steps:
        if (algorithm, step) not in EXECUTORS:
            have = sorted({a for a, p in EXECUTORS if p == step})
            raise ExecutorError(
                f"no {'backward' if step == 'bwd' else 'forward'} executor for {algorithm}"
                + (f" (there is one for {', '.join(have)})" if have else "")
                + (f"; use {arg('pass_', 'fwd')}" if step == "bwd" else "")
            )
    why = refusal(algorithm, workload, block_q=block_q, block_kv=block_kv, bwd_blocks=bwd_blocks)
    if why is not None:
        raise ExecutorError(f"{algorithm}: {why}")
    if sram_bytes is None:
        sram_bytes = default_sram_bytes(workload.pass_, block_q, block_kv, bwd_blocks,
                                        workload.d, prec, workload.d_v, workload.latent_kv)
        sram_source = f"working set of {block_q}×{block_kv} blocks"
    if not isinstance(inputs, dict) or not {"Q", "K"} <= set(inputs):
        raise ExecutorError(f"{arg('inputs')} must be the arrays random_inputs(workload, seed, "
                            f"precision(dtype)) makes (Q, K, V, ...), got {excerpt(inputs)}",
                            param="inputs")
    hbm = InstrumentedHBM(record=record)
    paged = workload.page_size if algorithm in PAGED_EXECUTORS else None
    own_layout = algorithm == "cascade"  # token-major, the prefix once (execute/cascade.py)
    for name, array in inputs.items():
        if (paged is None or name not in ("K", "V")) and not own_layout:
            hbm.place(name, array.astype(prec.storage))
    if own_layout:
        place_cascade(hbm, inputs, workload, prec.storage)
    if paged is not None:
        place_paged(hbm, {n: inputs[n].astype(prec.storage) for n in ("K", "V") if n in inputs},
                    paged, seed, prec.storage)
    sram = SramBudget(sram_bytes, source=sram_source, owner=algorithm)
    meter = ScoreMeter()
    run = Run(hbm, sram, meter, problem_of(workload), prec, block_q, block_kv,
              workload.unfused, dropout_p, seed, bwd_block_q, bwd_block_kv, splits, paged,
              kv_lens(workload), workload.prefix_len)
    for step, counted in steps:
        if counted:
            EXECUTORS[(algorithm, step)](run)
        else:
            with hbm.uncounted():
                EXECUTORS[(algorithm, step)](run)
    kv = ("K", "V") if paged is None else ()  # a paged pool is not the (batch, head) K, V
    q = ("Q",) if not own_layout else ()  # cascade's token-major Q is not the inputs' Q
    names = [n for n in (*q, *kv, "dO", "S", "P", "Z", "O", "l", "m", "L", "O_partial",
                         "lse_partial", "D", "dQ", "dK", "dV") if n in hbm]
    outputs = {n: hbm.peek(n) for n in names}
    if own_layout:
        outputs["O"] = batch_major(outputs["O"])
        outputs.pop("L", None)  # token-major; the others' L is not compared either
    return Execution(algorithm, dtype, dict(hbm.counts), dict(hbm.itemsize), outputs,
                     meter.peak, sram.peak_bytes, sram_bytes,
                     tuple(hbm.log) if hbm.log is not None else None)

