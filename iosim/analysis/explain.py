"""The online softmax, block by block: what FlashAttention keeps per query row, as a teaching trace.

For one row of scores s_1..s_n split into blocks, the online softmax (Milakov & Gimelshein 2018;
FlashAttention Alg. 1 lines 9-13) keeps a running max m and a running sum l. When a block raises
the max from m_old to m_new, everything summed so far is rescaled by exp(m_old − m_new):

    m_new = max(m_old, max(block))
    l_new = exp(m_old − m_new) · l_old + Σ_block exp(s − m_new)
    Õ_new = exp(m_old − m_new) · Õ_old + Σ_block exp(s − m_new) · v_s      (with value vectors)

and at the end the weights are exp(s − m)/l and the output O = Õ/l — exactly softmax(s) and
softmax(s)·V, up to rounding. `online_softmax` returns every intermediate next to a one-pass
softmax; `iosim explain softmax` prints it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from iosim.errors import IosimError, arg
from iosim.inputs.excerpts import excerpt
from iosim.inputs.limits import MAX_EXPLAIN_MAGNITUDE, MAX_EXPLAIN_SCORES, MAX_EXPLAIN_VALUE_DIM
from iosim.record import Record

Vector = tuple[float, ...]


_VALUES_EXAMPLE = "'1,0;0,1'"


class ExplainError(IosimError):
    """Bad input to `iosim explain`."""


class SoftmaxStep(Record):
    """The state of the online softmax after one block."""

    index: int
    """1-based block number."""
    scores: Vector
    block_max: float
    max_before: float
    """m_old (−∞ before the first block)."""
    max_after: float
    rescale: float
    """exp(m_old − m_new): 0 for the first block (nothing to rescale), 1 if the max held."""
    sum_before: float
    block_sum: float
    """Σ over the block of exp(s − m_new)."""
    sum_after: float
    unnormalised: Vector | None
    """Õ = Σ exp(s − m_new)·v_s over every score so far (with values)."""
    output: Vector | None
    """Õ / l: softmax over the scores so far, times their values (with values)."""

    @property
    def rescaled_sum(self) -> float:
        """The running sum l before this block, rescaled to the new maximum: e^(m_old − m_new) · l_old."""
        return self.rescale * self.sum_before


class SoftmaxTrace(Record):
    """The online softmax of one score vector, block by block (Alg. 1 lines 9-11), beside the
    one-pass softmax of the same scores; with values, the output o = Σ p·v both ways."""

    scores: Vector
    block: int
    steps: tuple[SoftmaxStep, ...]
    weights: Vector
    """exp(s − m)/l from the final m and l."""
    one_pass_weights: Vector
    values: tuple[Vector, ...] | None
    output: Vector | None
    one_pass_output: Vector | None

    @property
    def final_max(self) -> float:
        """The maximum m after the last block: the one-pass softmax's max(s)."""
        return self.steps[-1].max_after

    @property
    def final_sum(self) -> float:
        """The normaliser l after the last block: the one-pass softmax's Σ e^(s − max)."""
        return self.steps[-1].sum_after

    @property
    def max_weight_difference(self) -> float:
        """Largest |online weight − one-pass weight| over the vector (rounding only: they are equal)."""
        return float(np.max(np.abs(np.subtract(self.weights, self.one_pass_weights))))

    @property
    def max_output_difference(self) -> float | None:
        """Largest |online output − one-pass output| over the head dim, or None without values."""
        if self.output is None or self.one_pass_output is None:
            return None
        return float(np.max(np.abs(np.subtract(self.output, self.one_pass_output))))


