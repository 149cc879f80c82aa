"""What every algorithm provides: its kernels for a workload, as loop nests (loopnest.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from iosim.algorithms.loopnest import Kernel
from iosim.errors import IosimError
from iosim.workload import Workload


class Algorithm(ABC):
    name: str
    title: str
    """One line: what the algorithm is and where it comes from."""
    tiled: bool
    """Whether its kernels use the block sizes (and so the SRAM check)."""
    outer: str = "kv"
    """The forward pass's outer-loop axis, which the default block-size rule follows."""

    def kernels(self, workload: Workload) -> tuple[Kernel, ...]:
        """The kernels one call launches, in order, for the workload's pass."""
        if workload.pass_ == "fwd":
            return self.forward(workload)
        if workload.pass_ == "bwd":
            return self.backward(workload)
        return self.forward(workload) + self.backward(workload)

    @abstractmethod
    def forward(self, workload: Workload) -> tuple[Kernel, ...]: ...

    def backward(self, workload: Workload) -> tuple[Kernel, ...]:
        raise IosimError(f"the backward pass of {self.name} is not modelled yet; use --pass fwd")
