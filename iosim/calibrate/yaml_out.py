"""Write a hardware YAML with a `measured:` section: the source file's text, spec figures and
comments untouched, with any previous measured section replaced by the new one."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from iosim.inputs.hardware_yaml import load_hardware

_TOP_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*:")


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


def write_measured_yaml(source_text: str, measured: dict[str, Any]) -> str:
    """source_text with `measured:` appended (replacing an old one); checked by loading it."""
    block = yaml.safe_dump({"measured": measured}, sort_keys=False, allow_unicode=True, width=100)
    text = (strip_measured(source_text) + "\n# Written by `iosim calibrate` (see measured.provenance);"
            " everything above is the datasheet model.\n" + block)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "check.yaml"
        path.write_text(text, encoding="utf-8")
        load_hardware(path)  # raises ConfigError naming the key if the section is malformed
    return text
