"""An algorithm written once as its loop nest, and the two counts derived from it.

Every kernel of every algorithm is one of two shapes:

    whole-tensor kernel (standard attention's steps, initialisations):
        every access reads or writes a whole tensor

    tiled kernel, outer loop over query blocks ("q") or key/value blocks ("kv"):
        prologue accesses                       (whole tensors)
        for each outer block o:
            "outer" accesses                    (tile o)
            for each inner block p visited with o (causal masks skip pairs):
                "inner" accesses                (tile p, or tile o again)
            "outer_end" accesses                (tile o)
        epilogue accesses                       (whole tensors)

Three refinements, each a flag on the Kernel or the Dims (issue 3):
  - block-sparse (Dims.sparsity_num/den < 1): "inner" accesses happen only for the non-zero pairs
    of the mask in blockmask.py; "outer"/"outer_end" are untouched (K_j, V_j still loaded, O
    still written: Prop. 4).
  - split-KV (Kernel.split, q-outer only): each outer block o runs as Dims.splits programs, split
    k visiting the key blocks [k·nb, (k+1)·nb) of o (nb = ⌈T_c/splits⌉). "outer" accesses happen
    once per program that has a key block to visit after the causal skip (FA2 exits an empty
    split before loading anything; a block-sparse mask does not empty a split), "outer_end" once
    per program. Access.per_split marks a tensor with one copy per split (the partial outputs);
    a whole-tensor access of it moves every copy.
  - head packing (Kernel.pack_heads): the g = heads/kv_heads query heads of a KV head are
    stacked as g·n_q rows of one problem (FA2 `seqlenq_ngroups_swapped` for decoding), so a
    program serves a KV head and reads its K/V once. Valid only where every query row sees
    every key (n_q = 1, or no causal mask): the packed problem is counted without a mask.
And three of issue 14: a "dv" column kind (V, O, dO, dV rows are Workload.d_v wide), an "out"
element (O in its own dtype: bf16 for FP8 inputs) and Access.scale (an FP8 descale factor, one
element per program or per tile, algorithms/fp8.py).

From that one description come
  1. `closed_form` (closedform.py): exact element counts as sums over the loop (block sums
     in blocks.py), vectorised so that sweeps evaluate grids without a Python loop per point;
  2. `walk` (tilewalk.py): the literal tile-by-tile access stream (every load and store),
     which tests hold equal to the closed form and which feeds the L2 model
     (tilestream.walk_arrays builds the same stream as numpy columns, for long ones).
The NumPy executor (iosim/execute/) runs the same loops on real numbers through an instrumented HBM,
written by hand and independently of this module, so that its counts check both.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from iosim.algorithms.traffic import Op
from iosim.inputs.units import STAT_BYTES
from iosim.inputs.workload import Workload
from iosim.record import Record

PAGE_INDEX_BYTES = 4
"""A block-table entry: int32 (vLLM `block_tables`, FA2 `block_table`, FlashInfer `kv_indices`)."""

Where = Literal["prologue", "outer", "inner", "outer_end", "epilogue"]
Axis = Literal["q", "kv"]
Cols = Literal["d", "dv", "1", "kv"]
ElementType = Literal["io", "out", "fp32", "u8", "i32"]
Scale = Literal["", "tensor", "block"]
KernelKind = Literal["elementwise", "matmul", "fused"]


class Access(Record):
    """One read or write of a tensor (or of its tile) at one place in the loop nest."""

    tensor: str
    op: Op
    where: Where
    rows: Axis
    """The tile's rows run along the query (q) or the key/value (kv) sequence."""
    cols: Cols
    """Each row holds d elements (Q, K, dQ, dK), d_v (V, O, dO, dV, split-KV's partial outputs:
    V's head dim), 1 (a per-row statistic) or n_kv (a row of an N×N matrix)."""
    cite: str
    element: ElementType = "io"
    """io: the workload's dtype; out: O's dtype (bf16 for FP8 inputs, else the workload's);
    fp32: statistics, accumulators and FP8 scales; u8: a dropout mask."""
    init: bool = False
    per_kv_head: bool = False
    """Done once per KV head instead of once per query head (GQA/MQA); the walk issues it with
    the group's last query head."""
    per_split: bool = False
    """The tensor has one copy per KV split (split-KV partial outputs and log-sum-exps)."""
    scale: Scale = ""
    """An FP8 descale factor (fp8.py): one element per program ("prologue": per (batch, head);
    "outer": per outer block, or per split-KV program with work) or per tile loaded ("inner":
    per visited pair), not rows × width. "tensor": FA3's per-(batch, KV head) factor, row 0;
    "block": one per tile, its row the tile's index."""
    per_page: bool = False
    """A paged KV cache's block table (paging.py): an inner access of a query-outer kernel
    that reads one element per page its K/V tile spans (Dims.page_size), not one per row."""
    broadcast: bool = False
    """One copy in HBM read by every (batch, head) (eager PyTorch's (N, N_kv) causal bool mask,
    broadcast over batch and heads): counted per head like any load, held once (tensor_bytes)
    and walked as batch 0, head 0, so that the L2 model sees one tensor re-read."""
    once: bool = False
    """One copy touched once by the whole launch, not once per (batch, head) (eager PyTorch's
    `~keep` over the (N, N_kv) causal bool mask, analysis/impl_kernels.py): counted once, held
    once (tensor_bytes) and walked as batch 0, head 0 only."""


