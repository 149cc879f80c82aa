"""Write a hardware YAML with a `measured:` section: the source file's text, spec figures and
comments untouched, its measured section rewritten with what a fit owns replaced and every
other key kept.

Two fits write the section, each owning its keys: `iosim calibrate --gpu` the ceilings and the
kernel-class efficiencies (GPU_FIT_KEYS), `iosim calibrate --impl` one entry of `impls` per
implementation it fitted. Everything else already there — hand-added or written by another fit
(`backward_schedule`, calibrate/backward_fit.py; `paged_kv_efficiency`, tools/fit_paged_kv.py;
the other implementations' entries) — is kept, value for value.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from iosim.errors import ConfigError, IosimError
from iosim.inputs.hardware_yaml import load_hardware

_TOP_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*:")

GPU_FIT_KEYS = ("provenance", "hbm_bandwidth", "peak_flops", "vector_flops", "kernel_efficiency")
"""The keys of `measured:` that `iosim calibrate --gpu` writes (fit_result.py:profile_yaml): a
new fit replaces them all, one it no longer produces (vector_flops of a --quick fit) included."""


def strip_measured(text: str) -> str:
    """The YAML text without its top-level `measured:` block (and the comments just above it)."""
    lines = text.splitlines()
    out: list[str] = []
    skipping = False
    for line in lines:
        if re.match(r"^measured\s*:", line):
            skipping = True
            while out and out[-1].startswith("#"):
                out.pop()
            continue
        if skipping and (_TOP_KEY.match(line) or line.startswith("#")):
            skipping = False
        if not skipping:
            out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"


def old_measured(source_text: str) -> dict[str, Any]:
    """The `measured:` mapping of a hardware YAML's text ({} when it has none). The text was
    already loaded strictly (load_hardware), so a plain safe load is enough here."""
    data = yaml.safe_load(source_text)
    measured = data.get("measured") if isinstance(data, dict) else None
    return dict(measured) if isinstance(measured, dict) else {}


def merge_gpu_fit(source_text: str, fitted: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the new `measured:` mapping, the keys kept from the old one): the GPU fit's keys
    replaced, every other key of the old section kept after them, in its order."""
    kept = {k: v for k, v in old_measured(source_text).items() if k not in GPU_FIT_KEYS}
    return {**fitted, **kept}, list(kept)


def merge_impl_fits(source_text: str, entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The new `measured:` mapping with `entries` (implementation name → its fitted forward
    figures) in those implementations' `impls` entries; every other key, implementation and
    key of an entry the forward fit does not write (its `backward`) kept, except an old
    `forward` schedule (analysis/impl_forward.py): the new figures were fitted with the fused
    forward on its roofline (impl_fit.py), and kept together they would time it by neither
    fit (refit the schedule with benchmarks/flex8_fit.py)."""
    measured = old_measured(source_text)
    impls = dict(measured.get("impls") or {})
    for name, entry in entries.items():
        kept = {k: v for k, v in dict(impls.get(name) or {}).items() if k != "forward"}
        impls[name] = {**kept, **entry}
    measured["impls"] = impls
    return measured


def write_measured_yaml(source_text: str, measured: dict[str, Any]) -> str:
    """source_text with `measured:` appended (replacing an old one); checked by loading it."""
    block = yaml.safe_dump({"measured": measured}, sort_keys=False, allow_unicode=True, width=100)
    text = (strip_measured(source_text) + "\n# Written by `iosim calibrate` (see measured.provenance);"
            " everything above is the datasheet model.\n" + block)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "check.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_hardware(path)  # raises ConfigError naming the key if the section is malformed
        except ConfigError as exc:  # named by its key: the temporary file is no help to a user
            raise IosimError(f"the fitted measured: section is not a valid one "
                             f"({str(exc).removeprefix(f'{path}: ')}): the measurements give "
                             f"figures no GPU has (a time or a size out of range); record them "
                             f"again with iosim calibrate") from None
    return text
