"""What a model preset fills in: the attention fields of one Workload per layer kind.

A preset (inputs/models.py) owns heads, kv_heads, d, d_v, window, latent_kv and causal. The
caller gives the rest (n, n_kv, batch, dtype, pass, ...). A field the caller also gives
explicitly must agree with the preset: a contradiction (`--model llama-3.1-8b --heads 16`) is
refused, never silently resolved one way or the other, so that a printed number is always the
model's or the flags', never a blend. To study a variant, write a model YAML of your own.

An MLA model has two forms: decompressed per-head K/V (prefill: kv_heads = heads, d = qk_nope
+ qk_rope, d_v = v_head_dim) and absorbed decoding over the latent cache (latent_kv: kv_heads 1,
d = kv_lora_rank + qk_rope, d_v = kv_lora_rank). `latent_kv=True` picks the second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from iosim.errors import ModelError, arg
from iosim.inputs.api_values import check_flag, check_instance
from iosim.inputs.excerpts import clip, excerpt
from iosim.inputs.models import LayerGroup, Model
from iosim.inputs.workload import Workload
from iosim.record import Record

PRESET_FIELDS = ("heads", "kv_heads", "d", "d_v", "window", "latent_kv", "causal")
"""The Workload fields a model preset fills; every other field is the caller's."""

Build = Callable[[dict[str, Any]], Workload]
"""Makes the Workload of one layer from the preset's fields (the CLI's: its flags' Workload)."""
Base = Mapping[str, Any] | Build
"""The caller's part of the Workload: its arguments (n, batch, ...) or a Build."""


class ModelLayer(Record):
    """One layer kind of a model and the Workload of one of its layers (whose window is None
    when the kind's window covers every key: the same attention as a full one)."""

    group: LayerGroup
    workload: Workload


def preset_fields(model: Model, group: LayerGroup, *, latent_kv: bool = False) -> dict[str, Any]:
    """The Workload fields of one layer of `group` (window only when the layer has one)."""
    if latent_kv and model.mla is None:
        raise ModelError(f"{arg('latent_kv')} needs an MLA model (its latent cache dimensions); "
                         f"{model.name} has none (deepseek-v3 has); drop {arg('latent_kv')}",
                         param="latent_kv")
    if latent_kv and model.mla is not None:
        attention: dict[str, Any] = {"heads": model.heads, "kv_heads": 1,
                                     "d": model.mla.latent_d, "d_v": model.mla.latent_d_v,
                                     "latent_kv": True}
    else:
        attention = {"heads": model.heads, "kv_heads": model.kv_heads, "d": model.d,
                     "d_v": model.d_v}
    attention["causal"] = model.causal
    if group.window is not None:
        attention["window"] = group.window
    return attention


def refuse_contradictions(model: Model, groups: tuple[LayerGroup, ...],
                          given: Mapping[str, Any], latent_kv: bool) -> None:
    """ModelError for the first given preset field that differs from the preset's value in
    one of `groups`."""
    for name, value in given.items():
        if name not in PRESET_FIELDS:
            raise ModelError(f"{arg(name)} is not a field a model preset fills "
                             f"({', '.join(PRESET_FIELDS)})", param=name)
        if name == "latent_kv":
            continue  # it picks the MLA form (preset_fields refuses it for another model)
        for group in groups:
            preset = preset_fields(model, group, latent_kv=latent_kv).get(name)
            if value == preset:
                continue
            where = f"its {group.kind} layers'" if len(model.layers) > 1 else "its"
            shown = "none" if preset is None else preset
            raise ModelError(
                f"{arg(name, value)} contradicts {arg('model', model.name)}: {where} {name} is "
                f"{shown}; drop {arg(name)} (the preset fills it), or write your own model "
                f"YAML (docs/models.md)", param=name)