class FlopCount(Record):
    """FLOPs of a kernel: coefficient × a count per head.

    score: visited scores; score_d: visited scores × d (Q·K products: S, dQ, dK);
    score_dv: visited scores × d_v (products over V's head dim: PV, dV, dP); q_d: n_q·d;
    q_dv: n_q·d_v (O-wide work); q: n_q; pair_q_dv: Σ over visited pairs of the query block's
    rows × d_v (work redone on an O-wide query tile every pass).
    """

    kind: Literal["matmul", "elementwise"]
    per: Literal["score", "score_d", "score_dv", "q_d", "q_dv", "q", "pair_q_dv"]
    coefficient: int
    cite: str
    per_split: bool = False
    """Counted once per KV split (× Dims.splits): split-KV's combine works on every split."""


class Segment(Record):
    """Part of a ragged launch (segments.py): `batch` requests from batch index `batch_start`,
    each of n_q query rows and n_kv keys (no mask: decoding sees every key), their rows
    starting at `q_start` and `kv_start` of the tensors they address."""

    batch_start: int
    batch: int
    n_q: int
    n_kv: int
    q_start: int = 0
    kv_start: int = 0


class Kernel(Record):
    """One kernel launch of an algorithm (over all batches and heads)."""

    name: str
    label: str
    kind: KernelKind
    accesses: tuple[Access, ...]
    flops: tuple[FlopCount, ...] = ()
    loop: Axis | None = None
    """Outer loop axis of a tiled kernel; None for a whole-tensor kernel."""
    split: bool = False
    """Split-KV: every outer (query) block runs as Dims.splits programs over its key blocks."""
    pack_heads: bool = False
    """The query heads of a KV head are stacked into the rows of one program (decoding)."""
    blocks: Literal["forward", "backward"] = "forward"
    """Which of the algorithm's block sizes the kernel tiles with (Tiling.backward_blocks)."""
    grid: Literal["blocks", "heads"] | None = None
    """The launch grid, for occupancy: one program per outer block (× split) of each (batch,
    head), one per (batch, head), or None where iosim does not model it (library kernels)."""
    tile: tuple[int, int] | None = None
    """Fixed (B_r, B_c) of a kernel whose code sets its tiles (iosim's Triton backward, whose
    block sizes are its launch configuration): they override the Tiling's."""
    inner_descending: bool = False
    """The inner loop walks its blocks from the last down (FlashAttention-2's backward: `for (;
    m_block >= m_block_min; --m_block)`). Counts do not depend on it; the L2 model does: causal
    programs of one head then start on the same tiles and walk them in lockstep."""
    balanced: bool = False
    """A stream-K grid (cuDNN's lean decode, analysis/stream_k.py): a persistent grid whose
    programs share all the (program, key block) iterations evenly, so its occupancy is that of
    the iterations, not of the programs. Counts do not depend on it; the time does."""
    segments: tuple[Segment, ...] = ()
    """A ragged launch: the loops run once per segment over its own sizes (shared-prefix
    batches, cascade.py), replacing the workload's N, N_kv and batch; () = the workload's."""

    def __post_init__(self) -> None:
        if self.split and self.loop != "q":
            raise ValueError(f"{self.name}: split-KV needs a query-outer loop")
        if self.pack_heads and self.loop is None:
            raise ValueError(f"{self.name}: head packing needs a tiled kernel")
        if self.tile is not None and self.loop is None:
            raise ValueError(f"{self.name}: fixed tiles need a tiled kernel")
        for access in self.accesses:
            if self.loop is None and access.where != "prologue":
                raise ValueError(f"{self.name}: whole-tensor kernels only have prologue accesses")
            if access.per_page and (access.where != "inner" or self.loop != "q"):
                raise ValueError(f"{self.name}: a block table is read by the inner loop of a "
                                 f"query-outer kernel")
            if access.once and self.loop is not None:
                raise ValueError(f"{self.name}: a once-per-launch access ({access.tensor}) is "
                                 f"a whole-tensor kernel's")
            if access.where in ("outer", "outer_end") and access.rows != self.loop:
                raise ValueError(f"{self.name}: outer tile {access.tensor} must run along {self.loop}")


