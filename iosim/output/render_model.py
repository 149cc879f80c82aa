"""`iosim compare --model`: each layer kind's comparison, then the whole model's sums.

A model of one layer kind (Llama) prints the full comparison of one layer, as `compare` does,
then the whole-model table. A model of several kinds (Gemma's local and global layers) prints,
per kind, compare's header and per-algorithm table (`--layer KIND` gives one kind's full
output), then the whole-model table: each kind's HBM bytes times its layer count, the sums,
the bytes per query token and, where windows are, what they save.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.text import Text

from iosim.analysis.model_compare import LayerComparison, ModelComparison
from iosim.inputs.model_files import shown_path
from iosim.inputs.models import describe_layers
from iosim.output import strict_json
from iosim.output.numbers import fmt_bytes, fmt_time
from iosim.output.plain import LabelGrid, TextTable
from iosim.output.render import (
    comparison_markdown,
    comparison_renderable,
    header_grid,
    records_csv,
)
from iosim.output.render_tables import label_grid, summary_table
from iosim.output.tables import compact_table, rich_markdown


def _kind_line(lc: LayerComparison, layers: int) -> str:
    g, w = lc.group, lc.comparison.workload
    window = (", full attention" if g.window is None else f", sliding window {g.window}" if
              w.window is not None else f", sliding window {g.window} ≥ the {w.n_kv:,} keys: "
                                        f"full attention")
    return f"{g.count} of {layers} layers{window}"


def _model_header(r: ModelComparison) -> LabelGrid:
    m = r.model
    form = (" · MLA absorbed (latent KV)" if r.latent_kv else
            " · MLA decompressed K/V" if m.mla is not None else "")
    return label_grid([("model", f"{m.display_name} ({m.name}) · {describe_layers(m)}{form}"),
                       ("sources", f"{shown_path(m)} (`iosim models show {m.name}` lists each "
                                   f"figure's source)")])


def whole_model_title(r: ModelComparison) -> str:
    """The sums table's title: the layers it covers and the step's query tokens."""
    w = r.layers[0].comparison.workload
    step = f"one step (batch {w.batch} × N {w.n} = {w.batch * w.n:,} query tokens)"
    if len(r.layers) < len(r.model.layers):  # --layer: one kind's layers, not the model's
        kinds = ", ".join(lc.group.kind for lc in r.layers)
        return (f"The {kinds} layers only (--layer): {r.layer_count} of the model's "
                f"{r.model.layer_count}, {step}")
    return f"Whole model: {r.layer_count} layers, {step}"


def whole_model_table(r: ModelComparison) -> TextTable:
    """One row per algorithm: each kind's HBM × its layers, the sum, per token, the time."""
    several = len(r.layers) > 1
    kinds = [(f"{lc.group.kind} ×{lc.group.count}", "right") for lc in r.layers] if several else []
    windows = [("no windows", "right"), ("saved", "right")] if r.has_windows else []
    table = compact_table(None, (("algorithm", "left"), *kinds, ("HBM", "right"),
                                  ("per token", "right"), ("time", "right"), *windows))
    for total in r.totals():
        per_kind = [fmt_bytes(lc.group.count * lc.comparison.algorithm(total.algorithm).hbm_bytes)
                    for lc in r.layers] if several else []
        saved = [fmt_bytes(total.hbm_bytes_without_windows),
                 f"{100 * total.window_saving:.0f}%"] if r.has_windows else []
        table.add_row(total.algorithm, *per_kind, fmt_bytes(total.hbm_bytes),
                      fmt_bytes(total.hbm_bytes_per_token), fmt_time(total.time_s), *saved)
    return table


def _whole_legend(r: ModelComparison) -> Text:
    text = ("HBM and time: one layer's (per kind) × its layer count, summed; per token: ÷ the "
            "step's query tokens. Attention only (no projections, MLP or KV-cache writes).")
    if r.has_windows:
        text += (" no windows: the same layers with full attention; saved: the share of those "
                 "bytes the sliding windows avoid.")
    return Text(text)


def model_renderable(r: ModelComparison, *, wide: bool = False) -> RenderableType:
    """The whole `compare --model` table output."""
    parts: list[RenderableType] = [_model_header(r), Text("")]
    if len(r.layers) == 1:
        lc = r.layers[0]
        parts += [Text(f"One layer ({lc.group.kind}: {_kind_line(lc, r.layer_count)})",
                       style="bold"), comparison_renderable(lc.comparison, wide=wide)]
    else:
        for lc in r.layers:
            parts += [Text(f"Layer kind {lc.group.kind}: {_kind_line(lc, r.layer_count)}",
                           style="bold"), header_grid(lc.comparison),
                      summary_table(lc.comparison, wide=wide), Text("")]
        parts.append(Text(f"(one kind's kernels and tensors: add --layer "
                          f"{r.layers[0].group.kind})"))
    parts += [Text(""), Text(whole_model_title(r), style="italic"), whole_model_table(r),
              _whole_legend(r)]
    return Group(*parts)


def print_model_comparison(r: ModelComparison, console: Console, *, wide: bool = False) -> None:
    """Print `model_renderable` to `console`."""
    console.print(model_renderable(r, wide=wide))


def model_comparison_json(r: ModelComparison) -> str:
    """`--format json`: schema iosim.compare-model/1, strict (no NaN)."""
    return strict_json.dumps(r.to_dict(), indent=2, ensure_ascii=False)


def model_comparison_csv(r: ModelComparison) -> str:
    """One row per (layer kind, algorithm) for one layer, then one 'model' row per algorithm."""
    rows: list[dict[str, Any]] = []
    for lc in r.layers:
        for a in lc.comparison.algorithms:
            rows.append({"model": r.model.name, "layer_kind": lc.group.kind,
                         "layers": lc.group.count, "window": lc.group.window or "",
                         "algorithm": a.name, "hbm_bytes": a.hbm_bytes, "flops": a.flops,
                         "time_s": a.time_s})
    for t in r.totals():
        rows.append({"model": r.model.name, "layer_kind": "model", "layers": r.layer_count,
                     "window": "", "algorithm": t.algorithm, "hbm_bytes": t.hbm_bytes,
                     "flops": t.flops, "time_s": t.time_s})
    return records_csv(rows)


def model_comparison_markdown(r: ModelComparison) -> str:
    """`--format markdown`: each kind's comparison, then the sums table."""
    m = r.model
    parts = [f"**{m.display_name}** ({m.name}) · {describe_layers(m)}", ""]
    for lc in r.layers:
        parts += [f"### Layer kind {lc.group.kind}: {_kind_line(lc, r.layer_count)}", "",
                  comparison_markdown(lc.comparison)]
    table = whole_model_table(r)
    parts += [f"*{whole_model_title(r)}*", "", rich_markdown(table), "", _whole_legend(r).plain]
    return "\n".join(parts) + "\n"


__all__ = ["model_comparison_csv", "model_comparison_json", "model_comparison_markdown",
           "model_renderable", "print_model_comparison", "whole_model_table"]
