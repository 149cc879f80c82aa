"""`compare` for a whole model: one comparison per layer kind, and the model's sums.

A model preset's layers come in kinds (Gemma's local and global layers; one kind for Llama).
Each kind is compared as `compare` compares one workload; the whole model's attention for one
step (a forward over N tokens, or one decoding step) is then each algorithm's per-layer bytes
and time times the kind's layer count, summed over the kinds. Where a kind has a sliding
window, the same layers are also compared without it, so that the sums say what the windows
save (Gemma 3's local layers, for one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from iosim.analysis.compare import compare
from iosim.analysis.comparison import Comparison
from iosim.inputs.model_presets import Base, model_layers
from iosim.inputs.models import LayerGroup, Model
from iosim.record import Record

SCHEMA = "iosim.compare-model/1"


class LayerComparison(Record):
    """One layer kind: its comparison (one layer) and, for a windowed kind, the same layer
    without the window."""

    group: LayerGroup
    comparison: Comparison
    without_window: Comparison | None = None


class ModelTotal(Record):
    """One algorithm over the whole model (every layer of every kind, one step)."""

    algorithm: str
    hbm_bytes: int
    time_s: float
    flops: int
    hbm_bytes_without_windows: int
    tokens: int
    """Query tokens the step processes: batch × N."""

    @property
    def hbm_bytes_per_token(self) -> float:
        """HBM bytes of the step per query token (batch × N of them)."""
        return self.hbm_bytes / self.tokens

    @property
    def window_saving(self) -> float:
        """The fraction of the HBM bytes the sliding windows save (0 without windows)."""
        return 1 - self.hbm_bytes / self.hbm_bytes_without_windows


class ModelComparison(Record):
    """Everything `iosim compare --model` prints; `to_dict()` is the stable JSON."""

    model: Model
    layers: tuple[LayerComparison, ...]
    latent_kv: bool = False

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The algorithms every layer kind ran, in the first kind's order."""
        names = [a.name for a in self.layers[0].comparison.algorithms]
        return tuple(n for n in names
                     if all(any(a.name == n for a in lc.comparison.algorithms) for lc in self.layers))

    @property
    def has_windows(self) -> bool:
        """Whether some compared kind attends through a sliding window."""
        return any(lc.without_window is not None for lc in self.layers)

    @property
    def layer_count(self) -> int:
        """The layers compared: every layer, or one kind's under `layer`."""
        return sum(lc.group.count for lc in self.layers)

    def totals(self) -> tuple[ModelTotal, ...]:
        """Each algorithm summed over the layers: Σ over kinds of count × one layer's figure."""
        w = self.layers[0].comparison.workload
        rows = []
        for name in self.algorithms:
            hbm = flops = unwindowed = 0
            time = 0.0
            for lc in self.layers:
                a = lc.comparison.algorithm(name)
                full = (lc.without_window or lc.comparison).algorithm(name)
                hbm += lc.group.count * a.hbm_bytes
                time += lc.group.count * a.time_s
                flops += lc.group.count * a.flops
                unwindowed += lc.group.count * full.hbm_bytes
            rows.append(ModelTotal(name, hbm, time, flops, unwindowed, w.batch * w.n))
        return tuple(rows)

    def to_dict(self) -> dict[str, Any]:
        """Schema iosim.compare-model/1: the model, each kind's comparison (iosim.compare/1)
        with its layer count, and the whole model's sums per algorithm."""
        m = self.model
        return {
            "schema": SCHEMA,
            "model": {"name": m.name, "display_name": m.display_name, "path": m.path,
                      "layers": m.layer_count, "layers_compared": self.layer_count,
                      "latent_kv": self.latent_kv},
            "layer_kinds": [{"kind": lc.group.kind, "count": lc.group.count,
                             "window": lc.group.window, "comparison": lc.comparison.to_dict()}
                            for lc in self.layers],
            "whole_model": [{"algorithm": t.algorithm, "hbm_bytes": t.hbm_bytes,
                             "time_s": t.time_s, "flops": t.flops,
                             "hbm_bytes_per_token": t.hbm_bytes_per_token,
                             "hbm_bytes_without_windows": t.hbm_bytes_without_windows}
                            for t in self.totals()],
        }


def compare_model(model: Model, base: Base, hardware: Any, *,
                  given: Mapping[str, Any] | None = None, latent_kv: bool = False,
                  layer: str | None = None, algorithms: Sequence[str] | None = None,
                  **options: Any) -> ModelComparison:
    """Compare every layer kind of `model` (or the one `layer` names) on `hardware`.

    `base` holds the Workload arguments the preset does not fill (n, n_kv, batch, dtype,
    pass_, ...); `given` the preset fields set explicitly, checked against the preset
    (inputs/model_presets.py); `options` are compare's (block_q, sram, profile, splits, ...)."""
    compared = []
    for ml in model_layers(model, base, given=given, latent_kv=latent_kv, layer=layer):
        comparison = compare(ml.workload, hardware, algorithms=algorithms, **options)
        full = None
        if ml.workload.window is not None:
            full = compare(ml.workload.with_(window=None), hardware, algorithms=algorithms,
                           **options)
        compared.append(LayerComparison(ml.group, comparison, full))
    return ModelComparison(model, tuple(compared), latent_kv)


__all__ = ["SCHEMA", "LayerComparison", "ModelComparison", "ModelTotal", "compare_model"]
