"""Where the YAML files that ship with iosim live: configs/<kind>/ (gpus, impls, models)."""

from __future__ import annotations

from pathlib import Path

from iosim.errors import IosimError


def shipped_dir(kind: str, what: str) -> Path:
    """configs/<kind>: inside the installed package (the wheel puts configs/ in iosim/), else at
    the source checkout's top; `what` names the files in the error when neither exists."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "configs" / kind, package.parent / "configs" / kind):
        if candidate.is_dir():
            return candidate
    raise IosimError(f"the shipped {what} are missing (looked in {package / 'configs' / kind}); "
                     "reinstall iosim")


__all__ = ["shipped_dir"]
