"""--model and --layer: a model preset fills the workload's attention flags.

The preset owns heads, kv_heads, d, d_v, window, latent_kv's dimensions and causal
(inputs/model_presets.py). A flag the user typed for one of them must agree with the preset;
a default the user did not type is replaced. Which flags were typed is click's parameter
source, so `--model llama-3.1-8b --heads 32` is accepted and `--heads 16` refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from iosim.cli.common import with_options
from iosim.inputs.workload import Workload

if TYPE_CHECKING:  # the preset modules load only when --model is given (compare's start-up)
    from iosim.inputs.model_presets import ModelLayer
    from iosim.inputs.models import Model

F = TypeVar("F", bound=Callable[..., Any])

TYPED = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def model_options(f: F) -> F:
    """--model NAME|PATH and --layer KIND."""
    return with_options(f, [
        click.option("--model", default=None, metavar="NAME|PATH",
                     help="A model preset (see `iosim models`) or your own model YAML: fills "
                          "--heads, --kv-heads, --d, --d-v, --window, --causal (and MLA's "
                          "latent dimensions with --latent-kv). A flag you also give must agree."),
        click.option("--layer", default=None, metavar="KIND",
                     help="One layer kind of --model (e.g. local or global; `iosim models show "
                          "NAME` lists them). compare shows every kind without it."),
    ])


def given_fields(params: dict[str, Any], ctx: click.Context | None = None) -> dict[str, Any]:
    """The preset fields whose flags the user typed, with their values."""
    from iosim.inputs.model_presets import PRESET_FIELDS

    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return {}
    return {name: params[name] for name in PRESET_FIELDS
            if name in params and ctx.get_parameter_source(name) in TYPED}


def refuse_stray_layer(params: dict[str, Any]) -> None:
    """--layer without --model is a usage error."""
    if params.get("layer") is not None and params.get("model") is None:
        raise click.UsageError("--layer picks a layer kind of --model; give --model too (or "
                               "drop --layer)")


def model_of(params: dict[str, Any]) -> Model | None:
    """--model's preset (a name, an alias or a path), or None without --model."""
    refuse_stray_layer(params)
    spec = params.get("model")
    if spec is None:
        return None
    from iosim.inputs.model_files import resolve_model

    return resolve_model(spec)


def builder(params: dict[str, Any], workload_from: Callable[[dict[str, Any]], Workload]
            ) -> Callable[[dict[str, Any]], Workload]:
    """Builds one layer's Workload: the command's own flags with the preset's fields in."""
    return lambda fields: workload_from({**params, **fields, "model": None, "layer": None})


def single_model_layer(params: dict[str, Any],
                       workload_from: Callable[[dict[str, Any]], Workload]) -> ModelLayer:
    """The one layer kind a one-workload command (report, roofline) runs under --model."""
    from iosim.inputs.model_presets import single_layer

    model = model_of(params)
    assert model is not None
    return single_layer(model, builder(params, workload_from), given=given_fields(params),
                        latent_kv=bool(params.get("latent_kv")), layer=params.get("layer"))


def workload_of(n: int, fields: dict[str, Any], params: dict[str, Any],
                ctx: click.Context | None = None) -> Workload:
    """Workload(n, **fields), or, under --model, with the preset's fields in for its one layer
    kind (verify's workload)."""
    model = model_of(params)
    if model is None:
        return Workload(n, **fields)
    from iosim.inputs.model_presets import single_layer

    return single_layer(model, lambda preset: Workload(n, **{**fields, **preset}),
                        given=given_fields(params, ctx),
                        latent_kv=bool(params.get("latent_kv")), layer=params.get("layer")).workload


def sweep_with_model(spec: Any, params: dict[str, Any], ctx: click.Context | None = None) -> Any:
    """The SweepSpec with --model's fields as one-value axes (its one layer kind, --layer)."""
    from iosim.errors import ModelError
    from iosim.inputs.model_presets import (
        PRESET_FIELDS,
        choose_group,
        preset_fields,
        refuse_contradictions,
    )
    from iosim.record import field_names, replace

    model = model_of(params)
    if model is None:
        return spec
    latent = bool(params.get("latent_kv") or getattr(spec, "latent_kv", False))
    group = choose_group(model, params.get("layer"))
    axes = set(field_names(spec))
    typed = given_fields({name: getattr(spec, name) for name in PRESET_FIELDS if name in axes},
                         ctx)
    one = {k: v[0] if isinstance(v, tuple) and len(v) == 1 else v for k, v in typed.items()}
    refuse_contradictions(model, (group,), one, latent)
    fields = preset_fields(model, group, latent_kv=latent)
    overrides: dict[str, Any] = {}
    for name, value in fields.items():
        if name in axes:  # an axis is a tuple of values; a constant (latent_kv) is the value
            overrides[name] = (value,) if isinstance(getattr(spec, name), tuple) else value
        elif not (value is None or value is False or (name == "d_v" and value == fields["d"])):
            raise ModelError(f"{model.name}'s {name} = {value} is not a sweep axis (yet); "
                             f"compare it with iosim compare --model {model.name}",
                             param="model")
    if fields.get("window") is not None:  # per point, as compare: a window covering every
        overrides["window_capped"] = True  # key is a global layer's attention
    return replace(spec, **overrides)


__all__ = ["given_fields", "model_of", "model_options", "single_model_layer", "sweep_with_model",
           "workload_of"]
