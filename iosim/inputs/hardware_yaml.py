"""GPU hardware models, one YAML file per GPU, loaded strictly into SI-unit values.

A file looks like this (configs/gpus/*.yaml ship inside the wheel; users may pass their own path)::

    schema_version: 1
    name: a100-80gb-sxm
    display_name: NVIDIA A100 80GB SXM4
    aliases: [a100]
    hbm_capacity:   {value: 80 GiB,   source: "NVIDIA A100 datasheet"}
    hbm_bandwidth:  {value: 2039 GB/s, source: "..."}
    sram_per_block: {value: 163 KiB,  source: "...", estimate: false}
    peak_flops:
      fp16: {value: 312 TFLOP/s, source: "..."}

Every figure carries a source; one without a good source says `estimate: true`. Unknown keys,
missing keys, wrong types, duplicate keys, YAML tags, anchors, aliases and merge keys, files over
1 MiB or not UTF-8, and figures that are not finite or out of range (iosim/inputs/limits.py) are
rejected with the file and key named. A figure's shape is read in hardware_figures.py, the
`measured:` profile in hardware_measured.py.
"""

from __future__ import annotations

import os
from typing import Any

from iosim.errors import ConfigError, UnknownGpuError
from iosim.inputs.api_values import check_path_text
from iosim.inputs.hardware import SCHEMA_VERSION, Figure, Hardware
from iosim.inputs.hardware_figures import read_figure, read_peak_figures
from iosim.inputs.hardware_measured import read_measured
from iosim.inputs.limits import MAX_SRAM_BYTES
from iosim.inputs.safe_yaml import read_document, yaml_aliases, yaml_name, yaml_text
from iosim.inputs.shipped import path_text

# YAML key -> (dimension for parse_quantity or "count", required)
_FIGURES: dict[str, tuple[str, bool]] = {
    "hbm_capacity": ("bytes", True),
    "hbm_bandwidth": ("bytes_per_s", True),
    "l2_size": ("bytes", False),
    "l2_bandwidth": ("bytes_per_s", False),
    "sram_per_sm": ("bytes", False),
    "sram_per_block": ("bytes", True),
    "sram_bandwidth": ("bytes_per_s", False),
    "sm_count": ("count", False),
}
_TEXT_KEYS = ("display_name", "vendor", "architecture", "notes")
_TOP_KEYS = {"schema_version", "name", "aliases", "peak_flops", "measured",
             *_TEXT_KEYS, *_FIGURES}


def _text(path: str, raw: dict[str, Any], key: str) -> str | None:
    if key not in raw:
        return None
    return yaml_text(path, key, raw[key], lines=key == "notes")


def load_hardware(path: str | os.PathLike[str]) -> Hardware:
    """Load and validate one hardware YAML file."""
    where = path_text(check_path_text("path", path, error=UnknownGpuError))
    raw = read_document(where, _TOP_KEYS, schema_version=SCHEMA_VERSION)
    if raw.get("name") is None:
        raise ConfigError(where, "name", "missing; give the GPU a short name, e.g. a100-80gb-sxm")
    name = yaml_name(where, "name", raw["name"])
    aliases = yaml_aliases(where, "aliases", raw.get("aliases", []), name.strip())
    if "sram_per_block" in raw:
        sram = read_figure(where, "sram_per_block", raw["sram_per_block"], "bytes").value
        if sram > MAX_SRAM_BYTES:
            raise ConfigError(where, "sram_per_block.value", f"{sram:.3g} bytes is beyond the "
                                                             f"{MAX_SRAM_BYTES:,} (1 TiB) iosim models")
    figures: dict[str, Figure] = {}
    for key, (dimension, required) in _FIGURES.items():
        if key in raw:
            figures[key] = read_figure(where, key, raw[key], dimension)
        elif required:
            raise ConfigError(where, key, "missing (required)")
    if "peak_flops" not in raw:
        raise ConfigError(where, "peak_flops", "missing (required)")
    peaks = read_peak_figures(where, "peak_flops", raw["peak_flops"], required=True)
    figures.update({f"peak_flops.{k}": v for k, v in peaks.items()})
    texts = {key: _text(where, raw, key) for key in _TEXT_KEYS}

    def optional(key: str) -> float | None:
        return figures[key].value if key in figures else None

    sm_count = optional("sm_count")
    return Hardware(
        name=name.strip(),
        display_name=texts["display_name"] or name.strip(),
        path=where,
        hbm_capacity_bytes=figures["hbm_capacity"].value,
        hbm_bandwidth_bytes_per_s=figures["hbm_bandwidth"].value,
        sram_per_block_bytes=figures["sram_per_block"].value,
        peak_flops_per_s={k: v.value for k, v in peaks.items()},
        aliases=tuple(aliases),
        l2_bytes=optional("l2_size"),
        l2_bandwidth_bytes_per_s=optional("l2_bandwidth"),
        sram_per_sm_bytes=optional("sram_per_sm"),
        sram_bandwidth_bytes_per_s=optional("sram_bandwidth"),
        sm_count=int(sm_count) if sm_count is not None else None,
        vendor=texts["vendor"],
        architecture=texts["architecture"],
        notes=texts["notes"],
        figures=figures,
        measured=read_measured(where, raw["measured"]) if "measured" in raw else None,
    )
