"""Numbers for people: SI prefixes with units, one rule for every command and format.

Bytes keep one decimal (the seed articles' '136.3 MB'); FLOPs, rates and counts three significant
digits at most ('4.38 GFLOP', '312 TFLOP/s', '17M'); never e-notation, never '0 ns'.
"""

from __future__ import annotations

SI_PREFIXES = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def fmt_si(value: float, unit: str = "", *, space: bool = True) -> str:
    """Three significant digits and an SI prefix, never e-notation: 2.67e5, 'FLOP' ->
    '267 kFLOP'; 1.1479e15 -> '1.15 P'; whole numbers under 1000 as they are ('512 FLOP').
    The one rule behind fmt_flops, fmt_rate and fmt_count."""
    if value != value or value in (float("inf"), float("-inf")):
        return "—"
    prefix, scaled = "", float(value)
    for name, scale in reversed(SI_PREFIXES):  # k, M, G, ...: the largest that keeps |x| ≥ 1
        if abs(value) >= scale * 0.9995:
            prefix, scaled = name, value / scale
    if prefix == "" and float(value).is_integer():
        text = f"{int(value)}"
    elif abs(scaled) >= 99.95:
        text = f"{scaled:.0f}"
    elif abs(scaled) >= 9.995:
        text = f"{scaled:.1f}"
    else:
        text = f"{scaled:.2f}"
    if "." in text:  # '4.80' -> '4.8', '19.0' -> '19': three significant digits at most
        text = text.rstrip("0").rstrip(".")
    sep = " " if space and (prefix or unit) else ""
    return f"{text}{sep}{prefix}{unit}"


def fmt_bytes(n: float) -> str:
    """Decimal (SI) bytes with one decimal: 136314880 -> '136.3 MB' (the seed articles' unit)."""
    for unit, scale in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6),
                        ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_binary_bytes(n: float) -> str:
    """Binary bytes: 134217728 -> '128 MiB'."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def fmt_time(seconds: float) -> str:
    """'68.2 µs', '273 ns'; zero is '0 s' and under a nanosecond keeps its digits ('0.42 ns')."""
    if seconds == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.1f} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_flops(n: float) -> str:
    """Three significant digits: '4.38 GFLOP', '83.9 MFLOP', '240 kFLOP', '0 FLOP'."""
    return "0 FLOP" if n == 0 else fmt_si(n, "FLOP")


fmt_flops_fit = fmt_flops
"""Kept for callers of the old name: fmt_flops is at most 10 characters now."""


def fmt_rate(value: float, unit: str) -> str:
    """4.8e12, 'B/s' -> '4.8 TB/s'; 3.12e14, 'FLOP/s' -> '312 TFLOP/s'."""
    return f"0 {unit}" if value == 0 else fmt_si(value, unit)


def fmt_count(n: float) -> str:
    """A bare count: '17M', '1.15P', '512'."""
    return "0" if n == 0 else fmt_si(n, space=False)


def fmt_intensity(flops_per_byte: float) -> str:
    """FLOP per HBM byte: '62.1', '0' for a kernel without FLOPs, '—' without bytes."""
    if flops_per_byte in (float("inf"), float("-inf")) or flops_per_byte != flops_per_byte:
        return "—"
    return "0" if flops_per_byte == 0 else f"{flops_per_byte:.1f}"


def fmt_ratio(ratio: float) -> str:
    """A speed-up or traffic ratio: '2.00×'; below 0.01 two significant digits ('0.0022×'),
    so that a 450-fold slowdown is not printed as a speed-up of 0.00×."""
    return f"{ratio:.2f}×" if ratio >= 0.005 else f"{ratio:.2g}×"