def online_softmax(scores: Sequence[float], block: int,
                   values: Sequence[Sequence[float]] | None = None) -> SoftmaxTrace:
    """Run the online softmax over `scores` in blocks of `block`, with optional value vectors."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ExplainError(f"{arg('scores')} is empty; give comma-separated numbers, e.g. "
                           f"{arg('scores', '2,1,0,3')}")
    if not np.all(np.isfinite(s)):
        raise ExplainError(f"{arg('scores')} must be finite numbers (no nan or inf)")
    if np.max(np.abs(s)) > MAX_EXPLAIN_MAGNITUDE:
        raise ExplainError(f"{arg('scores')} must be within ±{MAX_EXPLAIN_MAGNITUDE:.0e} "
                           f"(softmax depends only on their differences: subtract a constant), "
                           f"got {float(s[np.argmax(np.abs(s))]):g}")
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ExplainError(f"{arg('block')} must be a whole number of at least 1, got {block!r}")
    v = None
    if values is not None:
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 2 or v.shape[0] != s.size:
            raise ExplainError(f"{arg('values')} needs one vector per score: {s.size} scores, "
                               f"{len(values)} vectors")
        if not np.all(np.isfinite(v)):
            raise ExplainError(f"{arg('values')} must be finite numbers (no nan or inf)")
        if v.size and np.max(np.abs(v)) > MAX_EXPLAIN_MAGNITUDE:
            raise ExplainError(f"{arg('values')} must be within ±{MAX_EXPLAIN_MAGNITUDE:.0e} "
                               f"(scale them down: the output scales alike), got "
                               f"{float(v.flat[np.argmax(np.abs(v))]):g}")

    m, l_sum = -math.inf, 0.0
    acc = np.zeros(v.shape[1]) if v is not None else None
    steps = []
    for index, start in enumerate(range(0, s.size, block), start=1):
        chunk = s[start:start + block]
        block_max = float(chunk.max())
        m_new = max(m, block_max)
        rescale = math.exp(m - m_new)  # exp(−∞) = 0 on the first block
        e = np.exp(chunk - m_new)
        block_sum = float(e.sum())
        l_new = rescale * l_sum + block_sum
        unnormalised = output = None
        if v is not None and acc is not None:
            acc = rescale * acc + e @ v[start:start + block]
            unnormalised = tuple(float(x) for x in acc)
            output = tuple(float(x) for x in acc / l_new)
        steps.append(SoftmaxStep(index, tuple(float(x) for x in chunk), block_max, m, m_new,
                                 rescale, l_sum, block_sum, l_new, unnormalised, output))
        m, l_sum = m_new, l_new

    weights = np.exp(s - m) / l_sum
    one_pass = np.exp(s - s.max())
    one_pass = one_pass / one_pass.sum()
    out = one_pass_out = None
    if v is not None and acc is not None:
        out = tuple(float(x) for x in acc / l_sum)
        one_pass_out = tuple(float(x) for x in one_pass @ v)
    return SoftmaxTrace(tuple(float(x) for x in s), block, tuple(steps),
                        tuple(float(x) for x in weights), tuple(float(x) for x in one_pass),
                        None if v is None else tuple(tuple(float(x) for x in row) for row in v),
                        out, one_pass_out)


def _number(text: str, name: str, example: str) -> float:
    item = text.strip().replace("−", "-")  # accept the typographic minus of the articles
    if not item:
        raise ExplainError(f"{arg(name)} has an empty entry (two commas in a row, or one at an "
                           f"end); give comma-separated numbers, e.g. {arg(name, example)}")
    try:
        value = float(item)
    except ValueError:
        raise ExplainError(f"{arg(name)}: {excerpt(text.strip())} is not a number; give comma-separated "
                           f"numbers, e.g. {arg(name, example)}") from None
    if not math.isfinite(value):
        raise ExplainError(f"{arg(name)}: {excerpt(text.strip())} is not a finite number")
    return value


def parse_scores(text: str) -> tuple[float, ...]:
    """'2,1,0,3' → (2.0, 1.0, 0.0, 3.0); negative numbers and '−' (U+2212) are fine."""
    if not text.strip():
        raise ExplainError(f"{arg('scores')} is empty; give comma-separated numbers, e.g. "
                           f"{arg('scores', '2,1,0,3')}")
    if text.count(",") + 1 > MAX_EXPLAIN_SCORES:  # counted before any is parsed
        raise ExplainError(f"{arg('scores')} has {text.count(',') + 1:,} numbers; explain shows "
                           f"at most {MAX_EXPLAIN_SCORES:,} (a table a person reads); give fewer")
    return tuple(_number(part, "scores", "2,1,0,3") for part in text.split(","))


def parse_values(text: str, count: int) -> tuple[tuple[float, ...], ...]:
    """One value vector per score: vectors separated by ';', components by ','.

    '1,0;0,1;1,1' is three 2-vectors. Without ';', a list of exactly `count` numbers is one
    scalar value per score ('10,20,30,40' for four scores).
    """
    if not text.strip():
        raise ExplainError(f"{arg('values')} is empty; give one vector per score, e.g. "
                           f"{arg('values', _VALUES_EXAMPLE)}")
    if ";" not in text and len(text.split(",")) == count:
        rows: list[tuple[float, ...]] = [(_number(x, "values", _VALUES_EXAMPLE),)
                                         for x in text.split(",")]
    else:
        rows = [tuple(_number(x, "values", _VALUES_EXAMPLE) for x in part.split(","))
                for part in text.split(";")]
    if len(rows) != count:
        raise ExplainError(f"{arg('values')} needs one vector per score: {count} scores, {len(rows)} "
                           f"vectors (separate vectors with ';', their components with ',')")
    if len(rows[0]) > MAX_EXPLAIN_VALUE_DIM:
        raise ExplainError(f"{arg('values')}: vectors of {len(rows[0]):,} components; explain shows at "
                           f"most {MAX_EXPLAIN_VALUE_DIM}; give shorter vectors")
    sizes = sorted({len(r) for r in rows})
    if len(sizes) > 1:
        raise ExplainError(f"{arg('values')}: every vector needs the same length, got lengths "
                           f"{', '.join(map(str, sizes))}")
    return tuple(rows)
