"""What every command is asked for beyond the workload, checked once: the algorithm list, the
SRAM budget and the split count. `compare`, `verify` and `sweep` all call these, so the same
mistake gets the same message whichever command it reaches."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from iosim.algorithms import ALGORITHMS, DEFAULT_ALGORITHMS, Algorithm, get_algorithm
from iosim.errors import IosimError, arg
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import check_count
from iosim.inputs.units import parse_quantity
from iosim.inputs.workload import Workload


def default_algorithms(workload: Workload) -> tuple[str, ...]:
    """standard, flash1, flash2 — and splitkv for a decoding step (N = 1, forward)."""
    if workload.n == 1 and workload.pass_ == "fwd":
        return (*DEFAULT_ALGORITHMS, "splitkv")
    return DEFAULT_ALGORITHMS


def choose_algorithms(names: Iterable[str], *, splits_given: bool = False
                      ) -> tuple[Algorithm, ...]:
    """The algorithms named (each once, in order, case and spaces ignored).

    Raises when the list is empty or names an unknown algorithm, or when a split count is
    given (`splits_given`) and no listed algorithm splits the KV sequence.
    """
    cleaned = list(dict.fromkeys(n.strip().lower() for n in names))
    if not cleaned or any(not n for n in cleaned):
        raise IosimError(f"{arg('algorithms')} needs a comma-separated list of "
                         f"{', '.join(ALGORITHMS)}")
    chosen = tuple(get_algorithm(n) for n in cleaned)
    if splits_given and not any("splits" in a.kernel_axes for a in chosen):
        splitters = [a.name for a in ALGORITHMS.values() if "splits" in a.kernel_axes]
        raise IosimError(f"{arg('splits')} applies to {', '.join(splitters)}; add it to "
                         f"{arg('algorithms')} (e.g. "
                         f"{arg('algorithms', 'standard,flash2,' + splitters[0])})")
    return chosen


def check_splits(splits: Sequence[int | None]) -> None:
    """Every given split count is a whole number of at least 1 (None: the algorithm's rule)."""
    for value in splits:
        if value is not None:
            check_count("splits", value)


def parse_sram(sram: str | int) -> int:
    """An SRAM size as bytes: a size such as 192KiB, or a whole number of bytes."""
    try:
        value = parse_quantity(sram, "bytes")
    except ValueError as exc:
        raise IosimError(f"{arg('sram')}: {exc}") from None
    if value < 1 or value != int(value):
        raise IosimError(f"{arg('sram')} must be a positive whole number of bytes, got {sram!r}")
    return int(value)


def sram_budget(
    hardware: Hardware, element_bytes: int, *, sram: str | int | None = None,
    sram_elements: int | None = None,
) -> tuple[int, str]:
    """(bytes, where they came from) of the SRAM M the blocks are sized for: `sram` (a size),
    `sram_elements` (elements of `element_bytes` bytes), or the GPU's sram_per_block."""
    if sram is not None and sram_elements is not None:
        raise IosimError(f"give {arg('sram')} or {arg('sram_elements')}, not both")
    if sram_elements is not None:
        check_count("sram_elements", sram_elements)
        return sram_elements * element_bytes, f"--sram-elements {sram_elements}"
    if sram is not None:
        return parse_sram(sram), f"--sram {sram}"
    kib = hardware.sram_per_block_bytes / 1024
    return int(hardware.sram_per_block_bytes), f"sram_per_block of {hardware.name} ({kib:g} KiB)"
