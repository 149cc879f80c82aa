"""The GPUs that ship with iosim (configs/gpus/*.yaml), and the --gpu lookup: name, alias or path."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from iosim.errors import UnknownGpuError
from iosim.inputs.api_values import check_path_text
from iosim.inputs.excerpts import excerpt
from iosim.inputs.hardware import Hardware
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.shipped import (
    shipped_dir,
    shipped_yaml_files,
    shipped_yamls,
    user_yaml,
    yaml_stem,
)
from iosim.record import Record

if TYPE_CHECKING:
    from pathlib import Path


_GPUS = ("gpus", "GPU configs")
"""The shipped catalogue's folder and what its files are called in an error (shipped.py)."""


def config_dir() -> Path:
    """configs/gpus, where the shipped GPU YAMLs are."""
    return shipped_dir(*_GPUS)


def shipped_config_paths() -> list[Path]:
    """The GPU YAML files that ship with iosim, sorted by name."""
    return shipped_yamls(*_GPUS)


@cache
def _load_shipped(path: str) -> Hardware:
    return load_hardware(path)


def list_hardware() -> list[Hardware]:
    """Every shipped GPU model, sorted by name."""
    return [_load_shipped(p) for p in shipped_yaml_files(*_GPUS)]


class ResolvedHardware(Record):
    """A --gpu value resolved: the Hardware, what was asked for and how it matched."""

    hardware: Hardware
    requested: str
    how: str
    """How `requested` was matched: 'name', 'alias' or 'file'."""

    @property
    def note(self) -> str | None:
        """How the requested name resolved (an alias, a path), or None when it was a name."""
        if self.how == "alias":
            return f"'{self.requested}' is an alias of {self.hardware.name}"
        return None


def resolve_hardware(spec: str) -> ResolvedHardware:
    """A --gpu value: a shipped name, an alias, or a path to the user's own YAML."""
    text = check_path_text("hardware", spec, error=UnknownGpuError).strip()
    own = user_yaml(text, "hardware", UnknownGpuError)
    if own is not None:
        return ResolvedHardware(load_hardware(own), spec, "file")
    key = text.lower()
    paths = {yaml_stem(p): p for p in shipped_yaml_files(*_GPUS)}
    if key in paths:
        return ResolvedHardware(_load_shipped(paths[key]), spec, "name")
    # Files are read in name order until one lists the alias, not all of them: aliases are
    # unique across the shipped files (tests/test_hardware.py), so the first match is the only
    # one, and `iosim compare --gpu a100` reads two YAMLs instead of every GPU's (start-up time).
    for path in paths.values():
        hw = _load_shipped(path)
        if key in (a.lower() for a in hw.aliases):
            return ResolvedHardware(hw, spec, "alias")
    from iosim.inputs.suggest import did_you_mean

    known = ", ".join(sorted(paths))
    hint = did_you_mean(text, [*sorted(paths), *(a for hw in list_hardware() for a in hw.aliases)])
    raise UnknownGpuError(
        f"unknown GPU {excerpt(spec)}.{hint} Known: {known} (or pass a path to your own YAML; "
        "`iosim gpus` lists aliases)"
    )
