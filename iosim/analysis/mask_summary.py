"""What a sliding window or packed sequences do to each tiled kernel of a comparison.

For every tiled kernel with a modelled grid: the block pairs it visits per (batch, head) under
the mask against the pairs it visits without it (the same causal flag, one sequence); its
programs (launched, and those with a block: packed sequences launch ⌈max_seqlen/B⌉ per sequence,
FlashAttention-2 varlen, and the rest exit at once); the longest program's inner-block steps and
its share of all steps; and the waves of the grid (estimates/occupancy.py). Standard attention
materialises every score, so a mask saves it nothing (it masks S in its softmax).
"""

from __future__ import annotations

from typing import Any

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.closedform import Dims, kernel_dims, kernel_programs, kernel_sums
from iosim.algorithms.loopnest import Kernel
from iosim.algorithms.masks import grid_blocks, longest_program
from iosim.analysis.impl_kernels import impl_workload
from iosim.estimates.occupancy import waves
from iosim.inputs.tiling import Tiling
from iosim.inputs.workload import Workload
from iosim.record import Record

SHOWN_SEQUENCES = 8
"""Sequences whose programs a table line lists before '…' (the JSON lists every one)."""


class KernelMask(Record):
    """One tiled kernel under the mask (counts per (batch, head) unless said otherwise)."""

    algorithm: str
    kernel: str
    label: str
    pairs: int
    """Block pairs visited under the mask."""
    unmasked_pairs: int
    """Block pairs the same kernel visits without window or packing (causal as given)."""
    programs: int
    """Programs launched, over all batches and heads."""
    working_programs: int
    """Programs with an outer block (the others exit at once), over all batches and heads."""
    longest_steps: int
    """Inner-block steps of the longest program."""
    programs_per_sequence: tuple[int, ...]
    """Outer blocks of each packed sequence (one entry without packing)."""
    waves: int | None
    """⌈programs / (programs per SM × SMs)⌉, None where the SM count is unknown."""

    @property
    def density(self) -> float:
        """Visited pairs over the unmasked kernel's."""
        return self.pairs / self.unmasked_pairs if self.unmasked_pairs else 1.0

    @property
    def longest_share(self) -> float:
        """The longest program's steps over all steps of one (batch, head)."""
        return self.longest_steps / self.pairs if self.pairs else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `compare`'s "mask" list."""
        return {"algorithm": self.algorithm, "kernel": self.kernel, "pairs": self.pairs,
                "unmasked_pairs": self.unmasked_pairs, "density": self.density,
                "programs": self.programs, "working_programs": self.working_programs,
                "longest_program_steps": self.longest_steps,
                "longest_program_share": self.longest_share,
                "programs_per_sequence": list(self.programs_per_sequence), "waves": self.waves}


def kernel_masks(algorithm: str, kernels: tuple[Kernel, ...], workload: Workload,
                 tiling: Tiling | None, sm_count: int | None) -> tuple[KernelMask, ...]:
    """Every tiled, gridded kernel of one algorithm under the workload's mask (none without)."""
    if not workload.masked or tiling is None:
        return ()
    dims = Dims.of(workload, tiling)
    plain = Dims.of(workload.with_(window=None, seqlens=None, packing="varlen"), tiling)
    out = []
    for kernel in kernels:
        if kernel.loop is None or kernel.grid != "blocks":
            continue
        kd = kernel_dims(kernel, dims)
        along_q = kernel.loop == "q"
        block = kd.block_q if along_q else kd.block_kv
        varlen = workload.seqlens is not None and workload.packing == "varlen"
        per_sequence = tuple(int(-(-length // block)) for length in (
            workload.seqlens if varlen and workload.seqlens else
            ((workload.n if along_q else workload.n_kv),)))
        _, working = grid_blocks(workload.n, workload.n_kv, block, along_q, workload.seqlens,
                                 workload.packing)
        per_sm = tiling.bwd_programs_per_sm if kernel.blocks == "backward" else \
            tiling.programs_per_sm
        programs = int(kernel_programs(kernel, dims))
        out.append(KernelMask(
            algorithm, kernel.name, kernel.label,
            pairs=int(kernel_sums(kernel, dims).pairs),
            unmasked_pairs=int(kernel_sums(kernel, plain).pairs),
            programs=programs,
            working_programs=working * kd.batch * kd.heads * (kd.splits if kernel.split else 1),
            longest_steps=longest_program(workload.n, workload.n_kv, kd.block_q, kd.block_kv,
                                          workload.causal, workload.window, workload.seqlens,
                                          along_q, workload.packing),
            programs_per_sequence=per_sequence,
            waves=None if not sm_count else int(waves(programs, per_sm, sm_count)),
        ))
    return tuple(out)


def comparison_masks(workload: Workload, estimates: Any, sm_count: int | None
                     ) -> tuple[KernelMask, ...]:
    """kernel_masks of every tiled algorithm of a comparison (`AlgorithmEstimate`s)."""
    out: list[KernelMask] = []
    for a in estimates:
        name = a.algorithm or a.name
        if a.tiling is None or name not in ALGORITHMS:
            continue
        w = workload if a.impl is None else impl_workload(a.impl, workload)
        kernels = ALGORITHMS[name].kernels(w, a.tiling)
        out.extend(kernel_masks(a.name, kernels, w, a.tiling, sm_count))
    return tuple(out)


def mask_lines(workload: Workload, masks: tuple[KernelMask, ...],
               impl: Any = None) -> list[str]:
    """The lines `compare`'s header shows under "mask" (`impl`: the --impl, which may run
    packed sequences its own way)."""
    w = workload if impl is None else impl_workload(impl, workload)
    lines = []
    if w.window is not None:
        lines.append(
            f"window {w.window:,}: each query sees its {w.window:,} most recent keys (FA2 "
            f"window_size = ({w.window - 1}, 0), HF sliding_window = {w.window})" if w.causal else
            f"window {w.window:,}, two-sided: each query sees keys within {w.window - 1:,} of "
            f"its position (FA2 window_size = ({w.window - 1}, {w.window - 1}))")
    if w.seqlens is not None:
        how = ("FA2 varlen: blocks start at each sequence's first token" if w.packing == "varlen"
               else "FlexAttention document mask: blocks straddle sequences, a straddling "
                    "block is visited in full")
        lines.append(f"{len(w.seqlens):,} packed sequences (longest {max(w.seqlens):,}, "
                     f"shortest {min(w.seqlens):,}); {how}")
    for m in masks:
        text = (f"{m.algorithm} {m.label}: {m.pairs:,} of {m.unmasked_pairs:,} block pairs per "
                f"head ({100 * m.density:.3g}%)")
        if w.seqlens is not None and w.packing == "varlen":
            shown = ", ".join(str(p) for p in m.programs_per_sequence[:SHOWN_SEQUENCES])
            more = ", …" if len(m.programs_per_sequence) > SHOWN_SEQUENCES else ""
            text += (f"; programs per sequence {shown}{more}: {m.working_programs:,} of "
                     f"{m.programs:,} launched do work")
        text += (f"; longest program {m.longest_steps:,} steps ({m.longest_share:.1%} of a "
                 f"head's)")
        if m.waves is not None:
            text += f"; {m.waves:,} wave{'s' if m.waves != 1 else ''}"
        lines.append(text)
    if lines:
        lines.append("standard attention stays dense: it computes and stores every score of S "
                     "and P and masks them in its softmax, so the mask saves it nothing (and "
                     "costs one more N×N read and write of S with --unfused mask)")
    return lines
