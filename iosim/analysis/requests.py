"""What every command is asked for beyond the workload, checked once: the algorithm list, the
SRAM budget and the split count. `compare`, `verify` and `sweep` all call these, so the same
mistake gets the same message whichever command it reaches."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from iosim.algorithms import ALGORITHMS, DEFAULT_ALGORITHMS, Algorithm, get_algorithm
from iosim.errors import IosimError, arg
from iosim.inputs.excerpts import excerpt
from iosim.inputs.hardware import Hardware
from iosim.inputs.ints import Int, check_count, select
from iosim.inputs.limits import check_sram_bytes
from iosim.inputs.units import parse_quantity
from iosim.inputs.workload import Workload


def default_algorithms(workload: Workload) -> tuple[str, ...]:
    """standard, flash1, flash2 — and splitkv for a decoding step (N = 1, forward); without
    flash1 over a paged KV cache (it reads a contiguous one); standard, splitkv and cascade for
    a shared-prefix batch."""
    return decoding_defaults(workload.n == 1 and workload.pass_ == "fwd", workload.page_size,
                             shared_prefix=workload.prefix_len is not None)


def decoding_defaults(decoding: bool, page_size: int | None, *,
                      shared_prefix: bool = False) -> tuple[str, ...]:
    """The default algorithm list of `compare` and `sweep`: splitkv joins for a decoding step,
    flash1 (a contiguous K/V-outer loop) leaves over a paged cache; a shared-prefix batch
    compares cascade with split-KV over each request's full KV (and standard, the baseline)."""
    if shared_prefix:
        return ("standard", "splitkv", "cascade")
    names = (*DEFAULT_ALGORITHMS, "splitkv") if decoding else DEFAULT_ALGORITHMS
    return tuple(n for n in names if page_size is None or n != "flash1")


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
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise IosimError(f"{arg('sram')} must be a positive whole number of bytes, got "
                         f"{excerpt(sram)}")
    return check_sram_bytes("sram", int(value))


def refuse_both_sram(sram_given: bool, elements_given: bool, *, sram_name: str = "sram") -> None:
    """The SRAM budget is given as a size or in elements, not both."""
    if sram_given and elements_given:
        raise IosimError(f"give {arg(sram_name)} or {arg('sram_elements')}, not both")


def sram_bytes_of(gpu_sram_bytes: Int, element_bytes: Int, sram_bytes: Int = 0,
                  sram_elements: Int = 0) -> Int:
    """The SRAM M in bytes: the given size, else the given elements × bytes per element, else the
    GPU's sram_per_block (0 = not given; ints or a sweep's arrays)."""
    return select(sram_bytes > 0, sram_bytes,
                  select(sram_elements > 0, sram_elements * element_bytes, gpu_sram_bytes))


def sram_budget(
    hardware: Hardware, element_bytes: int, *, sram: str | int | None = None,
    sram_elements: int | None = None,
) -> tuple[int, str]:
    """(bytes, where they came from) of the SRAM M the blocks are sized for: `sram` (a size),
    `sram_elements` (elements of `element_bytes` bytes), or the GPU's sram_per_block."""
    refuse_both_sram(sram is not None, sram_elements is not None)
    gpu_sram = int(hardware.sram_per_block_bytes)
    if sram_elements is not None:
        # a Python int from here on: NumPy's int64 would wrap past 2^63 before the bound sees it
        sram_elements = check_count("sram_elements", sram_elements)
        check_sram_bytes("sram_elements", sram_elements * element_bytes)  # never past int64
        source = f"--sram-elements {sram_elements}"
    elif sram is not None:
        source = f"--sram {sram}"
    else:
        source = f"sram_per_block of {hardware.name} ({gpu_sram / 1024:g} KiB)"
    size = 0 if sram is None else parse_sram(sram)
    return int(sram_bytes_of(gpu_sram, element_bytes, size, sram_elements or 0)), source
