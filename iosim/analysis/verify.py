"""`verify`: count one workload three ways — closed form, tile walk, executor — and run it.

For each algorithm: the closed form's terms (closedform.closed_form), the tile walk's accesses summed
per term (tilewalk.walk), and the NumPy executor's instrumented counts (iosim.execute), side by
side in elements; the executor's access stream against the walk's, access by access; its output
against standard attention (run by the same executor) and against a float64 formula; with a
backward pass, its gradients dQ, dK, dV likewise (the float64 formula is the analytic backward,
execute/reference.py); and the most scores it held at once. Counts are compared in elements (the
"to the element" claim); with float32 and float16 runs the bytes per element are compared too
(float64 is not a dtype the model counts bytes for: its statistics would be fp32 in a real
kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iosim.algorithms import Algorithm
from iosim.algorithms.closedform import closed_form
from iosim.algorithms.splitkv import refuse_too_many_splits
from iosim.algorithms.tilewalk import TileAccess, walk
from iosim.algorithms.traffic import Op
from iosim.analysis.requests import check_splits, choose_algorithms, default_algorithms
from iosim.analysis.requests import parse_sram as parse_sram_bytes
from iosim.analysis.verification import AlgorithmCheck, GradientCheck, TermCheck, Verification
from iosim.errors import IosimError, arg
from iosim.execute import (
    EXECUTOR_DTYPES,
    EXECUTORS,
    check_limits,
    default_sram_bytes,
    execute,
    precision,
    random_inputs,
    reference_attention,
    reference_gradients,
    refusal,
)
from iosim.execute.run import passes_of
from iosim.inputs.api_values import as_names, check_instance, check_probability
from iosim.inputs.excerpts import excerpt
from iosim.inputs.limits import check_block, check_seed
from iosim.inputs.tiling import Tiling
from iosim.inputs.units import FP8_DTYPES
from iosim.inputs.workload import WORKLOAD_EXAMPLE, Workload
from iosim.record import Record

MODEL_DTYPE = {"float64": "fp32", "float32": "fp32", "float16": "fp16"}
"""The model dtype whose closed form a run is compared with (elements do not depend on it)."""

GRADIENTS = ("dQ", "dK", "dV")

TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2}
"""Largest max |tiled − standard| accepted on unit-normal inputs; for a gradient, times
max(1, its largest float64 value), since gradients are not bounded by |V| as outputs are.
float64's rounding is ~1e-16 (seed 003: 5.6e-16 at N = 256, d = 16). float16 has the loosest
bound because Algorithm 1 stores O in fp16 after every K/V block, so its error grows with T_c:
measured at most 1.4e-3 for `iosim verify --dtype float16` at N = 1024..4096, d = 16..128, blocks
16..64 (README); the gradients' at most 1.1e-3 of their scale (README, backward)."""


def parse_sram(sram: str | int | None) -> int | None:
    """An SRAM size in bytes (None: the default working set)."""
    return None if sram is None else parse_sram_bytes(sram)


def _key(access: TileAccess, with_bytes: bool) -> tuple[Any, ...]:
    return (access.kernel, access.tensor, access.op, access.batch, access.head, access.row_start,
            access.row_stop, access.cols, access.init, access.split,
            access.element_bytes if with_bytes else 0)


def _describe(access: TileAccess | None) -> str:
    if access is None:
        return "nothing"
    split = f", split {access.split}" if access.split else ""
    return (f"{access.kernel}: {access.op} {access.tensor}[b{access.batch}, h{access.head}, "
            f"rows {access.row_start}:{access.row_stop}{split}]")


