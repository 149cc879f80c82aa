"""Options shared by the commands, and small parsers for them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from iosim.algorithms import ALGORITHMS
from iosim.analysis.comparison import Comparison
from iosim.cli.lists import Choice
from iosim.errors import IosimError, arg
from iosim.inputs.excerpts import excerpt
from iosim.inputs.units import DTYPE_BYTES
from iosim.inputs.workload import FP8_SCALES, PACKINGS, PASSES, UNFUSED_OPS, Workload

if TYPE_CHECKING:  # loads only for --splits auto
    from iosim.analysis.split_choice import SplitChoice

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("table", "json", "csv", "markdown")


def with_options(f: F, options: list[Callable[[F], F]]) -> F:
    """f decorated with click `options`, the first listed shown first in --help."""
    for option in reversed(options):
        f = option(f)
    return f


def comma_list(text: str | None) -> list[str] | None:
    """A comma-separated flag value as a list of stripped parts (None when the flag was not given)."""
    if text is None:
        return None
    return [part.strip() for part in text.split(",")]


def gpu_option(f: F) -> F:
    """The --gpu flag (a shipped name, an alias or a YAML path), required."""
    return click.option(
        "--gpu", required=True, metavar="NAME|ALIAS|PATH",
        help="A shipped GPU (see `iosim gpus`), an alias such as a100, or your own YAML file.",
    )(f)


def workload_options(f: F | None = None, *, n: int | None = None, heads: int = 1,
                     batch: int = 1) -> Any:
    """--n, --n-kv, --d, --heads, --kv-heads, --batch, --dtype, --causal, --unfused; as
    `@workload_options` (--n required) or `@workload_options(n=1024, heads=16, batch=64)`."""
    if f is None:
        return lambda g: _workload_options(g, n=n, heads=heads, batch=batch)
    return _workload_options(f, n=n, heads=heads, batch=batch)


def _workload_options(f: F, *, n: int | None, heads: int, batch: int) -> F:
    return with_options(f, [
        click.option("--n", "n", type=int, help="Query sequence length N.",
                     **({"required": True} if n is None else {"default": n, "show_default": True})),
        click.option("--n-kv", type=int, default=None, help="Key/value length (default: --n)."),
        click.option("--d", "d", type=int, default=64, show_default=True, help="Head dimension."),
        click.option("--heads", type=int, default=heads, show_default=True, help="Query heads."),
        click.option("--kv-heads", type=int, default=None,
                     help="Key/value heads for GQA/MQA (default: --heads)."),
        click.option("--batch", type=int, default=batch, show_default=True, help="Batch size."),
        click.option("--dtype", type=Choice(list(DTYPE_BYTES)), default="fp16",
                     show_default=True, help="Input/output dtype (statistics are always fp32)."),
        click.option("--causal", is_flag=True, help="Causal mask (tiled kernels skip blocks)."),
        click.option("--unfused", default=None, metavar="LIST",
                     help=f"Extra N×N elementwise kernels of an unfused standard pipeline: "
                          f"any of {','.join(UNFUSED_OPS)}."),
    ])


def head_dim_options(f: F) -> F:
    """--d-v, --latent-kv, --fp8-scales: V's own head dim, MLA's latent cache, FP8's scales
    (issue 14 items 4-5; docs/variants-mla-fp8.md)."""
    return with_options(f, [
        click.option("--d-v", "d_v", type=int, default=None,
                     help="Head dimension of V and O (default: --d); MLA prefill: --d 192 "
                          "--d-v 128."),
        click.option("--latent-kv", is_flag=True,
                     help="MLA absorbed decoding: K and V are one latent cache (--kv-heads 1, "
                          "--d 576 --d-v 512), V its first d_v columns, never read apart."),
        click.option("--fp8-scales", type=Choice(list(FP8_SCALES)), default=None,
                     help="FP8 descale factors read from HBM: per (batch, KV head) tensor, or "
                          "per block (needs --dtype fp8_e4m3|fp8_e5m2; default: tensor)."),
    ])


def decoding_options(f: F) -> F:
    """--page-size, --prefix-len, --suffix-lens: a paged KV cache and a shared-prefix decoding
    batch (docs/variants-decoding.md)."""
    return with_options(f, [
        click.option("--page-size", type=int, default=None,
                     help="Paged KV cache: tokens per page, read through an int32 block table "
                          "(flash2, splitkv; default: a contiguous cache)."),
        click.option("--prefix-len", type=int, default=None,
                     help="Shared-prefix decoding batch: tokens of the prefix every request "
                          "shares (with --suffix-lens; --n 1)."),
        click.option("--suffix-lens", default=None, metavar="LIST",
                     help="Each request's own KV tokens after the prefix, e.g. 16,40,9 (sets "
                          "--batch and --n-kv when not given)."),
    ])


def int_list(text: str) -> tuple[int | str, ...]:
    """A comma-separated list of whole numbers (--seqlens, --suffix-lens): each entry as an int
    where int() reads it (as click reads --n), else the text itself, for the core to refuse by
    position. str.isdigit() is no test: '²' is a digit to it and no number to int()."""
    parts = [part.strip() for part in text.split(",")] if text.strip() else []
    out: list[int | str] = []
    for part in parts:
        try:
            out.append(int(part))
        except ValueError:
            out.append(part)
    return tuple(out)


def parse_suffix_lens(text: str | None) -> tuple[int, ...] | None:
    """--suffix-lens 16,40,9 as (16, 40, 9); a malformed list is one line naming the flag."""
    if text is None:
        return None
    values = int_list(text)
    bad = next((v for v in values if not isinstance(v, int)), None)
    if bad is not None or not values:
        raise IosimError(f"{arg('suffix_lens')} must be whole numbers of tokens separated by "
                         f"commas, e.g. 16,40,9; got {excerpt(bad or text)}")
    return tuple(v for v in values if isinstance(v, int))


def typed(name: str) -> bool:
    """Whether the user typed the flag of parameter `name` (click's parameter source), as
    opposed to its default (which differs between commands: report's batch is 64)."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return True  # called outside a command: every value counts as given
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE,
                                              ParameterSource.ENVIRONMENT)


def decoding_fields(params: dict[str, Any]) -> dict[str, Any]:
    """The Workload fields of decoding_options' flags, with the batch and N_kv that a
    shared-prefix batch implies (one request per suffix), or packed sequences (batch 1), where
    the user did not type them: a default yields; a typed value is checked by the Workload."""
    suffixes = parse_suffix_lens(params.get("suffix_lens"))
    prefix = params.get("prefix_len")
    fields: dict[str, Any] = {"page_size": params.get("page_size"), "prefix_len": prefix,
                              "suffix_lens": suffixes}
    batch_given = params.get("batch") is not None and typed("batch")
    if suffixes is not None and isinstance(prefix, int):
        if not batch_given:
            fields["batch"] = len(suffixes)
        if params.get("n_kv") is None:
            fields["n_kv"] = prefix + max(suffixes)
    elif params.get("seqlens") is not None and not batch_given:
        fields["batch"] = 1
    return fields


def tiling_options(f: F) -> F:
    """--block-q, --block-kv, --sram, --sram-elements, --impl and --tiles: the tiling flags every
    comparison shares."""
    return with_options(f, [
        click.option("--block-q", type=int, default=None,
                     help="B_r, query rows per block (default: flash1 Alg. 1 line 1, flash2 "
                          "the FA2 code's)."),
        click.option("--block-kv", type=int, default=None,
                     help="B_c, key/value rows per block (default: as --block-q)."),
        click.option("--sram", default=None, metavar="SIZE",
                     help="SRAM M as a size, e.g. 192KiB (default: the GPU's sram_per_block)."),
        click.option("--sram-elements", type=int, default=None,
                     help="SRAM M in elements of --dtype, e.g. 98304."),
    ])


def impl_options(f: F) -> F:
    """--impl (an implementation profile, configs/impls) and --tiles (the default tile rule)."""
    return with_options(f, [
        click.option("--impl", default=None, metavar="NAME|PATH",
                     help="Estimate what an implementation runs: iosim-triton, sdpa-flash, "
                          "sdpa-cudnn, sdpa-efficient, flex, torch-naive, or your own YAML "
                          "(configs/impls)."),
        click.option("--tiles", type=Choice(["code", "alg1"]), default="code",
                     show_default=True,
                     help="Default blocks of flash2/splitkv: the FlashAttention-2 code's per "
                          "head dim, or Alg. 1 line 1's rule."),
    ])


class SplitsType(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.5 only
    """--splits: a whole number, or `auto` (splitkv's time at every count, the best one run)."""

    name = "splits"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | str:
        """A whole number, or the word auto (any case)."""
        if isinstance(value, int) or value == "auto":
            return value  # type: ignore[no-any-return]
        text = str(value).strip().lower()
        if text == "auto":
            return "auto"
        try:
            return int(text)
        except ValueError:
            self.fail(f"{value!r} is neither a whole number nor auto.", param, ctx)


def splits_auto(params: dict[str, Any]) -> bool:
    """Whether --splits auto was given."""
    return params.get("splits") == "auto"


def format_option(f: F) -> F:
    """The --format flag (table, json, csv or markdown), passed to the command as `fmt`."""
    return click.option("--format", "fmt", type=Choice(FORMATS), default="table",
                        show_default=True, help="Output format.")(f)


def wide_option(f: F) -> F:
    """The --wide flag: every column instead of the 80-column layout."""
    return click.option("--wide", is_flag=True,
                        help="Every column (HBM reads and writes apart, FLOPs per algorithm), "
                             "none cut: wider than 80 columns; the default layout fits an "
                             "80-column terminal.")(f)


def algorithm_options(f: F) -> F:
    """--algo, --pass, --sparsity, --splits, --profile: what `compare`, `roofline` and `report`
    share beyond the workload and the tiling."""
    return with_options(f, [
        click.option("--algo", default=None, metavar="LIST",
                     help=f"Algorithms, comma-separated: {','.join(ALGORITHMS)} (default: the "
                          f"first three, and splitkv too when --n is 1)."),
        click.option("--pass", "pass_", type=Choice(list(PASSES)), default="fwd",
                     show_default=True, help="Forward, backward, or both (a training step)."),
        click.option("--sparsity", type=float, default=None, metavar="S",
                     help="Block-sparse FlashAttention: fraction of non-zero blocks in (0, 1] "
                          "(tiled algorithms; standard stays dense)."),
        click.option("--splits", type=SplitsType(), default=None, metavar="N|auto",
                     help="splitkv's KV splits, 1 to the number of key blocks, or auto: "
                          "every count's predicted time and the best pick (default: "
                          "FlashAttention-2's heuristic for the GPU's SMs)."),
        click.option("--profile", type=Choice(["spec", "measured"]), default="spec",
                     show_default=True, help="Datasheet roofs, or the calibrated ones of the YAML."),
        click.option("--force", is_flag=True,
                     help="Accept SRAM or blocks beyond what the GPU has (and, where the "
                          "command writes files, overwrite them)."),
    ])


def mask_options(f: F) -> F:
    """--window, --seqlens (docs/variants-masks.md): masks that skip tiles."""
    return with_options(f, [
        click.option("--window", type=int, default=None, metavar="W",
                     help="Sliding-window attention: with --causal each query sees its W most "
                          "recent keys (HF sliding_window = W, FA2 window_size = (W-1, 0)); "
                          "without, keys within W-1 on either side."),
        click.option("--seqlens", default=None, metavar="LIST",
                     help="Packed variable-length sequences, e.g. 512,3000,77 (summing to --n; "
                          "FlashAttention varlen: attention stays within each sequence)."),
        click.option("--packing", type=Choice(list(PACKINGS)), default="varlen",
                     show_default=True,
                     help="How --seqlens are cut into blocks: FA2 varlen (per sequence) or "
                          "FlexAttention's document mask (one sequence; blocks straddle)."),
    ])


def parse_seqlens(text: str | None) -> tuple[int | str, ...] | None:
    """--seqlens "512,3000,77" as lengths; an entry that is not a whole number stays text, for
    the Workload to refuse by position (inputs/limits.py:check_seqlens)."""
    if text is None:
        return None
    return int_list(text)


def comparison_options(f: F) -> F:
    """Every flag of one comparison: --gpu, the workload, the tiling and the algorithms. One
    option set for compare, roofline and report (issue 13 item 6). The command then calls
    `workload_from` and `compare_arguments`."""
    return comparison_options_with()(f)


def comparison_options_with(**defaults: Any) -> Callable[[F], F]:
    """comparison_options with other workload defaults (as workload_options takes them)."""
    def apply(g: F) -> F:
        from iosim.cli.model_flags import model_options

        with_workload: F = workload_options(head_dim_options(mask_options(decoding_options(
            tiling_options(impl_options(algorithm_options(model_options(g))))))), **defaults)
        return gpu_option(with_workload)
    return apply


WORKLOAD_PARAMS = ("n", "n_kv", "d", "heads", "kv_heads", "batch", "dtype", "causal", "unfused",
                   "pass_", "sparsity", "d_v", "latent_kv", "fp8_scales", "window", "seqlens",
                   "packing", "page_size", "prefix_len", "suffix_lens")
COMPARE_PARAMS = ("gpu", "block_q", "block_kv", "sram", "sram_elements", "algo", "splits",
                  "profile", "force", "impl", "tiles")


def workload_from(params: dict[str, Any]) -> Workload:
    """The Workload of comparison_options' flags (under --model: of its one layer kind)."""
    if params.get("model") is not None or params.get("layer") is not None:
        from iosim.cli.model_flags import single_model_layer

        return single_model_layer(params, workload_from).workload
    sparsity = params.get("sparsity")
    sizes = {"n_kv": params["n_kv"], "batch": params["batch"], **decoding_fields(params)}
    return Workload(params["n"], d=params["d"], heads=params["heads"],
                    kv_heads=params["kv_heads"], dtype=params["dtype"],
                    causal=params["causal"],
                    unfused=tuple(comma_list(params["unfused"]) or ()),
                    pass_=params.get("pass_", "fwd"),
                    sparsity=1.0 if sparsity is None else sparsity,
                    d_v=params.get("d_v"), latent_kv=params.get("latent_kv", False),
                    fp8_scales=params.get("fp8_scales"),
                    window=params.get("window"),
                    seqlens=parse_seqlens(params.get("seqlens")),  # type: ignore[arg-type]
                    packing=params.get("packing") or "varlen", **sizes)


def compare_arguments(params: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `iosim.compare` (after the workload and the GPU); with
    `--splits auto`, the split count `split_choice` picks."""
    arguments = {"algorithms": comma_list(params["algo"]), "block_q": params["block_q"],
                 "block_kv": params["block_kv"], "sram": params["sram"],
                 "sram_elements": params["sram_elements"], "profile": params["profile"],
                 "splits": params["splits"], "impl": params.get("impl"),
                 "tiles": params.get("tiles", "code")}
    if splits_auto(params):
        from iosim.analysis.requests import default_algorithms

        names = arguments["algorithms"] or default_algorithms(workload_from(params))
        if any(n.strip().lower() == "cascade" for n in names):
            raise IosimError(f"{arg('splits', 'auto')} picks splitkv's split count, and cascade "
                             f"splits by its own rule here; give {arg('algorithms')} without "
                             f"cascade, or {arg('splits')} a number (compare takes both)")
        arguments["splits"] = split_choice(params).best.splits
    return arguments


def split_choice(params: dict[str, Any]) -> SplitChoice:
    """`--splits auto`: splitkv at every split count (analysis/split_choice.py)."""
    from iosim.analysis.split_choice import choose_splits

    if params.get("impl") is not None:
        raise click.UsageError("--splits auto tries splitkv's split counts; drop --impl")
    from iosim.analysis.requests import default_algorithms

    if params.get("pass_", "fwd") != "fwd":  # before splitkv's absence, which bwd implies
        raise IosimError(f"{arg('splits', 'auto')} chooses splitkv's KV splits, a forward "
                         f"(decoding) kernel; use {arg('pass_', 'fwd')}")
    algorithms = comma_list(params["algo"]) or default_algorithms(workload_from(params))
    if "splitkv" not in [a.strip().lower() for a in algorithms]:
        raise IosimError(f"{arg('splits', 'auto')} applies to splitkv; add it to "
                         f"{arg('algorithms')} (e.g. {arg('algorithms', 'flash2,splitkv')})")
    return choose_splits(workload_from(params), params["gpu"], block_q=params["block_q"],
                         block_kv=params["block_kv"], sram=params["sram"],
                         sram_elements=params["sram_elements"], profile=params["profile"],
                         tiles=params.get("tiles", "code"))


def command_words(ctx: click.Context, params: dict[str, Any]) -> list[str]:
    """Every option with a value (defaults spelled out; unset options and flags left off), as
    words of the command line that remakes a report."""
    words: list[str] = []
    preset: set[str] = set()
    if params.get("model") is not None:  # the preset fills these: only typed ones are kept
        from iosim.cli.model_flags import given_fields
        from iosim.inputs.model_presets import PRESET_FIELDS

        preset = set(PRESET_FIELDS) - set(given_fields(params, ctx))
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name not in params or param.name in preset:
            continue
        value = params[param.name]
        if value is None or value is False or (param.name == "packing" and
                                               params.get("seqlens") is None):
            continue  # --packing says how --seqlens is packed: nothing without it
        flag = max(param.opts, key=len)
        words += [flag] if param.is_flag else [flag, str(value)]
    return words


def refuse_impossible_sram(result: Comparison, force: bool) -> None:
    """SRAM (and so blocks sized for it) beyond the GPU's per-block shared memory cannot run:
    refused unless --force (issue 13 item 11). The counts would still be exact; the kernel would
    not launch."""
    hw = result.hardware
    if force or result.sram_bytes <= hw.sram_per_block_bytes:
        return
    raise click.UsageError(
        f"SRAM M = {result.sram_bytes:,} B ({result.sram_source}) is more than the "
        f"{int(hw.sram_per_block_bytes):,} B of shared memory a block may use on {hw.name}; no "
        f"kernel could launch with it. Lower --sram/--sram-elements (or the blocks), or pass "
        f"--force to count it anyway.")
