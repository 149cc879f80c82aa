"""Traffic: an ordered list of named read/write terms. Totals are always sums of the terms."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from iosim.record import Record

Op = Literal["read", "write"]

STATISTICS = frozenset({"l", "m", "L", "D", "lse_partial"})
"""Per-row softmax statistics: running sum l, running max m, logsumexp L, rowsum D (fp32)."""

CATEGORIES = ("Q", "K", "V", "O", "S", "P", "statistics", "init")
"""The by-tensor view of the forward pass; other tensors (dO, dQ, ...) follow in their own columns."""


class Term(Record):
    """One named HBM access pattern of one kernel, summed over the whole workload.

    `elements` is exact; `bytes` = elements × element_bytes. `cite` names the algorithm line.
    """

    kernel: str
    tensor: str
    op: Op
    elements: int
    element_bytes: int
    cite: str
    init: bool = False
    """True for the zero-initialisation writes that Alg. 1 line 2 / Alg. 4 line 5 do in HBM."""

    @property
    def bytes(self) -> int:
        """Bytes the term moves: elements × bytes per element."""
        return self.elements * self.element_bytes

    @property
    def category(self) -> str:
        """The tensor the term is reported under in per-tensor tables."""
        if self.init:
            return "init"
        if self.tensor in STATISTICS:
            return "statistics"
        return self.tensor


class ReadWriteTotals:
    """read_bytes, write_bytes and bytes as sums over `terms` (anything with .op and .bytes):
    the one place where a total is made, for Traffic and the DRAM estimate alike."""

    __slots__ = ()
    if TYPE_CHECKING:

        @property
        def terms(self) -> Sequence[Any]: ...

    @property
    def read_bytes(self) -> int:
        """Bytes read by all terms."""
        return sum(t.bytes for t in self.terms if t.op == "read")

    @property
    def write_bytes(self) -> int:
        """Bytes written by all terms."""
        return sum(t.bytes for t in self.terms if t.op == "write")

    @property
    def bytes(self) -> int:
        """Bytes the term moves: elements × bytes per element."""
        return self.read_bytes + self.write_bytes


class TrafficTotals:
    """HBM totals and FLOPs of anything with a `traffic` and matmul/elementwise FLOPs: a kernel
    estimate or an algorithm estimate report the same numbers the same way."""

    __slots__ = ()
    if TYPE_CHECKING:

        @property
        def traffic(self) -> Traffic: ...

        @property
        def matmul_flops(self) -> int: ...

        @property
        def elementwise_flops(self) -> int: ...

    @property
    def hbm_read_bytes(self) -> int:
        """HBM bytes read (the sum of the read terms)."""
        return self.traffic.read_bytes

    @property
    def hbm_write_bytes(self) -> int:
        """HBM bytes written (the sum of the write terms)."""
        return self.traffic.write_bytes

    @property
    def hbm_bytes(self) -> int:
        """HBM bytes moved, read + written."""
        return self.traffic.bytes

    @property
    def flops(self) -> int:
        """FLOPs executed: matmul + elementwise."""
        return self.matmul_flops + self.elementwise_flops


class Traffic(ReadWriteTotals, Record):
    """The terms of one algorithm, in algorithm order."""

    terms: tuple[Term, ...]

    def __iter__(self) -> Iterator[Term]:
        return iter(self.terms)

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(self.terms + other.terms)

    @property
    def elements(self) -> int:
        """Elements moved by all terms."""
        return sum(t.elements for t in self.terms)

    def kernels(self) -> list[str]:
        """The kernels' names, in order of first appearance."""
        return list(dict.fromkeys(t.kernel for t in self.terms))

    def of_kernel(self, kernel: str) -> Traffic:
        """The terms of one kernel."""
        return Traffic(tuple(t for t in self.terms if t.kernel == kernel))

    def where(self, *, tensors: Iterable[str] | None = None, init: bool | None = None) -> Traffic:
        """The terms for which `keep(term)` holds."""
        wanted = set(tensors) if tensors is not None else None
        return Traffic(tuple(
            t for t in self.terms
            if (wanted is None or t.tensor in wanted) and (init is None or t.init == init)
        ))

    def by_category(self) -> dict[str, dict[str, int]]:
        """{category: {'read': bytes, 'write': bytes}} in CATEGORIES order, then others."""
        out: dict[str, dict[str, int]] = {}
        for t in self.terms:
            entry = out.setdefault(t.category, {"read": 0, "write": 0})
            entry[t.op] += t.bytes
        order = {c: i for i, c in enumerate(CATEGORIES)}
        return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))
