"""Workload features an implementation runs: the one rule that refuses the others.

A profile (configs/impls/*.yaml) may list under `features:` the workload features its API takes,
each with a `source` (the torch / flash-attention / FlexAttention API that takes it). A workload
that uses a feature its implementation's profile does not list is refused in one line naming the
feature, the implementation, and the shipped implementations that do run it. A profile without
the key declares nothing and refuses nothing (a user's profile written before the key existed
keeps loading and estimating as before).

GQA, head dims, dtypes, V's head dim and MLA's latent cache have rules of their own
(`Implementation.check_shape`): they are traits of the call's shapes, these are what the
kernel's API has to be given (a mask, a layout, a cache) to run the workload at all.

`compare` calls `refuse_missing_features` on the workload the implementation runs
(analysis/impl_kernels.py's `impl_workload`: FlexAttention runs packed sequences as a document
mask); sweep, report, measure and the Python API all reach it through compare.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from iosim.errors import IosimError, arg
from iosim.record import Record

if TYPE_CHECKING:
    from iosim.inputs.implementations import Implementation
    from iosim.inputs.workload import Workload


class Feature(Record):
    """One declared feature: its name (FEATURES), the API that takes it, and whether the
    implementation runs it in the forward pass only."""

    name: str
    source: str
    forward_only: bool = False


class _Use(Record):
    """How a workload uses a feature: its words, the parameter that asks for it, and the test."""

    words: str
    param: str
    used: Callable[[Workload], bool]
    value: Callable[[Workload], object]


FEATURES: dict[str, _Use] = {
    "causal": _Use("a causal mask", "causal", lambda w: w.causal, lambda w: True),
    "sparsity": _Use("a block-sparse mask", "sparsity", lambda w: w.sparsity < 1.0,
                     lambda w: w.sparsity),
    "window": _Use("a sliding window", "window", lambda w: w.window is not None,
                   lambda w: w.window),
    "varlen": _Use("packed variable-length sequences", "seqlens",
                   lambda w: w.seqlens is not None and w.packing == "varlen",
                   lambda w: ",".join(map(str, w.seqlens or ()))),
    "document": _Use("packed sequences as a document mask", "packing",
                     lambda w: w.seqlens is not None and w.packing == "document",
                     lambda w: w.packing),
    "paged": _Use("a paged KV cache", "page_size", lambda w: w.page_size is not None,
                  lambda w: w.page_size),
    "shared_prefix": _Use("a shared-prefix (cascade) batch", "prefix_len",
                          lambda w: w.prefix_len is not None, lambda w: w.prefix_len),
}
"""Every feature a profile may declare, in the order messages list them."""


def workload_features(workload: Workload) -> tuple[str, ...]:
    """The FEATURES names this workload uses."""
    return tuple(name for name, use in FEATURES.items() if use.used(workload))


def runs_feature(impl: Implementation, name: str, *, backward: bool) -> bool:
    """Whether the profile lets this feature through (every feature, for a profile without
    the `features` key)."""
    if impl.features is None:
        return True
    return any(f.name == name and not (backward and f.forward_only) for f in impl.features)


class FeatureError(IosimError):
    """A workload feature the implementation's profile does not declare."""


def refuse_missing_features(impl: Implementation, workload: Workload) -> None:
    """Refuse, in one line, the first feature of `workload` that `impl` does not run."""
    if impl.features is None:
        return
    backward = workload.pass_ != "fwd"
    for name in workload_features(workload):
        if runs_feature(impl, name, backward=backward):
            continue
        use = FEATURES[name]
        asked = arg(use.param, use.value(workload))
        running = _shipped_running(name, backward=backward, besides=impl.name)
        others = " or ".join(arg("impl", o) for o in running)
        declared = [f for f in impl.features if f.name == name]
        if declared:
            raise FeatureError(f"{impl.name} runs {use.words} ({asked}) in the forward pass only "
                               f"({declared[0].source}); use {arg('pass_', 'fwd')}"
                               + (f", or {others}" if others else ""), param="pass_")
        have = ", ".join(f.name for f in impl.features) or "none"
        where = (f"{instead(running)}, or drop {arg(use.param)}" if running else
                 f"no shipped implementation runs it: drop {arg(use.param)}, or drop "
                 f"{arg('impl')} (iosim's own algorithms model it)")
        raise FeatureError(f"{impl.name} does not run {use.words} ({asked}): its profile's "
                           f"features are {have}; {where}", param=use.param)


def _shipped_running(name: str, *, backward: bool, besides: str) -> tuple[str, ...]:
    """The shipped implementations whose profiles declare this feature (a shipped profile
    without the key is not counted: it declares nothing)."""
    return shipped_where(lambda p: p.features is not None
                         and runs_feature(p, name, backward=backward), besides=besides)


def shipped_where(test: Callable[[Implementation], bool], *, besides: str) -> tuple[str, ...]:
    """The shipped implementations (other than `besides`) whose profile passes `test`."""
    from iosim.inputs.implementations_yaml import get_implementation, shipped_implementations

    return tuple(n for n in shipped_implementations()
                 if n != besides and test(get_implementation(n)))


def instead(running: tuple[str, ...]) -> str:
    """What to use instead, for a message: the shipped implementations that run it, or that
    none does (then iosim's own algorithms, without `impl`)."""
    if not running:
        return f"no shipped implementation runs it: drop {arg('impl')}"
    return (f"shipped implementations that run it: {', '.join(running)}; use "
            + (arg("impl", running[0]) if len(running) == 1 else f"one of them as {arg('impl')}"))
