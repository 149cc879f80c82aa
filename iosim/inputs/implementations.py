"""Implementations as data: what a real attention kernel library runs, one YAML file each.

`--impl NAME` says which code runs the attention: its tile sizes per (head dim, causal, pass,
GPU), its warps and shared memory (hence programs per SM), its split-KV rule, its backward and
every extra kernel it launches. configs/impls/*.yaml ship inside the wheel; a user adds one by
passing the path of their own file. Every trait carries a `source` (a file and line of the
implementation's code, or `measured: ...` when only a measurement can tell). Unknown keys,
missing keys and wrong types are refused with the file and key named (ConfigError).

A tile table is a list of rows tried in order, the first that matches wins. A row matches on
`d_max` (the head dimension is at most this; FA2's HEADDIM_SWITCH rounds d up the same way),
and optionally `causal`, `cc` (compute capabilities, e.g. ["86", "89"]), `smem_per_block_min`
and `smem_per_sm_below` (bytes; FA2's hdim256 choice reads the device's opt-in shared memory).
The lookup works on ints (one workload) and arrays (a sweep) alike. The YAML is read by
implementations_yaml.py (`get_implementation`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iosim.errors import IosimError, arg
from iosim.inputs.impl_features import Feature, instead, shipped_where
from iosim.inputs.ints import Int
from iosim.record import Record

EXTRA_KERNELS = ("gqa_expand", "scale", "mask", "layout_copy", "softmax_mul", "mask_read",
                 "out_of_place", "mask_out_of_place", "dk_first", "dense_mask")
"""gqa_expand: K, V repeated per query head (repeat_interleave) before the attention kernel;
scale, mask: an elementwise pass over S (standard attention's unfused ops); layout_copy (a
backward pass only): dO and O copied into the kernel's layout before the backward kernels;
softmax_mul (a backward pass only): the softmax backward as two N×N passes, T = P∘dP, then
dS = T − P·rowsum(T) (impl_kernels.py); mask_read (a backward pass only): the mask pass's
backward reads the (N, N_kv) bool mask, one copy broadcast over batch and heads; out_of_place
(a backward pass only): the mask's and the scale's backward passes each write a new N×N tensor
(autograd's grad.masked_fill(mask, 0) and grad * scale) instead of overwriting dS; the same
bytes, a second N×N matrix in the L2's footprint; mask_out_of_place (a forward pass): the mask
pass as `s.masked_fill(~keep, -inf)` runs it, `~keep` once, a clone of S, the fill on the copy
reading the broadcast bool mask (analysis/eager_mask.py); dk_first (a backward pass only): the dK GEMM
runs before the dQ GEMM (Alg. 3's lines 5 and 4 swapped): the same kernels and bytes, another
order for the L2 model; dense_mask (a forward pass, when chunked_causal): the lower-right causal
mask materialised as an additive (n, n_kv) bias that the kernel reads, skipping no block
(analysis/dense_mask.py)."""


class TileRow(Record):
    """One row of a tile table: when it applies, and the tiles and resources it gives."""

    d_max: int
    block_q: int
    block_kv: int
    warps: int
    source: str
    causal: bool | None = None
    dtype: tuple[str, ...] = ()
    """The element sizes' dtypes the row applies to (empty: any)."""
    cc: tuple[str, ...] = ()
    smem_per_block_min: int = 0
    smem_per_sm_below: int = 0
    stages: int = 0
    shared_bytes: int = 0
    """Shared memory per program when declared (measured for Triton); 0: by `SharedMemory`."""
    registers_per_thread: int = 0
    """0: not declared (then registers do not limit the programs per SM)."""


class SharedMemory(Record):
    """Shared memory per program = ((q_tiles·B_r + kv_tiles·B_c)·d + score_tiles·B_r·B_c) ·
    element bytes."""

    q_tiles: int
    kv_tiles: int
    source: str
    score_tiles: int = 0

    def bytes(self, block_q: Int, block_kv: Int, d: Int, element_bytes: Int) -> Int:
        """Shared memory of one program in bytes: its Q, K/V and score tiles at these blocks, head dim
        and element size (ints or arrays)."""
        return ((self.q_tiles * block_q + self.kv_tiles * block_kv) * d
                + self.score_tiles * block_q * block_kv) * element_bytes


SPILL_INSTANCES = ("causal even", "causal uneven", "even", "uneven")
"""FA2's forward template instances that spill apart, Is_causal × Is_even_MN (SpillRow.by_instance;
estimates/spills.py fa2_instance picks one)."""


class SpillRow(Record):
    """A fused forward kernel's register spills at head dims up to `d_max` (measured: ncu's
    local-memory sectors, estimates/spills.py): the local-memory bytes one program stores per
    key block (all of them written through to the L2) and the bytes of them per program that
    miss L1 and reach DRAM once (written back)."""

    d_max: int
    l2_store_bytes_per_block: int
    dram_write_bytes_per_program: int
    source: str
    by_instance: tuple[tuple[str, int], ...] = ()
    """DRAM write-back per program of each kernel template instance that spills its own amount
    (SPILL_INSTANCES), overriding
    `dram_write_bytes_per_program` for that instance; (): one figure for every instance."""

    def write_back_per_program(self, instance: str) -> int:
        """The DRAM bytes per program of the template instance `instance` (by_instance, else
        the row's one figure)."""
        return dict(self.by_instance).get(instance, self.dram_write_bytes_per_program)


class Trait(Record):
    """A trait given in words, with its source."""

    value: str
    source: str


class SplitRule(Record):
    """When the forward splits the KV sequence, and the tiles of its split kernel."""

    rule: str
    source: str
    tiles: tuple[TileRow, ...] = ()


EXTRA_KERNEL_WHEN = ("always", "gqa", "causal", "chunked_causal", "multihead")
"""When an extra kernel runs (ExtraKernel.when)."""


class ExtraKernel(Record):
    """A kernel an implementation launches beside the attention (kind: gqa_expand, scale or mask)."""

    kind: str
    when: str
    """always, gqa (heads > kv_heads), causal, chunked_causal (causal with n != n_kv) or
    multihead (heads > 1)."""
    source: str


class Implementation(Record):
    """One implementation's declared traits (see the module docstring)."""

    name: str
    title: str
    runs: str
    algorithm: str
    dtypes: tuple[str, ...]
    head_dim_max: int
    head_dim_multiple: int
    head_dim_source: str
    forward_tiles: tuple[TileRow, ...]
    backward_tiles: tuple[TileRow, ...]
    shared_memory: SharedMemory | None
    backward_shared_memory: SharedMemory | None
    launch_order: Trait
    split_kv: SplitRule
    backward: Trait
    gqa: Trait
    extra_kernels: tuple[ExtraKernel, ...]
    path: str
    notes: str = ""
    persistent: Trait | None = None
    """A persistent kernel (one program per SM, looping over tiles): its grid always fills
    the GPU, so waves do not apply."""
    forward_walk: Trait | None = None
    """The order the fused forward kernel's programs walk their key blocks: "descending"
    (FlashAttention-2: from the last down; the L2 model then uses estimates/l2_launch_walk.py
    for causal calls) or "ascending" / None (from the first up, as iosim's Triton kernel).
    sdpa-flash declares it since round 9's fresh judgement (docs/implementations.md)."""
    head_dim_v_same: str = ""
    """Where the implementation requires V's head dim to equal Q's and K's (the YAML's
    head_dim.v_same_source); "" when it takes a d_v of its own."""
    spills: tuple[SpillRow, ...] = ()
    """The fused forward kernel's register spills by head dim (SpillRow); (): none declared."""
    features: tuple[Feature, ...] | None = None
    """The workload features its API takes (causal, sparsity, window, ...: impl_features.py),
    each with its source; None: the profile declares none and none is refused."""
    backward_algorithm: str = ""
    """The loop nest its backward runs where that is not `algorithm`'s (the YAML's
    backward.algorithm: 'triton', iosim's own Triton backward, whose launch tiles are that
    algorithm's); "": `algorithm`'s backward at `backward_tiles`."""
    backward_head_dims: tuple[int, ...] = ()
    """The head dims that backward runs (backward.head_dims); (): every head dim it accepts."""

    @property
    def walks_down(self) -> bool:
        """Whether the fused forward walks its key blocks from the last down (forward_walk)."""
        return self.forward_walk is not None and self.forward_walk.value == "descending"

    def spill_for(self, d: int) -> SpillRow | None:
        """The spill row of head dim d (the first whose d_max covers it), if any."""
        return next((r for r in self.spills if d <= r.d_max), None)

    @property
    def refuses_gqa(self) -> bool:
        """Whether the implementation refuses GQA (heads ≠ kv_heads)."""
        return self.gqa.value.startswith("refused")

    def check_shape(self, d: int, dtype: str, *, gqa: bool = False,
                    backward: bool = False, d_v: int | None = None,
                    latent_kv: bool = False) -> None:
        """Refuse (one line) a head dim, dtype, GQA or backward pass this implementation does
        not run or whose backward its profile does not declare; a V head dim apart from d where
        it needs them equal; MLA's latent cache (every profile reads V as a tensor of its own)."""
        if latent_kv:
            raise IosimError(f"{self.name} reads V as a tensor of its own; MLA's latent cache "
                             f"({arg('latent_kv')}) is modelled without {arg('impl')} "
                             f"({arg('algorithms', 'splitkv')}: FlashMLA's tiles)",
                             param="latent_kv")
        if d_v is not None and d_v != d and self.head_dim_v_same:
            others = shipped_where(lambda p: not p.head_dim_v_same, besides=self.name)
            raise IosimError(f"{self.name} needs V's head dim equal to Q's and K's "
                             f"({self.head_dim_v_same}), got {arg('d', d)} {arg('d_v', d_v)}; "
                             f"{instead(others)}" + (f", or no {arg('impl')}" if others else ""),
                             param="d_v")
        if backward and self.backward_head_dims and d not in self.backward_head_dims:
            raise IosimError(f"{self.name}'s backward runs head dims "
                             f"{', '.join(map(str, self.backward_head_dims))} "
                             f"({self.backward.source}), got {arg('d', d)}; use one of them or "
                             f"{arg('pass_', 'fwd')}", param="d")
        if (backward and self.algorithm != "standard" and not self.backward_tiles
                and not self.backward_algorithm):
            raise IosimError(f"{self.name}'s profile declares no backward tiles ({self.backward.value}; "
                             f"{self.backward.source}); use {arg('pass_', 'fwd')}, or "
                             f"{arg('impl', 'sdpa-flash')} for FlashAttention-2's backward",
                             param="pass_")
        if gqa and self.refuses_gqa:
            raise IosimError(f"{self.name} does not run GQA ({self.gqa.value}; "
                             f"{self.gqa.source}); use {arg('kv_heads')} equal to "
                             f"{arg('heads')} or another {arg('impl')}", param="kv_heads")
        if dtype not in self.dtypes:
            # (the profile's dtypes carry no source of their own: none is quoted; the head
            # dim's source, quoted here before, is about head dims)
            others = shipped_where(lambda p: dtype in p.dtypes, besides=self.name)
            raise IosimError(f"{self.name} runs {', '.join(self.dtypes)} (its profile's dtypes), "
                             f"not {arg('dtype', dtype)}; use {arg('dtype', self.dtypes[0])}, or "
                             + (f"{arg('impl')} {' or '.join(others)} (the shipped "
                                f"implementations that run it)" if others else
                                f"no {arg('impl')} (no shipped implementation runs it)"),
                             param="dtype")
        if d > self.head_dim_max or d % self.head_dim_multiple:
            rule = (f"at most {self.head_dim_max}" + (
                f" and a multiple of {self.head_dim_multiple}" if self.head_dim_multiple > 1
                else ""))
            raise IosimError(f"{self.name} refuses {arg('d', d)}: its head dim must be {rule} "
                             f"({self.head_dim_source}); use another {arg('impl')} or "
                             f"{arg('d')}", param="d")

    def extra_kernels_for(self, *, gqa: bool, causal: bool, multihead: bool = True,
                          chunked: bool = False) -> tuple[ExtraKernel, ...]:
        """The extra kernels that run for a workload with or without GQA, a causal mask, more
        than one query head and n != n_kv (`chunked`)."""
        on = {"always": True, "gqa": gqa, "causal": causal, "multihead": multihead,
              "chunked_causal": causal and chunked}
        return tuple(k for k in self.extra_kernels if on[k.when])


_DTYPE_CODES = {"fp16": 0, "bf16": 1, "fp32": 2, "fp8": 3, "fp8_e4m3": 4, "fp8_e5m2": 5}


def dtype_code(dtype: str) -> int:
    """The integer a sweep carries for a dtype in tile lookups."""
    return _DTYPE_CODES[dtype]


def match_rows(rows: tuple[TileRow, ...], *, d: Int, causal: Int, dtype: Int, cc: Int,
               smem_per_block: Int, smem_per_sm: Int) -> tuple[Any, Any]:
    """(index of the first matching row, whether one matched), on ints or broadcast arrays.

    `dtype` is `dtype_code(...)` of the workload's dtype, `cc` the compute capability as an int
    (80; 0 when unknown)."""
    shape = np.broadcast_shapes(*(np.shape(v) for v in (d, causal, dtype, cc, smem_per_block,
                                                        smem_per_sm)))
    index = np.full(shape, -1, dtype=np.int64)
    d_, causal_, cc_ = np.asarray(d), np.asarray(causal, dtype=bool), np.asarray(cc)
    per_block, per_sm = np.asarray(smem_per_block), np.asarray(smem_per_sm)
    for i, row in enumerate(rows):
        ok = d_ <= row.d_max
        if row.causal is not None:
            ok = ok & (causal_ == row.causal)
        if row.dtype:
            ok = ok & np.isin(np.asarray(dtype), [_DTYPE_CODES[t] for t in row.dtype])
        if row.cc:
            ok = ok & np.isin(cc_, [int(c) for c in row.cc])
        if row.smem_per_block_min:
            ok = ok & (per_block >= row.smem_per_block_min)
        if row.smem_per_sm_below:
            ok = ok & (per_sm < row.smem_per_sm_below)
        index = np.where((index < 0) & ok, i, index)
    found = index >= 0
    if index.ndim == 0:
        return int(index), bool(found)
    return index, found


def row_values(rows: tuple[TileRow, ...], index: Any, field: str) -> Any:
    """A field of the chosen rows (0 where none matched), int or array."""
    values = np.array([getattr(r, field) for r in rows] + [0], dtype=np.int64)
    picked = values[np.where(np.asarray(index) < 0, len(rows), index)]
    return int(picked) if np.ndim(picked) == 0 else picked
