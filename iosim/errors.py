"""Errors the core raises. The CLI turns each into one line and exit status 2."""

from __future__ import annotations


class IosimError(Exception):
    """Bad input or an impossible request; the message says what is wrong and how to fix it."""


class ConfigError(IosimError):
    """A hardware YAML that is malformed, has unknown or missing keys, or wrong values."""

    def __init__(self, path: str, key: str | None, problem: str) -> None:
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.key = key


class UnknownGpuError(IosimError):
    """A --gpu value that is neither a known name, an alias nor a YAML file."""


class WorkloadError(IosimError):
    """A workload that cannot exist (non-positive sizes, kv-heads not dividing heads, ...)."""


class TilingError(IosimError):
    """Block sizes that do not fit in the SRAM, or an SRAM too small for the head dimension."""
