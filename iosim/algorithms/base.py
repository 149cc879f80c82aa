"""What every algorithm provides: its kernels for a workload, as loop nests (loopnest.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from iosim.algorithms.loopnest import Kernel
from iosim.errors import IosimError
from iosim.inputs.workload import Tiling, Workload


class Algorithm(ABC):
    name: str
    title: str
    """One line: what the algorithm is and where it comes from."""
    tiled: bool
    """Whether its kernels use the block sizes (and so the SRAM check)."""
    outer: str = "kv"
    """The forward pass's outer-loop axis, which the default block-size rule follows."""

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
    def forward(self, workload: Workload) -> tuple[Kernel, ...]: ...

    def backward(self, workload: Workload) -> tuple[Kernel, ...]:
        raise IosimError(f"the backward pass of {self.name} is not modelled yet; use --pass fwd")

    def split_class(self, splits: Any) -> Any:
        """A representative of the split counts (int or array) whose kernel lists are equal to
        this one's. Sweeps ask `kernels` once per class, not once per count (test_splitkv holds
        every count equal to its representative)."""
        return splits

    def finish_tiling(self, tiling: Tiling | None, workload: Workload, *, sm_count: int | None,
                      splits: int | None, blocks_given: bool = False) -> Tiling | None:
        """Choices beyond the forward's block sizes: flash2's backward blocks, splitkv's KV
        splits. By default the backward tiles with the forward's blocks (Alg. 4 line 2)."""
        return tiling
