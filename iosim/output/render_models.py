"""`iosim models` and `iosim models show`: the model presets, each figure with its source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from iosim.inputs.model_files import shown_path
from iosim.inputs.models import Model, describe_layers
from iosim.output.plain import TextTable
from iosim.output.tables import compact_table, simple_table


def _windows(m: Model) -> str:
    """'21×4096 + 21 full', '32×4096', 'none'."""
    if all(g.window is None for g in m.layers):
        return "none"
    return " + ".join(f"{g.count}×{g.window}" if g.window else f"{g.count} full" for g in m.layers)


def _d_text(m: Model) -> str:
    return f"{m.d}/{m.d_v}" if m.d_v != m.d else f"{m.d}"


def models_table(models: Sequence[Model]) -> TextTable:
    """`iosim models`: one row per preset."""
    table = compact_table("Model presets (configs/models; `iosim models show NAME` for sources)", (
        ("name", "left"), ("heads", "right"), ("kv", "right"), ("d (/d_v)", "right"),
        ("layers", "right"), ("sliding window", "left"), ("MLA latent", "left")))
    for m in models:
        latent = f"{m.mla.latent_d}/{m.mla.latent_d_v}" if m.mla else "—"
        table.add_row(m.name, str(m.heads), str(m.kv_heads), _d_text(m), str(m.layer_count),
                      _windows(m), latent)
    return table


def model_detail(m: Model) -> RenderableType:
    """`iosim models show`: every figure with its source, then the sources."""
    head = Text("\n".join((
        f"{m.display_name}  ({m.name})",
        f"aliases: {', '.join(m.aliases) or '—'}",
        f"file: {shown_path(m)}",
        f"layers: {describe_layers(m)}",
        *([f"MLA: decompressed d = {m.d}, d_v = {m.d_v}, kv_heads = {m.kv_heads}; absorbed "
           f"(--latent-kv) d = {m.mla.latent_d}, d_v = {m.mla.latent_d_v}, kv_heads = 1"]
          if m.mla else []),
        *([f"notes: {' '.join(m.notes.split())}"] if m.notes else []))))
    figures = simple_table("Figures", (("figure", "left"), ("value", "right"), ("source", "left"),
                                       ("field", "left")))
    for key, fig in m.figures.items():
        figures.add_row(key, str(fig.value).lower() if isinstance(fig.value, bool) else str(fig.value),
                        fig.source, fig.field or "")
    for i, g in enumerate(m.layers):
        figures.add_row(f"layers[{i}] {g.kind}", f"{g.count}" + (f" (window {g.window})"
                                                                 if g.window else ""),
                        g.source, g.field or "")
    sources = simple_table("Sources", (("key", "left"), ("source", "left")))
    sources.columns[1].overflow = "fold"  # a URL is folded, never cut
    for key, text in m.sources.items():
        sources.add_row(key, text)
    return Group(head, Text(""), figures, sources)


def model_dict(m: Model) -> dict[str, Any]:
    """`iosim models --format json`: one preset as plain data."""
    return {
        "name": m.name, "display_name": m.display_name, "aliases": list(m.aliases),
        "file": shown_path(m), "heads": m.heads, "kv_heads": m.kv_heads, "d": m.d, "d_v": m.d_v,
        "causal": m.causal,
        "layers": [{"kind": g.kind, "count": g.count, "window": g.window, "source": g.source,
                    "field": g.field} for g in m.layers],
        "mla": None if m.mla is None else {
            "q_lora_rank": m.mla.q_lora_rank, "kv_lora_rank": m.mla.kv_lora_rank,
            "qk_nope_head_dim": m.mla.qk_nope_head_dim,
            "qk_rope_head_dim": m.mla.qk_rope_head_dim, "v_head_dim": m.mla.v_head_dim,
            "latent_d": m.mla.latent_d, "latent_d_v": m.mla.latent_d_v},
        "figures": {k: {"value": f.value, "source": f.source, "field": f.field}
                    for k, f in m.figures.items()},
        "sources": dict(m.sources),
    }


__all__ = ["model_detail", "model_dict", "models_table"]
