"""Options shared by the commands, and small parsers for them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from iosim.inputs.units import DTYPE_BYTES
from iosim.inputs.workload import UNFUSED_OPS

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("table", "json", "csv", "markdown")


def comma_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",")]


def gpu_option(f: F) -> F:
    return click.option(
        "--gpu", required=True, metavar="NAME|ALIAS|PATH",
        help="A shipped GPU (see `iosim gpus`), an alias such as a100, or your own YAML file.",
    )(f)


def workload_options(f: F) -> F:
    """--n, --n-kv, --d, --heads, --kv-heads, --batch, --dtype, --causal, --unfused."""
    options = [
        click.option("--n", "n", type=int, required=True, help="Query sequence length N."),
        click.option("--n-kv", type=int, default=None, help="Key/value length (default: --n)."),
        click.option("--d", "d", type=int, default=64, show_default=True, help="Head dimension."),
        click.option("--heads", type=int, default=1, show_default=True, help="Query heads."),
        click.option("--kv-heads", type=int, default=None,
                     help="Key/value heads for GQA/MQA (default: --heads)."),
        click.option("--batch", type=int, default=1, show_default=True, help="Batch size."),
        click.option("--dtype", type=click.Choice(list(DTYPE_BYTES)), default="fp16",
                     show_default=True, help="Input/output dtype (statistics are always fp32)."),
        click.option("--causal", is_flag=True, help="Causal mask (tiled kernels skip blocks)."),
        click.option("--unfused", default=None, metavar="LIST",
                     help=f"Extra N×N elementwise kernels of an unfused standard pipeline: "
                          f"any of {','.join(UNFUSED_OPS)}."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def tiling_options(f: F) -> F:
    options = [
        click.option("--block-q", type=int, default=None,
                     help="B_r, query rows per block (default: Alg. 1 line 1)."),
        click.option("--block-kv", type=int, default=None,
                     help="B_c, key/value rows per block (default: Alg. 1 line 1)."),
        click.option("--sram", default=None, metavar="SIZE",
                     help="SRAM M as a size, e.g. 192KiB (default: the GPU's sram_per_block)."),
        click.option("--sram-elements", type=int, default=None,
                     help="SRAM M in elements of --dtype, e.g. 98304."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def format_option(f: F) -> F:
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
                        show_default=True, help="Output format.")(f)


def wide_option(f: F) -> F:
    return click.option("--wide", is_flag=True,
                        help="Every column (HBM reads and writes apart, FLOPs per algorithm); "
                             "the default layout fits an 80-column terminal.")(f)
