"""Precision, masks and block visits of the executor, written independently of the loop nests
(the causal mask, sliding windows and packed sequences, the block-sparse mask's pairs, the
dropout mask).

Masks (Workload.window, Workload.seqlens) are written here as their definition, score by score:
query row q sits at key position p = q + N_kv − N_q (within its own sequence when packed), and
keeps key k iff k is in q's sequence, k <= p when causal, and p − W < k (causal) or |k − p| < W
(two-sided) under a window W. A tiled kernel computes a block pair iff it holds at least one kept
score (`block_visited`, by brute force over the block's scores); packed sequences are cut into
blocks each from its own first token (FlashAttention-2 varlen: blocks never straddle sequences),
or, under FlexAttention's document mask (packing "document"), as one sequence.

Precision (what the real kernels do, and what the executor does):

  dtype     in HBM (Q K V O S P,   matmul accumulate / softmax   statistics l, m, L, D, the fp32
            dO dQ dK dV dP dS)                                   dQaccum, split partials in HBM
  float64   float64                float64                       float64
  float32   float32                float32                       float32
  float16   float16                float32                       float32

float16 follows tensor-core kernels: fp16 operands, products accumulated in fp32 (an fp16×fp16
product is exact in fp32), the softmax in fp32, P cast back to fp16 before the P·V matmul (Triton's
`p.to(tl.float16)`, FlashAttention-2's `convert_type`), outputs rounded to fp16 when stored.
Standard attention stores S and P in fp16 between its kernels (PyTorch eager). float64 keeps its
statistics in float64 too, so that a run shows the algorithms' error, not fp32's; the byte
counts it is compared on are then those of the model's fp32 statistics (counts are in elements).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.errors import IosimError
from iosim.inputs.excerpts import excerpt
from iosim.inputs.workload import Workload
from iosim.record import Record

Array = np.ndarray[Any, Any]

EXECUTOR_DTYPES = ("float64", "float32", "float16")


class Precision(Record):
    """The NumPy dtypes of one executor precision: storage in HBM, computation, statistics."""

    name: str
    storage: Any
    """Q, K, V, O (and standard's S, P) in HBM."""
    compute: Any
    """Matmul accumulation and the softmax."""
    stats: Any
    """Row statistics l, m (Algorithm 1) and L (FlashAttention-2) in HBM."""

    @property
    def storage_bytes(self) -> int:
        """Bytes per stored element."""
        return int(np.dtype(self.storage).itemsize)

    @property
    def stats_bytes(self) -> int:
        """Bytes per statistics element."""
        return int(np.dtype(self.stats).itemsize)

    def matmul(self, a: Array, b: Array) -> Array:
        """a @ b with operands rounded to the storage dtype, accumulated in the compute dtype."""
        return np.asarray(a.astype(self.storage).astype(self.compute)
                          @ b.astype(self.storage).astype(self.compute))


def precision(name: str) -> Precision:
    """The storage, compute and statistics dtypes of an executor dtype name."""
    if not isinstance(name, str):
        raise IosimError(f"unknown executor dtype {excerpt(name)}; use one of "
                         f"{', '.join(EXECUTOR_DTYPES)}")
    if name == "float64":
        return Precision(name, np.float64, np.float64, np.float64)
    if name == "float32":
        return Precision(name, np.float32, np.float32, np.float32)
    if name == "float16":
        return Precision(name, np.float16, np.float32, np.float32)
    raise IosimError(f"unknown executor dtype '{name}'; use one of {', '.join(EXECUTOR_DTYPES)}")


class Problem(Record):
    """The shape of one attention call, as the executor needs it."""

    batch: int
    heads: int
    kv_heads: int
    n_q: int
    n_kv: int
    d: int
    causal: bool
    sparsity: tuple[int, int] = (1, 1)
    """Block-sparse FlashAttention: the fraction p/q of non-zero blocks (1/1: dense)."""
    d_v: int = 0
    """V's (and O's) head dim; 0: d."""
    latent_kv: bool = False
    """MLA's latent cache: V is the first d_v columns of K (no V tensor in HBM)."""
    fp8_scales: str | None = None
    """FP8 inputs: "tensor" or "block" descale factors (execute/fp8.py); None: no FP8."""
    dtype: str = ""
    """The workload's dtype (the FP8 format, for its largest value)."""
    window: int | None = None
    """Sliding window W (None: none)."""
    seqlens: tuple[int, ...] | None = None
    """Packed sequence lengths (None: one sequence)."""
    packing: str = "varlen"
    """varlen: blocks cut per sequence; document: one sequence's blocks (FlexAttention)."""

    @property
    def dv(self) -> int:
        """V's head dim (d unless d_v is given)."""
        return self.d_v or self.d

    @property
    def masked(self) -> bool:
        """A window or packed sequences: block visits by brute force over the kept scores."""
        return self.window is not None or self.seqlens is not None

    def _positions(self, q0: int, q1: int, k0: int, k1: int) -> tuple[Array, Array, Array]:
        """(query positions p, key positions, same-sequence booleans) of a block of scores."""
        rows = np.arange(q0, q1)[:, None]
        keys = np.arange(k0, k1)[None, :]
        if self.seqlens is None:
            return rows + self.offset, keys, np.ones((q1 - q0, k1 - k0), dtype=bool)
        # packed: sequence s holds tokens starts[s] .. starts[s+1] − 1 of Q and of K alike
        starts = np.concatenate([[0], np.cumsum(self.seqlens)])
        row_seq = np.searchsorted(starts, rows, side="right") - 1
        key_seq = np.searchsorted(starts, keys, side="right") - 1
        return rows, keys, row_seq == key_seq

    @property
    def group(self) -> int:
        """Query heads per KV head (GQA's group size g)."""
        return self.heads // self.kv_heads

    @property
    def offset(self) -> int:
        """Bottom-right causal alignment: query row q sees keys k <= q + n_kv − n_q."""
        return self.n_kv - self.n_q

    @property
    def scale(self) -> float:
        """The softmax scale τ = 1/√d."""
        return float(1.0 / np.sqrt(self.d))

    def kv_head(self, head: int) -> int:
        """GQA/MQA: query head h reads K, V of KV head h // group."""
        return head // self.group

    def causal_allowed(self, q0: int, q1: int, k0: int, k1: int) -> Array:
        """Which scores of rows q0..q1 × keys k0..k1 the causal mask keeps (all if non-causal)."""
        rows = np.arange(q0, q1)[:, None]
        keys = np.arange(k0, k1)[None, :]
        allowed: Array = keys <= rows + self.offset
        if not self.causal:
            allowed = np.ones_like(allowed)
        if not self.masked:
            return allowed
        position, key, same = self._positions(q0, q1, k0, k1)
        kept: Array = same & (key <= position if self.causal else True)
        if self.window is not None:
            w = self.window
            kept &= (key > position - w) if self.causal else (np.abs(key - position) < w)
        return kept

    def block_visited(self, q0: int, q1: int, k0: int, k1: int | None = None) -> bool:
        """Whether a tiled kernel computes the block of rows q0..q1 and keys from k0 (to k1).

        Non-causal: always. Causal: only if some row of the block sees the block's first key;
        the block's last row (q1 − 1) sees the most keys, so that is k0 <= q1 − 1 + offset.
        With a window or packed sequences: iff the block keeps at least one score.
        """
        if self.masked:
            stop = min(self.n_kv, k0 + 1) if k1 is None else k1
            return bool(self.causal_allowed(q0, q1, k0, stop).any())
        return not self.causal or k0 <= q1 - 1 + self.offset

    def row_blocks(self, size: int) -> list[tuple[int, int]]:
        """Query blocks of `size` rows: over the whole sequence, or each packed sequence cut
        from its own first token (its last block may be short)."""
        return self._cut(self.n_q, size)

    def kv_blocks(self, size: int) -> list[tuple[int, int]]:
        """Key/value blocks of `size` rows, cut as `row_blocks`."""
        return self._cut(self.n_kv, size)

    def kv_block_in_sequence(self, size: int) -> list[int]:
        """Each key block's index among its own sequence's key blocks (split-KV cuts a
        sequence's key blocks into splits)."""
        index: list[int] = []
        for length in ([self.n_kv] if not self._per_sequence else self.seqlens or ()):
            index.extend(range(len(blocks(length, size))))
        return index

    @property
    def _per_sequence(self) -> bool:
        return self.seqlens is not None and self.packing == "varlen"

    def _cut(self, length: int, size: int) -> list[tuple[int, int]]:
        if not self._per_sequence or self.seqlens is None:
            return blocks(length, size)
        out: list[tuple[int, int]] = []
        start = 0
        for part in self.seqlens:
            out.extend((start + a, start + b) for a, b in blocks(part, size))
            start += part
        return out

    @property
    def dense(self) -> bool:
        """Whether every block pair is computed (no block-sparse mask)."""
        return self.sparsity[0] == self.sparsity[1]

    def nonzero_blocks(self, block_q: int, block_kv: int) -> Array:
        """(T_r, T_c) booleans: the block pairs a tiled kernel computes, after the causal skip and
        the block-sparse mask.

        The mask (README, "Block-sparse FlashAttention"): number the pairs the causal mask leaves
        in row-major order k = 0, 1, ...; with s = p/q pair k is non-zero iff ⌈(k+1)·s⌉ > ⌈k·s⌉.
        """
        row_blocks, kv_blocks = self.row_blocks(block_q), self.kv_blocks(block_kv)
        out = np.zeros((len(row_blocks), len(kv_blocks)), dtype=bool)
        num, den = self.sparsity
        k = 0
        for i, (q0, q1) in enumerate(row_blocks):
            for j, (k0, k1) in enumerate(kv_blocks):
                if self.block_visited(q0, q1, k0, k1):
                    out[i, j] = -(-(k + 1) * num // den) > -(-k * num // den)
                    k += 1
        return out

    def attention_mask(self, block_q: int, block_kv: int) -> Array:
        """(N_q, N_kv) booleans: the scores attention keeps — the causal mask and, when sparse, the
        block-sparse mask on the grid of B_r × B_c blocks (what standard attention applies)."""
        allowed = self.causal_allowed(0, self.n_q, 0, self.n_kv)
        if self.dense:
            return allowed
        pairs = self.nonzero_blocks(block_q, block_kv)
        rows = np.arange(self.n_q) // block_q
        keys = np.arange(self.n_kv) // block_kv
        mask: Array = allowed & pairs[rows[:, None], keys[None, :]]
        return mask


def problem_of(workload: Workload) -> Problem:
    """The executor's view of a workload (sizes and the head grouping)."""
    return Problem(workload.batch, workload.heads, workload.kv_heads, workload.n,
                   workload.n_kv, workload.d, workload.causal, workload.sparsity_fraction,
                   workload.d_v, workload.latent_kv, workload.fp8_scales, workload.dtype,
                   window=workload.window, seqlens=workload.seqlens, packing=workload.packing)


def blocks(length: int, size: int) -> list[tuple[int, int]]:
    """(start, stop) of each block of `size` rows; the last may be shorter."""
    return [(s, min(length, s + size)) for s in range(0, length, size)]


# -- dropout: a counter-based generator, so a tile can regenerate its own mask --------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: Array) -> Array:
    """SplitMix64's finaliser: a bijective mix of 64-bit counters into uniform bits."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return np.asarray(z ^ (z >> np.uint64(31)))


def dropout_keep(seed: int, problem: Problem, batch: int, head: int, q0: int, q1: int,
                 k0: int, k1: int, p: float) -> Array:
    """The keep-mask (True = kept) of rows q0..q1 × keys k0..k1 of one (batch, head).

    Each score's fate depends only on (seed, batch, head, row, key), like the Philox counter
    FlashAttention regenerates in its backward pass (Alg. 2 line 1, Alg. 4 line 14), so the
    standard pipeline's whole mask and a tiled kernel's tile of it are the same numbers.
    """
    rows = np.arange(q0, q1, dtype=np.uint64)[:, None]
    keys = np.arange(k0, k1, dtype=np.uint64)[None, :]
    plane = np.uint64((batch * problem.heads + head) * problem.n_q)
    with np.errstate(over="ignore"):
        counter = (plane + rows) * np.uint64(problem.n_kv) + keys
        bits = _splitmix64(counter ^ _splitmix64(np.asarray(np.uint64(seed))))
    uniform = (bits >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    keep: Array = uniform >= p
    return keep