def _builder(base: Base) -> Build:
    if callable(base):
        return base
    if not isinstance(base, Mapping):
        raise ModelError(f"{arg('base')} must be a mapping of Workload arguments (e.g. "
                         f"{{'n': 8192, 'batch': 4}}) or a function of the preset's fields, got "
                         f"{excerpt(base)}", param="base")
    overlap = [name for name in base if name in PRESET_FIELDS]
    if overlap:
        raise ModelError(f"{arg(overlap[0])} is filled by the model preset; pass it in `given` "
                         f"to have it checked against the preset", param=overlap[0])
    import inspect  # for a mistake's message and this check only

    accepted = tuple(inspect.signature(Workload.__init__).parameters)[1:]  # after self
    unknown = [name for name in base if name not in accepted]
    if unknown or "n" not in base:
        what = f"has no Workload argument {clip(unknown[0])}" if unknown else "lacks n"
        raise ModelError(f"{arg('base')} {what}; give the Workload arguments the preset does not "
                         f"fill, n first (e.g. {{'n': 8192, 'batch': 4}}): "
                         f"{', '.join(a for a in accepted if a not in PRESET_FIELDS)}",
                         param="base")
    arguments = dict(base)
    return lambda fields: Workload(**arguments, **fields)


MODEL_EXAMPLE = "iosim.resolve_model('llama-3.1-8b')"
"""How a Model is made, for the error that a value of another type gets."""


def model_layers(model: Model, base: Base, *, given: Mapping[str, Any] | None = None,
                 latent_kv: bool = False, layer: str | None = None) -> tuple[ModelLayer, ...]:
    """One Workload per layer kind of `model` (or of the one kind `layer` names).

    `base` holds the caller's Workload arguments (n, n_kv, batch, dtype, pass_, ...), which must
    not include a preset field, or builds the Workload from the preset's fields; `given` holds
    the preset fields the caller set explicitly, each of which must agree with the preset
    (ModelError naming it otherwise)."""
    check_instance("model", model, Model, MODEL_EXAMPLE)  # not an AttributeError on .layers
    latent_kv = check_flag("latent_kv", latent_kv, error=ModelError)
    if given is not None and not isinstance(given, Mapping):
        raise ModelError(f"{arg('given')} must be a mapping of preset fields the caller set "
                         f"(e.g. {{'heads': 32}}), got {excerpt(given)}", param="given")
    groups = model.layers if layer is None else (model.group(layer),)
    build = _builder(base)
    refuse_contradictions(model, groups, given or {}, latent_kv)
    return tuple(ModelLayer(g, _build_layer(model, g, build, latent_kv)) for g in groups)


def _build_layer(model: Model, group: LayerGroup, build: Build, latent_kv: bool) -> Workload:
    fields = preset_fields(model, group, latent_kv=latent_kv)
    if "window" in fields:
        full = build({k: v for k, v in fields.items() if k != "window"})
        if fields["window"] >= full.n_kv:
            return full  # the window covers every key: the layer attends as a global one
    workload = build(fields)
    for name, value in fields.items():  # a builder that drops a field would print wrong numbers
        if getattr(workload, name, None) != value:
            raise ModelError(f"{model.name}'s {group.kind} layers have {name} = {value}, which "
                             f"this command cannot pass on yet (it has no {arg(name)})",
                             param="model")
    return workload


def choose_group(model: Model, layer: str | None) -> LayerGroup:
    """The one layer kind a command of one workload (sweep, report, verify, roofline) runs:
    `layer`, or the model's only kind; a model of several kinds needs `layer`."""
    if layer is not None:
        return model.group(layer)
    if len(model.layers) > 1:
        from iosim.inputs.models import describe_kinds

        raise ModelError(f"{model.name} has {len(model.layers)} layer kinds ("
                         f"{describe_kinds(model)}); this command models one: pick it with "
                         f"{arg('layer', model.layers[0].kind)} (compare shows them all)",
                         param="layer")
    return model.layers[0]


def single_layer(model: Model, base: Base, *, given: Mapping[str, Any] | None = None,
                 latent_kv: bool = False, layer: str | None = None) -> ModelLayer:
    """The Workload of the one layer kind `choose_group` picks."""
    group = choose_group(model, layer)
    return model_layers(model, base, given=given, latent_kv=latent_kv, layer=group.kind)[0]


__all__ = ["PRESET_FIELDS", "ModelLayer", "choose_group", "model_layers", "preset_fields",
           "refuse_contradictions", "single_layer"]
