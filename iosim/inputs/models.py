"""Model presets: a model's attention shape, one YAML per model, every figure with its source.

A file looks like this (configs/models/*.yaml ship inside the wheel; users may pass their own path)::

    schema_version: 1
    name: gemma-2-9b
    display_name: Google Gemma 2 9B
    aliases: [gemma2-9b]
    sources:
      config: https://huggingface.co/google/gemma-2-9b/blob/main/config.json
    heads:    {value: 16,  source: config, field: num_attention_heads}
    kv_heads: {value: 8,   source: config, field: num_key_value_heads}
    d:        {value: 256, source: config, field: head_dim}
    causal:   {value: true, source: config, field: "Gemma2ForCausalLM"}
    layers:
      - {kind: local, count: 21, window: 4096, source: config, field: ...}
      - {kind: global, count: 21, source: config, field: ...}

`sources` names where figures come from; each figure's `source` must be one of its keys. A model
whose layers differ (Gemma's local and global layers) lists one layer group per kind. An MLA
model (DeepSeek-V3) gives `mla:` dimensions instead of kv_heads and d, which follow from them
(model_presets.py). Unknown keys (with a "did you mean"), missing keys, wrong types, figures out
of range (inputs/limits.py) and MLA dimensions that do not add up are refused with the file and
key named; the file is read through safe_yaml.py, as GPU files are (model_files.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from iosim.errors import ModelError, arg
from iosim.inputs.excerpts import excerpt
from iosim.record import Record, field

MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
"""DeepSeek's config.json names of the MLA dimensions (configuration_deepseek.py)."""


class ModelFigure(Record):
    """One figure of a model, with the key of `Model.sources` it comes from and where in it."""

    value: int | bool
    source: str
    field: str | None = None
    note: str | None = None


class LayerGroup(Record):
    """`count` layers whose attention is the same: one kind (local, global, all)."""

    kind: str
    count: int
    window: int | None
    """Sliding window (Hugging Face's sliding_window: the W most recent keys), None = full."""
    source: str
    field: str | None = None


class MlaDims(Record):
    """Multi-head latent attention (DeepSeek-V2/V3), in its config.json names."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def prefill_d(self) -> int:
        """Q·K head dim with decompressed per-head K: the no-rope part plus the rope part."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def latent_d(self) -> int:
        """Q·K head dim of absorbed decoding: the latent KV plus the shared rope key."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def latent_d_v(self) -> int:
        """V head dim of absorbed decoding: the latent itself (V is K's first columns)."""
        return self.kv_lora_rank


class Model(Record):
    """One model's attention: heads, head dims, layer kinds; `figures` keeps the sources."""

    name: str
    display_name: str
    path: str
    heads: int
    kv_heads: int
    d: int
    d_v: int
    causal: bool
    layers: tuple[LayerGroup, ...]
    sources: Mapping[str, str]
    aliases: tuple[str, ...] = ()
    mla: MlaDims | None = None
    figures: Mapping[str, ModelFigure] = field(default_factory=dict)
    notes: str | None = None

    @property
    def layer_count(self) -> int:
        """Every layer of the model, all kinds."""
        return sum(g.count for g in self.layers)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The layer kinds, in the file's order."""
        return tuple(g.kind for g in self.layers)

    def group(self, kind: str) -> LayerGroup:
        """The layer group of one kind; ModelError naming the kinds there are."""
        if not isinstance(kind, str):
            raise ModelError(f"{arg('layer')} must be a layer kind's name ({describe_kinds(self)}), "
                             f"got {excerpt(kind)}", param="layer")
        for g in self.layers:
            if g.kind == kind.strip().lower():
                return g
        from iosim.inputs.suggest import did_you_mean  # difflib: imported only for a mistake

        hint = did_you_mean(kind, [g.kind for g in self.layers])
        raise ModelError(f"{self.name} has no layer kind {excerpt(kind)}.{hint} Its kinds: "
                         f"{describe_kinds(self)}; pick one with {arg('layer')}", param="layer")


def describe_kinds(model: Model) -> str:
    """'local (21 layers, window 4096), global (21 layers)'."""
    return ", ".join(f"{g.kind} ({g.count} layers" + (f", window {g.window})" if g.window else ")")
                     for g in model.layers)


def describe_layers(model: Model) -> str:
    """'42 layers: local (21 layers, window 4096), global (21 layers)'; '32 layers' for one
    kind without a window."""
    if len(model.layers) == 1:
        g = model.layers[0]
        return f"{g.count} layers" + (f", sliding window {g.window}" if g.window else "")
    return f"{model.layer_count} layers: {describe_kinds(model)}"


__all__ = ["MLA_KEYS", "LayerGroup", "MlaDims", "Model", "ModelFigure", "describe_kinds",
           "describe_layers"]
