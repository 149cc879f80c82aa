"""Training and parallelism: what the forward keeps for the backward, FLOP conventions, occupancy.

- Kept for the backward pass: the tensors a forward kernel writes and a backward kernel reads,
  read off the loop nests (inputs Q, K, V and the output O aside). Standard attention keeps the
  N×N P (the softmax output its backward needs) and, with dropout, the dropped P and the mask Z;
  FlashAttention keeps O(N) statistics (l, m or the logsumexp L) and, with dropout, the RNG state
  R (Alg. 2 line 1: "Initialize the pseudo-random number generator state R and save to HBM"; FA2
  keeps it as `rng_state`, two int64, flash_api.cpp).
- FLOP conventions (FA2 §4.1 and FA3 §4.1): forward 4·N·N_kv·d per head, halved with a causal
  mask; backward 2.5 × forward for the recomputing flash backward (5 matmuls against 2) and 2 ×
  for standard attention (4 matmuls). iosim itself reports executed FLOPs, tile-exact: a causal
  tiled kernel computes its diagonal tiles in full, so its count exceeds half of N² slightly.
- Occupancy: the programs (CTAs) of a kernel's grid against the GPU's SMs and the programs each
  SM holds (a decode step of FA2 runs batch × heads programs: "With a batch size of 1,
  FlashAttention will use less than 1% of the GPU!", Flash-Decoding blog); the model of waves
  and the tail is estimates/occupancy.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from iosim.algorithms.loopnest import Access, Kernel
from iosim.estimates.occupancy import utilisation
from iosim.inputs.units import STAT_BYTES
from iosim.inputs.workload import Workload
from iosim.record import Record

RNG_STATE_BYTES = 16
"""flash_api.cpp: `rng_state = torch::empty({2}, ... kInt64)` (Philox seed and offset)."""

IO_TENSORS = frozenset({"Q", "K", "V", "O", "dO", "dQ", "dK", "dV"})
"""Inputs and outputs of the forward and backward calls, held by the caller in any case."""


def saved_for_backward(forward: Sequence[Kernel], backward: Sequence[Kernel]) -> tuple[Access, ...]:
    """The forward's writes that the backward reads (one Access each, as the forward wrote it)."""
    read_back = {a.tensor for k in backward for a in k.accesses if a.op == "read"}
    saved: dict[str, Access] = {}
    for kernel in forward:
        for access in kernel.accesses:
            if (access.op == "write" and access.tensor in read_back
                    and access.tensor not in IO_TENSORS and not access.init):
                saved.setdefault(access.tensor, access)
    return tuple(saved.values())


def convention_flops(workload: Workload, *, recompute: bool) -> int:
    """FLOPs by the FA2/FA3 convention for the workload's pass (see the module docstring), as
    an exact integer: 2·N·N_kv·(d + d_v)·heads·batch (QKᵀ 2·N·N_kv·d, PV 2·N·N_kv·d_v; with
    d = d_v the convention's 4·N·N_kv·d), halved when causal."""
    w = workload
    forward = 2 * w.n * w.n_kv * (w.d + w.d_v) * w.heads * w.batch // (2 if w.causal else 1)
    backward = forward * 5 // 2 if recompute else forward * 2
    return {"fwd": forward, "bwd": backward, "fwdbwd": forward + backward}[w.pass_]


def compulsory_backward_bytes(workload: Workload) -> int:
    """Any exact backward: read Q, O, dO (per query head), K, V (per KV head) and the fp32
    logsumexp once; write dQ, dK, dV once (reference §3's compulsory row, without D, which an
    implementation adds for itself)."""
    w = workload
    q_rows = w.batch * w.heads * w.n
    kv_rows = w.batch * w.kv_heads * w.n_kv
    reads = (q_rows * (w.d + 2 * w.d_v) + kv_rows * (w.d + w.d_v)) * w.element_bytes  # Q, O, dO; K, V
    writes = (q_rows * w.d + kv_rows * (w.d + w.d_v)) * w.element_bytes  # dQ; dK, dV
    return reads + q_rows * STAT_BYTES + writes


class Occupancy(Record):
    """One kernel's launch grid against the GPU's SMs (estimates/occupancy.py)."""

    kernel: str
    label: str
    programs: int
    sm_count: int | None
    per_sm: int = 1
    """Programs one SM holds at once."""

    @property
    def slots(self) -> int | None:
        """Programs the whole GPU holds at once (per SM × SMs), or None when the SM count is unknown."""
        return None if self.sm_count is None else self.per_sm * self.sm_count

    @property
    def fraction(self) -> float | None:
        """u: the share of the GPU's rate the grid reaches over its waves (1.0 when full)."""
        if self.sm_count is None:
            return None
        return float(utilisation(self.programs, self.sm_count))

    @property
    def waves(self) -> float | None:
        """Programs over the programs the GPU holds at once (fractional: 0.15 is part of one;
        None when the SM count is unknown)."""
        slots = self.slots
        return None if slots is None else self.programs / slots