def default_splits(workload: Workload, block_kv: int) -> int:
    """Split-KV's splits when not given: two (the smallest split that has a combine kernel), or
    one when there is a single key block."""
    return min(2, -(-workload.n_kv // block_kv))


VERIFY_TILE_WORK = 1 << 14
"""Tile pairs × tiled algorithms × passes one `verify` may execute: each costs a few numpy calls
in Python loops (measured: `iosim verify --n 1000 --block-kv 1`, 16,000 pairs × 2 algorithms,
6.2 s on a shared 2-core machine), so a run stays within a few seconds (issue 12)."""

VERIFY_WORK = 12 * 10**9
"""Multiply-add equivalents (`verify_work`) one `verify` may execute, so that a run stays
within seconds however large its tiles: the tile-pair bound alone let a gemma-2-2b local layer
(`--model gemma-2-2b --layer local --n 1448`, d = 256, 4,232 pairs) run 11-77 s, `--n 1024
--d 2048 --block 128` 18 s and `--n 4096 --block 256` 20 s (hostile9 leftover 2).
benchmarks/verify_work_speed.py timed 11 shapes on this 2-core machine shared by six sessions
(benchmarks/verify_work_speed.json): the matmul-bound ones ran 0.3-0.96 G multiply-adds a
second, 2.3 G with the machine nearly to itself (the gemma shape in 15 s) and 4 G unloaded
(benchmarks/verify_speed.py: `--n 1024 --d 64`, 0.6 G, in 0.16 s). The bound, 12 G, keeps
`--n 4096 --d 64` (10.2 G; 3-5 s unloaded) and refuses the gemma shape (27.6 G, causal)."""


MULTIPLY_ADDS_PER_SCORE = {"fwd": (1, 1), "bwd": (3, 2)}
"""Per score, the multiply-adds of a pass as (times d, times d_v): the forward's S = QKᵀ and
O = PV; the backward's S again, dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K and dK = dSᵀ·Q (Alg. 4,
execute/backward.py)."""

ELEMENTWISE_PER_SCORE = 16
"""Multiply-add equivalents of a score's elementwise work in a pass: its scale, mask, max,
exponent, sum and the executor's dtype copies, about a dozen operations. The timings cannot
tell it apart (the fit puts it at 0: N = 4096 at d = 64, 67M scores, took 20 s, and N = 1024 at
d = 1024, 4M scores with as many multiply-adds, 21 s); it keeps a d = 1 run of many scores
from passing free."""

PER_TILE_PAIR = 70_000
"""Multiply-add equivalents of one tile pair's Python and numpy call overhead in a tiled run:
~140 µs a pair (N = 512, d = 16, blocks of 8: 8,192 pairs in 1.2 s, nearly no multiply-adds)
at the loaded machine's 0.5 G multiply-adds a second."""


class VerifyWork(Record):
    """What one `verify` would execute, estimated before anything runs (`verify_work`)."""

    pair_runs: int
    """Tile pairs visited × tiled runs (each pass of each tiled algorithm)."""
    scores: int
    """Scores every run computes, tiled (a whole tile each pair visited), standard and the
    float64 reference."""
    multiply_adds: int
    """The matmuls' multiply-adds over those scores (MULTIPLY_ADDS_PER_SCORE)."""

    @property
    def total(self) -> int:
        """Multiply-add equivalents: the matmuls, the elementwise work and the pairs' overhead."""
        return (self.multiply_adds + ELEMENTWISE_PER_SCORE * self.scores
                + PER_TILE_PAIR * self.pair_runs)


def verify_work(workload: Workload, chosen: Sequence[Algorithm], block_q: int,
                block_kv: int) -> VerifyWork:
    """The work of verifying `chosen` on `workload` (see VerifyWork): every tiled algorithm's
    passes, standard's (always run, the reference) and the float64 formula's."""
    w = workload
    passes = ("fwd",) if w.pass_ == "fwd" else ("fwd", "bwd")  # bwd runs its forward first
    per_score = sum(a * w.d + b * w.d_v for a, b in (MULTIPLY_ADDS_PER_SCORE[p] for p in passes))
    pairs = w.batch * w.heads * _visited_pairs(w, block_q, block_kv)
    tiled = sum(1 for a in chosen if a.tiled)
    tile_scores = pairs * min(block_q, w.n) * min(block_kv, w.n_kv)
    dense = w.batch * w.heads * w.n * w.n_kv  # standard and the float64 reference
    scores = len(passes) * (tiled * tile_scores + 2 * dense)
    return VerifyWork(pairs * tiled * len(passes), scores,
                      per_score * (tiled * tile_scores + 2 * dense))


def _visited_pairs(w: Workload, block_q: int, block_kv: int) -> int:
    """Tile pairs of one (batch, head) a tiled executor visits: all T_r × T_c, or under a
    causal mask (bottom-right aligned: row r sees keys up to r + N_kv − N) each row block's
    key blocks up to its last row's, as the executors skip the rest (a window or a sparse
    mask skips more: still an upper bound). T_r ≤ 2^16 here (check_limits ran first)."""
    row_blocks, key_blocks = -(-w.n // block_q), -(-w.n_kv // block_kv)
    if not w.causal:
        return row_blocks * key_blocks
    offset = w.n_kv - w.n
    return sum(min(key_blocks, max(0, -(-(min((i + 1) * block_q, w.n) + offset) // block_kv)))
               for i in range(row_blocks))


def check_work(workload: Workload, chosen: Sequence[Algorithm], block_q: int,
               block_kv: int) -> None:
    """Refuse a verification whose executors would run for minutes, before running any."""
    w = workload
    pairs = w.batch * w.heads * -(-w.n // block_q) * -(-w.n_kv // block_kv)
    runs = sum(1 for a in chosen if a.tiled) * (2 if w.pass_ == "fwdbwd" else 1)
    if pairs * runs > VERIFY_TILE_WORK:
        raise IosimError(
            f"blocks {block_q} × {block_kv} make {pairs:,} tile pairs, × {runs} tiled "
            f"algorithm runs = {pairs * runs:,}, beyond the {VERIFY_TILE_WORK:,} verify executes "
            f"(a run of seconds); use larger --block-q/--block-kv, fewer --algo, or the closed "
            f"form (iosim compare)")
    work = verify_work(w, chosen, block_q, block_kv)
    if work.total > VERIFY_WORK:
        raise IosimError(
            f"this verify would execute about {work.total / 1e9:.3g} billion multiply-adds "
            f"({work.scores:,} scores at d = {w.d}, {work.pair_runs:,} tile pairs), beyond the "
            f"{VERIFY_WORK / 1e9:g} billion it runs (a run of seconds); use a smaller --n, "
            f"--heads or --d, fewer --algo, or the closed form (iosim compare), which has no "
            f"such limit")


def verify(
    workload: Workload,
    *,
    algorithms: Sequence[str] | None = None,
    dtype: str = "float64",
    block_q: int = 64,
    block_kv: int = 64,
    sram: str | int | None = None,
    seed: int = 0,
    dropout_p: float = 0.1,
    splits: int | None = None,
) -> Verification:
    """Count and run each algorithm on seeded random data; see the module doc.

    `algorithms` defaults to compare's (standard, flash1, flash2, and splitkv for a decoding step
    N = 1) that have executors for the workload's pass and can run it (execute.refusal).

    `workload` gives the shape, masks (causal, block-sparse), pass and unfused kernels; its dtype
    is replaced by the model dtype of `dtype` (float64, float32 or float16). Both passes tile with
    `block_q` × `block_kv`. `sram` (bytes, or a size such as "32KiB") defaults to the working set
    of the blocks in `dtype` for every pass run. Standard attention always runs, as the
    reference. Dropout (p = `dropout_p`) applies when 'dropout' is unfused. `splits` is
    splitkv's (default_splits when None).
    """
    check_instance("workload", workload, Workload, WORKLOAD_EXAMPLE)
    if not isinstance(dtype, str) or dtype not in EXECUTOR_DTYPES:
        raise IosimError(f"unknown {arg('dtype')} {excerpt(dtype)}; use one of "
                         f"{', '.join(EXECUTOR_DTYPES)}")
    # an FP8 workload keeps its dtype (its scales are terms of the count); any other is counted
    # in the model dtype of the run's numbers
    fp8 = workload.dtype in FP8_DTYPES
    model = workload if fp8 else workload.with_(dtype=MODEL_DTYPE[dtype])
    block_q, block_kv = check_block("block_q", block_q), check_block("block_kv", block_kv)
    seed = check_seed(seed)  # a Python int: the result's JSON holds it
    dropout_p = check_probability("dropout_p", dropout_p)
    check_limits(model, block_q, block_kv)  # before any array is made
    blocks: dict[str, Any] = {"block_q": block_q, "block_kv": block_kv,
                              "bwd_blocks": (block_q, block_kv)}
    if algorithms is None:  # compare's defaults that have executors for the pass and can run it
        algorithms = [a for a in default_algorithms(model)
                      if all((a, step) in EXECUTORS for step, _ in passes_of(model.pass_))
                      and refusal(a, model, **blocks) is None]
        if not algorithms:
            raise IosimError(f"no algorithm has an executor for {arg('pass_', model.pass_)} yet; "
                             f"use {arg('pass_', 'fwd')}")
    check_splits([splits])
    chosen = choose_algorithms(as_names("algorithms", algorithms),
                               splits_given=splits is not None)
    names = [a.name for a in chosen]
    if splits is None:
        splits = default_splits(model, block_kv)
    refuse_too_many_splits(splits, model.n_kv, block_kv)
    check_work(model, chosen, block_q, block_kv)
    prec = precision(dtype)
    sram_bytes = parse_sram(sram)
    if sram_bytes is None:
        sram_bytes = default_sram_bytes(model.pass_, block_q, block_kv, (block_q, block_kv),
                                        workload.d, prec, workload.d_v, workload.latent_kv)
        if model.pass_ == "fwd":
            tiles = "K_j (V_j inside it)" if model.latent_kv else "K_j, V_j"
            sram_source = (f"the working set of {block_q}×{block_kv} blocks in {dtype}: Q_i, O_i, "
                           f"{tiles} and l_i, m_i")
        else:  # the backward holds more tiles (execute.backward_sram_bytes)
            sram_source = (f"the backward's working set of {block_q}×{block_kv} blocks in {dtype} "
                           f"(the larger pass)")
    else:
        sram_source = f"--sram {sram}"
    tilings = {a.name: Tiling(block_q, block_kv, sram_bytes, sram_source, "given",
                              splits=splits if a.name == "splitkv" else 1) if a.tiled else None
               for a in chosen}
    # unmodelled passes fail here, first
    kernels = {a.name: a.kernels(model, tilings[a.name]) for a in chosen}
    for a in chosen:
        why = refusal(a.name, model, **blocks)
        if why is not None:
            raise IosimError(f"{a.name}: {why}")

    backward = model.pass_ != "fwd"
    inputs = random_inputs(model, seed, prec, grad=backward)
    common: dict[str, Any] = {"dtype": dtype, "block_q": block_q, "block_kv": block_kv,
                              "sram_bytes": sram_bytes, "sram_source": sram_source,
                              "seed": seed, "dropout_p": dropout_p}
    runs = {"standard": execute("standard", model, inputs, record="standard" in names, **common)}
    for a in chosen:
        if a.name not in runs:
            runs[a.name] = execute(a.name, model, inputs, record=True,
                                   splits=splits if a.name == "splitkv" else 1, **common)
    masks: dict[str, Any] = {"seed": seed, "dropout_p": dropout_p, "block_q": block_q,
                             "block_kv": block_kv}
    reference = reference_attention(model, inputs, **masks)
    standard_out = runs["standard"].output.astype(np.float64)
    grad_reference = reference_gradients(model, inputs, **masks) if backward else {}
    bytes_checked = dtype != "float64" and not fp8  # NumPy has no 8-bit float to store

    checks = []
    for a in chosen:
        run = runs[a.name]
        tiling = tilings[a.name]
        traffic = closed_form(kernels[a.name], model, tiling)
        walked: dict[tuple[str, str, Op], int] = {}
        log = run.log or ()
        accesses, difference = 0, None
        for step in walk(kernels[a.name], model, tiling):
            key3 = (step.kernel, step.tensor, step.op)
            walked[key3] = walked.get(key3, 0) + step.elements
            if difference is None and (accesses >= len(log) or
                                       _key(step, bytes_checked) != _key(log[accesses], bytes_checked)):
                got = log[accesses] if accesses < len(log) else None
                difference = f"access {accesses + 1}: walk {_describe(step)}, executor {_describe(got)}"
            accesses += 1
        if difference is None and len(log) > accesses:
            difference = f"access {accesses + 1}: walk nothing, executor {_describe(log[accesses])}"
        terms: dict[tuple[str, str, Op], TermCheck] = {}
        for t in traffic:
            key = (t.kernel, t.tensor, t.op)
            prior = terms.get(key)
            terms[key] = TermCheck(t.kernel, t.tensor, t.op, t.cite, t.element_bytes,
                                   t.elements + (prior.closed_form if prior else 0),
                                   walked.get(key, 0), run.counts.get(key, 0),
                                   run.itemsize.get(t.tensor) if key in run.counts else None)
        for key in [*walked, *run.counts]:  # anything counted that the closed form lacks
            if key not in terms:
                terms[key] = TermCheck(*key, "not in the closed form", 0, 0, walked.get(key, 0),
                                       run.counts.get(key, 0), run.itemsize.get(key[1]))
        out = run.output.astype(np.float64)
        gradients = tuple(
            _gradient_check(name, run.outputs[name], runs["standard"].outputs[name],
                            grad_reference[name], TOLERANCE[dtype])
            for name in (GRADIENTS if backward else ()))
        checks.append(AlgorithmCheck(
            name=a.name, title=a.title,
            block_q=block_q if a.tiled else None, block_kv=block_kv if a.tiled else None,
            terms=tuple(terms.values()), accesses=accesses,
            stream_equal=difference is None, stream_difference=difference,
            bytes_checked=bytes_checked,
            max_abs_diff_vs_standard=float(np.max(np.abs(out - standard_out), initial=0.0)),
            max_abs_err_vs_float64=float(np.max(np.abs(out - reference), initial=0.0)),
            peak_scores=run.peak_scores,
            sram_peak_bytes=run.sram_peak_bytes if a.tiled else None,
            sram_budget_bytes=sram_bytes if a.tiled else None,
            tolerance=TOLERANCE[dtype],
            gradients=gradients,
            splits=splits if a.name == "splitkv" else None,
        ))
    return Verification(model, dtype, seed, dropout_p, sram_bytes, sram_source, tuple(checks),
                        runs["standard"].peak_scores,
                        float(np.max(np.abs(standard_out - reference), initial=0.0)))


def _gradient_check(name: str, value: Any, standard: Any, reference: Any,
                    tolerance: float) -> GradientCheck:
    x = np.asarray(value, dtype=np.float64)
    return GradientCheck(
        name=name,
        max_abs_diff_vs_standard=float(np.max(np.abs(x - np.asarray(standard, dtype=np.float64)),
                                              initial=0.0)),
        max_abs_err_vs_float64=float(np.max(np.abs(x - reference), initial=0.0)),
        scale=max(1.0, float(np.max(np.abs(reference), initial=0.0))),
        tolerance=tolerance,
    )