KV_HEAD_TENSORS = frozenset({"K", "V", "dK", "dV", "q_descale", "k_descale", "v_descale",
                             "K_scale", "V_scale"})
"""Tensors that exist once per KV head (GQA/MQA), not once per query head (FA3's descale
factors are (batch, KV heads), q_descale too; fp8.py)."""


def v_tile(workload: Workload, access: Access) -> tuple[Access, ...]:
    """A fused kernel's load of V_j, or nothing for MLA's latent cache (Workload.latent_kv):
    there V_j is the first d_v columns of the K_j tile already in SRAM (DeepSeek-V2 §2.1.2's
    absorbed form; FlashMLA multiplies P by that part of its K tile), so no byte of V is read."""
    return () if workload.latent_kv else (access,)


def element_bytes(element: ElementType, workload_element_bytes: Any,
                  output_element_bytes: Any = None) -> Any:
    """Bytes of one element of an access: the workload's dtype (io), O's (out; None: io's),
    fp32, u8, or a block table's int32 (i32)."""
    # a chain, not a dict built per call: the L2 model calls this for every access of every
    # kernel at every point of a measured-profile sweep
    if element == "io":
        return workload_element_bytes
    if element == "out":
        return workload_element_bytes if output_element_bytes is None else output_element_bytes
    if element == "fp32":
        return STAT_BYTES
    if element == "u8":
        return 1
    if element == "i32":
        return PAGE_INDEX_BYTES
    raise KeyError(element)


def row_width(cols: Cols, d: Any, n_kv: Any, d_v: Any = None) -> Any:
    """Elements in one row of an access's tensor: d (the Q·K head dim), d_v (V's head dim;
    None: d), 1 (a per-row statistic) or n_kv (a row of an N×N matrix). Ints or arrays."""
    if cols == "d":
        return d
    if cols == "dv":
        return d if d_v is None else d_v
    if cols == "1":
        return 1
    if cols == "kv":
        return n_kv
    raise KeyError(cols)


def tensor_bytes(access: Access, workload: Workload, *, per_head: bool = False,
                 splits: Any = 1) -> Any:
    """Bytes in HBM of the whole tensor an access touches: one head's (`per_head`), or every
    (batch, head)'s, K/V-side tensors per KV head, with `splits` copies of a per-split partial
    output. Ints, or arrays in a sweep. The footprint (what is held) and the L2 model (what a
    sweep over a tensor touches) both size tensors with it."""
    if access.scale:
        return 0  # FP8 descale factors: a few bytes per program, neither held nor cached
    length = workload.n if access.rows == "q" else workload.n_kv
    size = (length * row_width(access.cols, workload.d, workload.n_kv, workload.d_v)
            * element_bytes(access.element, workload.element_bytes,
                            workload.output_element_bytes))
    if not per_head and not access.broadcast and not access.once:
        per_kv = access.per_kv_head or access.tensor in KV_HEAD_TENSORS
        size = size * workload.batch * (workload.kv_heads if per_kv else workload.heads)
        size = size * (splits if access.per_split else 1)
    if type(size) is int:
        return size
    return int(size) if np.ndim(size) == 0 else size


# ---------------------------------------------------------------------------------------------
# the closed form lives in closedform.py; its names are still importable from here


_CLOSED_FORM_NAMES = frozenset({"Dims", "kernel_dims", "pass_blocks", "kernel_blocks",
                                "segment_dims", "kernel_sums", "access_elements", "kernel_flops",
                                "kernel_programs", "closed_form", "masked_sums",
                                "masked_split_rows", "masked_longest"})


def __getattr__(name: str) -> Any:
    """`from iosim.algorithms.loopnest import closed_form, Dims, ...` keeps working: the closed
    form moved to closedform.py (which imports this module, hence loaded on first use)."""
    if name in _CLOSED_FORM_NAMES:
        from iosim.algorithms import closedform

        return getattr(closedform, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
