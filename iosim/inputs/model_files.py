"""Reading model presets: one YAML per model, validated strictly, and the shipped ones.

The format is models.py's; this module reads a file (through safe_yaml.py, as GPU files are
read), refuses unknown keys (with a "did you mean"), missing keys, wrong types, figures out of
range (inputs/limits.py) and MLA dimensions that do not add up, with the file and key named;
and it finds the shipped presets (configs/models) for `--model NAME`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from iosim.errors import ConfigError, IosimError, UnknownModelError
from iosim.inputs.api_values import check_path_text
from iosim.inputs.excerpts import clip, excerpt
from iosim.inputs.limits import MAX_HEAD_DIM, MAX_HEADS, MAX_LAYERS, MAX_LENGTH
from iosim.inputs.models import MLA_KEYS, LayerGroup, MlaDims, Model, ModelFigure
from iosim.inputs.safe_yaml import read_document, refuse_unknown_keys, yaml_aliases, yaml_name, yaml_text
from iosim.inputs.shipped import shipped_dir, shipped_yamls, user_yaml
from iosim.inputs.suggest import did_you_mean

SCHEMA_VERSION = 1
_TOP_KEYS = ("schema_version", "name", "display_name", "aliases", "sources", "heads", "kv_heads",
             "d", "d_v", "causal", "layers", "mla", "notes")
_FIGURE_KEYS = ("value", "source", "field", "note")
_LAYER_KEYS = ("kind", "count", "window", "source", "field", "note")


def _count(path: str, key: str, value: object, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, key, f"must be a whole number, got {excerpt(value)}")
    if not 1 <= value <= high:
        raise ConfigError(path, key, f"must be a whole number from 1 to {high:,}, got "
                                     f"{excerpt(value)}")
    return value


def _source(path: str, key: str, raw: Mapping[str, Any], sources: Mapping[str, str]) -> str:
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(path, f"{key}.source", f"missing; every figure names one of the "
                                                 f"sources ({', '.join(sources)})")
    if source not in sources:
        hint = did_you_mean(source, sources)
        raise ConfigError(path, f"{key}.source", f"{excerpt(source)} is not a key of "
                                                 f"sources.{hint} Sources: {', '.join(sources)}")
    return source


def _text(path: str, key: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(path, key, f"must be text, got {excerpt(value)}")
    return value


def _figure(path: str, key: str, raw: object, sources: Mapping[str, str], *,
            high: int | None) -> ModelFigure:
    """A {value, source, field, note} mapping; a whole number in [1, high], or a boolean when
    `high` is None."""
    if not isinstance(raw, dict):
        raise ConfigError(path, key, f"expected a mapping {{value: ..., source: ...}}, got "
                                     f"{excerpt(raw)}")
    refuse_unknown_keys(path, key, raw, _FIGURE_KEYS)
    if "value" not in raw:
        raise ConfigError(path, f"{key}.value", "missing")
    value = raw["value"]
    if high is None:
        if not isinstance(value, bool):
            raise ConfigError(path, f"{key}.value", f"must be true or false, got {excerpt(value)}")
    else:
        value = _count(path, f"{key}.value", value, high)
    return ModelFigure(value, _source(path, key, raw, sources),
                       _text(path, f"{key}.field", raw.get("field")),
                       _text(path, f"{key}.note", raw.get("note")))


def _sources(path: str, raw: object) -> dict[str, str]:
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(path, "sources", "missing; name where the figures come from, e.g. "
                                           "{config: https://huggingface.co/.../config.json}")
    for key, text in raw.items():
        if not isinstance(key, str) or not isinstance(text, str) or not text.strip():
            raise ConfigError(path, f"sources.{clip(key)}", "must be text naming a source (a "
                                                            "URL with its revision, a paper)")
    return {k: " ".join(v.split()) for k, v in raw.items()}


def _layer(path: str, index: int, raw: object, sources: Mapping[str, str], *,
           several: bool) -> LayerGroup:
    key = f"layers[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(path, key, f"expected a mapping {{kind, count, window, source}}, got "
                                     f"{excerpt(raw)}")
    refuse_unknown_keys(path, key, raw, _LAYER_KEYS)
    kind = raw.get("kind", None if several else "all")
    if not isinstance(kind, str) or not kind.strip() or kind != kind.strip().lower():
        raise ConfigError(path, f"{key}.kind", "must be a short lower-case name (local, global): "
                                               "a model with several layer groups names each")
    if "count" not in raw:
        raise ConfigError(path, f"{key}.count", "missing: how many layers are of this kind")
    window = raw.get("window")
    return LayerGroup(kind, _count(path, f"{key}.count", raw["count"], MAX_LAYERS),
                      None if window is None else _count(path, f"{key}.window", window, MAX_LENGTH),
                      _source(path, key, raw, sources), _text(path, f"{key}.field", raw.get("field")))


def _layers(path: str, raw: object, sources: Mapping[str, str]) -> tuple[LayerGroup, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(path, "layers", "missing; list the layer groups, e.g. "
                                          "[{count: 32, source: config}]")
    groups = tuple(_layer(path, i, g, sources, several=len(raw) > 1) for i, g in enumerate(raw))
    kinds = [g.kind for g in groups]
    for i, kind in enumerate(kinds):
        if kind in kinds[:i]:
            raise ConfigError(path, f"layers[{i}].kind", f"{kind!r} is listed twice; merge the "
                                                         f"groups (add their counts)")
    return groups


def _mla(path: str, raw: object, sources: Mapping[str, str]) -> tuple[MlaDims, dict[str, ModelFigure]]:
    if not isinstance(raw, dict):
        raise ConfigError(path, "mla", f"expected a mapping of {', '.join(MLA_KEYS)}")
    refuse_unknown_keys(path, "mla", raw, MLA_KEYS)
    figures = {}
    for key in MLA_KEYS:
        if key not in raw:
            raise ConfigError(path, f"mla.{key}", "missing (every MLA dimension is required)")
        figures[f"mla.{key}"] = _figure(path, f"mla.{key}", raw[key], sources, high=MAX_HEAD_DIM)
    dims = MlaDims(*(int(figures[f"mla.{k}"].value) for k in MLA_KEYS))
    return dims, figures


def _check_mla(path: str, dims: MlaDims, figures: Mapping[str, ModelFigure]) -> None:
    """An MLA model's kv_heads, d and d_v follow from its dimensions; any given must agree."""
    expected = {"kv_heads": (int(figures["heads"].value), "heads (decompressed K/V: one per "
                                                          "query head)"),
                "d": (dims.prefill_d, f"qk_nope_head_dim + qk_rope_head_dim = "
                                      f"{dims.qk_nope_head_dim} + {dims.qk_rope_head_dim}"),
                "d_v": (dims.v_head_dim, "v_head_dim")}
    for key, (value, rule) in expected.items():
        if key in figures and figures[key].value != value:
            raise ConfigError(path, f"{key}.value", f"{figures[key].value} does not match the "
                                                    f"MLA dimensions: {key} = {rule} = {value}; "
                                                    f"fix it or leave {key} out")


