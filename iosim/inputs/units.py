"""Quantities with units, parsed at the edges (YAML, CLI) into plain SI numbers.

Inside iosim every quantity is bytes, bytes/s, FLOPs or FLOP/s; strings such as "163 KiB",
"2039 GB/s" or "312 TFLOP/s" exist only in YAML files and on the command line.
KB/MB/GB/TB are decimal (10^3 steps) and KiB/MiB/GiB/TiB binary (2^10 steps), as in the SI/IEC
standards: "192KB" is 192,000 bytes, "192KiB" is 196,608.
"""

from __future__ import annotations

import re
from typing import Final

from iosim.inputs.api_values import as_real, as_whole
from iosim.inputs.excerpts import excerpt

DTYPE_BYTES: Final[dict[str, int]] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1,
                                      "fp8_e4m3": 1, "fp8_e5m2": 1}
"""Bytes per element of each input dtype iosim models. "fp8" is a generic 1-byte dtype for
every tensor (O too); fp8_e4m3 and fp8_e5m2 are FlashAttention-3's FP8 forward: 1-byte Q, K,
V, a bf16 O and descale factors read from HBM."""

FP8_DTYPES: Final = ("fp8_e4m3", "fp8_e5m2")
"""The FP8 formats of FlashAttention-3's FP8 forward (descale factors, bf16 output)."""

FP8_OUTPUT_DTYPE: Final = "bf16"
"""O's dtype when Q, K, V are FP8: FlashAttention-3's FP8 forward writes bf16."""

STAT_BYTES: Final = 4
"""Softmax statistics (m, l, logsumexp) and accumulators are fp32 in every implementation read."""

_PREFIX: Final[dict[str, int]] = {
    "": 1,
    "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
}

# dimension -> accepted unit suffix (after the prefix)
_UNITS: Final[dict[str, tuple[str, ...]]] = {
    "bytes": ("B",),
    "bytes_per_s": ("B/s",),
    "flops_per_s": ("FLOP/s", "FLOPS"),
}

_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")


def parse_quantity(text: str | int | float, dimension: str) -> float:
    """Parse "163 KiB", "2039 GB/s" or "312 TFLOP/s" into bytes, bytes/s or FLOP/s.

    A bare number is taken in the base unit (bytes, bytes/s, FLOP/s).
    Raises ValueError with a message that names the accepted units.

    >>> parse_quantity("192KiB", "bytes")
    196608.0
    """
    text = as_real(as_whole(text))  # numpy's scalars as Python's numbers
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"expected a quantity in {accepted_units(dimension)}, got {excerpt(text)}")
    if isinstance(text, (int, float)):
        try:
            return float(text)
        except OverflowError:  # an int of hundreds of digits
            raise ValueError(f"{excerpt(text)} is beyond any quantity iosim takes") from None
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(
            f"{excerpt(text)} is not a quantity; write a number and a unit, e.g. "
            f"{_example(dimension)}"
        )
    number, unit = float(match.group(1)), match.group(2)
    if unit == "":
        return number
    for suffix in _UNITS[dimension]:
        if unit.endswith(suffix):
            prefix = unit[: -len(suffix)]
            if prefix in _PREFIX:
                return number * _PREFIX[prefix]
    raise ValueError(
        f"unit {excerpt(unit)} in {excerpt(text)} is not one of {accepted_units(dimension)}; "
        f"e.g. {_example(dimension)}"
    )


def accepted_units(dimension: str) -> str:
    """The unit suffixes accepted for `dimension`, for messages."""
    suffix = _UNITS[dimension][0]
    return ", ".join(p + suffix for p in _PREFIX if p in ("", "K", "Ki", "M", "Mi", "G", "Gi", "T"))


def _example(dimension: str) -> str:
    return {"bytes": "'163 KiB'", "bytes_per_s": "'2039 GB/s'", "flops_per_s": "'312 TFLOP/s'"}[
        dimension
    ]
