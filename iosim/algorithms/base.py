"""What every algorithm provides: its kernels for a workload, as loop nests (loopnest.py), the
workload axes those kernels depend on, and its tiling choices beyond the forward's blocks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from iosim.algorithms.loopnest import Kernel
from iosim.errors import IosimError, arg
from iosim.inputs.code_tiles import CodeTiles
from iosim.inputs.tiling import Tiles, Tiling, TilingInputs
from iosim.inputs.workload import Workload
from iosim.record import replace


class Algorithm(ABC):
    """One attention algorithm. Subclass it in one module of iosim/algorithms/ and list an
    instance in iosim/algorithms/__init__.py:ALGORITHMS (docs/contributing.md)."""

    name: str
    title: str
    """One line: what the algorithm is and where it comes from."""
    tiled: bool
    """Whether its kernels use the block sizes (and so the SRAM check)."""
    outer: str = "kv"
    """The forward pass's outer-loop axis, which the default block-size rule follows."""
    kernel_axes: frozenset[str] = frozenset({"pass_"})
    """The Workload fields the kernel list depends on, and "splits" if it depends on the
    tiling's split count: a sweep asks `kernels` once per combination of their values. A test
    (tests/test_algorithms.py) records what `kernels` reads and holds it to this set."""

    def kernels(self, workload: Workload, tiling: Tiling | None = None) -> tuple[Kernel, ...]:
        """The kernels one call launches, in order, for the workload's pass.

        `tiling` matters only to algorithms whose kernel list depends on it (splitkv's
        combine kernel runs only with more than one split).
        """
        if workload.pass_ == "fwd":
            return self.forward(workload)
        if workload.pass_ == "bwd":
            return self.backward(workload)
        return self.forward(workload) + self.backward(workload)

    @abstractmethod
    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        """The forward pass's kernels, in launch order."""

    def backward(self, workload: Workload) -> tuple[Kernel, ...]:
        """The backward pass's kernels, in launch order (not every algorithm has one)."""
        raise IosimError(f"the backward pass of {self.name} is not modelled yet; use "
                         f"{arg('pass_', 'fwd')}")

    def code_tiles(self, inputs: TilingInputs) -> CodeTiles | None:
        """The forward's blocks from an implementation's tile table (None: Alg. 1 line 1's
        rule as printed). Ints or arrays."""
        return None

    def choose_tiles(self, tiles: Tiles, inputs: TilingInputs) -> Tiles:
        """Choices beyond the forward's blocks (flash2's backward blocks, splitkv's splits), on
        ints (one workload) or arrays (a sweep) alike. By default the backward tiles with the
        forward's blocks (Alg. 4 line 2) and there is one split."""
        return tiles

    def describe_tiles(self, tiling: Tiling, tiles: Tiles, inputs: TilingInputs) -> Tiling:
        """One workload's Tiling with `choose_tiles`'s choices and the words for them."""
        return tiling

    def split_class(self, splits: Any) -> Any:
        """A representative of the split counts (int or array) whose kernel lists are equal to
        this one's. Sweeps ask `kernels` once per class, not once per count (test_splitkv holds
        every count equal to its representative)."""
        return splits

    def finish_tiling(self, tiling: Tiling | None, workload: Workload, *, sm_count: int | None,
                      splits: int | None, blocks_given: bool = False,
                      base: TilingInputs | None = None) -> Tiling | None:
        """One workload's tiling, completed by `choose_tiles` (None for an untiled algorithm).

        `sm_count` is the GPU's SM count (None: unknown), `splits` a requested KV split count
        (None: the algorithm's rule), `blocks_given` whether the user chose the block sizes.
        """
        if tiling is None:
            return None
        inputs = TilingInputs.of(workload, tiling.sram_bytes,
                                 block_q=tiling.block_q if blocks_given else None,
                                 block_kv=tiling.block_kv if blocks_given else None,
                                 splits=splits, sm_count=sm_count)
        if base is not None:  # the GPU's and the implementation's inputs, as make_tiling had
            inputs = replace(inputs, cc=base.cc, sram_per_sm=base.sram_per_sm,
                             tile_rule=base.tile_rule, impl=base.impl)
        tiles = self.choose_tiles(Tiles(tiling.block_q, tiling.block_kv, True,
                                        per_sm=tiling.programs_per_sm,
                                        bwd_per_sm=tiling.bwd_programs_per_sm), inputs)
        return self.describe_tiles(tiling, tiles, inputs)