def load_model(path: str | os.PathLike[str]) -> Model:
    """Load and validate one model YAML file."""
    path = check_path_text("path", path, error=UnknownModelError)
    where = str(Path(path))
    raw = read_document(where, _TOP_KEYS, schema_version=SCHEMA_VERSION)
    if raw.get("name") is None:
        raise ConfigError(where, "name", "missing; give the model a short name without spaces, "
                                         "e.g. llama-3.1-8b")
    name = yaml_name(where, "name", raw["name"])
    aliases = yaml_aliases(where, "aliases", raw.get("aliases", []), name.strip())
    sources = _sources(where, raw.get("sources"))
    figures: dict[str, ModelFigure] = {}
    mla = None
    if "mla" in raw:
        mla, mla_figures = _mla(where, raw["mla"], sources)
        figures.update(mla_figures)
    required = ("heads", "causal") if mla else ("heads", "kv_heads", "d", "causal")
    for key in _TOP_KEYS[5:10]:  # heads, kv_heads, d, d_v, causal
        if key in raw:
            high = None if key == "causal" else MAX_HEADS if "heads" in key else MAX_HEAD_DIM
            figures[key] = _figure(where, key, raw[key], sources, high=high)
        elif key in required:
            raise ConfigError(where, key, "missing (required" + (", or give mla: dimensions)"
                                                                 if key in ("kv_heads", "d")
                                                                 else ")"))
    if mla is not None:
        _check_mla(where, mla, figures)
    heads = int(figures["heads"].value)
    kv_heads = int(figures["kv_heads"].value) if "kv_heads" in figures else heads
    d = int(figures["d"].value) if "d" in figures else mla.prefill_d  # type: ignore[union-attr]
    d_v = int(figures["d_v"].value) if "d_v" in figures else (mla.v_head_dim if mla else d)
    if heads % kv_heads:
        raise ConfigError(where, "kv_heads.value", f"{kv_heads} does not divide heads = {heads}; "
                                                   f"GQA needs heads = groups × kv_heads")
    display = (yaml_text(where, "display_name", raw["display_name"]) if "display_name" in raw
               else name.strip())
    return Model(name=name.strip(), display_name=display, path=where,
                 heads=heads, kv_heads=kv_heads, d=d, d_v=d_v,
                 causal=bool(figures["causal"].value),
                 layers=_layers(where, raw.get("layers"), sources), sources=sources,
                 aliases=aliases, mla=mla, figures=figures,
                 notes=yaml_text(where, "notes", raw["notes"], lines=True) if "notes" in raw else None)


# ---------------------------------------------------------------------------------------------
# The shipped models


def models_dir() -> Path:
    """configs/models, where the shipped model presets are."""
    return shipped_dir("models", "model presets")


def shipped_model_paths() -> list[Path]:
    """The model YAML files that ship with iosim, sorted by name."""
    return shipped_yamls("models", "model presets")


@cache
def _load_shipped(path: str) -> Model:
    return load_model(path)


def list_models() -> list[Model]:
    """Every shipped model preset, sorted by name."""
    return [_load_shipped(str(p)) for p in shipped_model_paths()]


def resolve_model(spec: str) -> Model:
    """A --model value: a shipped name, an alias, or a path to the user's own YAML."""
    text = check_path_text("model", spec, error=UnknownModelError).strip()
    own = user_yaml(text, "model", UnknownModelError)
    if own is not None:
        return load_model(own)
    key = text.lower()
    paths = {p.stem: p for p in shipped_model_paths()}
    if key in paths:
        return _load_shipped(str(paths[key]))
    models = list_models()
    for model in models:
        if key in (a.lower() for a in model.aliases):
            return model
    hint = did_you_mean(text, [*paths, *(a for m in models for a in m.aliases)])
    raise UnknownModelError(f"unknown model {excerpt(spec)}.{hint} Shipped: {', '.join(paths)} "
                            f"(or pass a path to your own model YAML; `iosim models` lists them)")


def shown_path(model: Model) -> str:
    """configs/models/NAME.yaml for a shipped model (wherever iosim is installed), else the
    path the user gave."""
    path = Path(model.path)
    try:
        shipped = path.resolve().parent == models_dir().resolve()
    except IosimError:
        shipped = False
    return f"configs/models/{path.name}" if shipped else model.path


__all__ = ["SCHEMA_VERSION", "list_models", "load_model", "models_dir", "resolve_model",
           "shipped_model_paths", "shown_path"]
