"""Where the YAML files that ship with iosim live: configs/<kind>/ (gpus, impls, models); and
whether a --gpu or --model value names the user's own YAML file instead."""

from __future__ import annotations

import os
from pathlib import Path

from iosim.errors import IosimError
from iosim.inputs.limits import clip, excerpt


def shipped_dir(kind: str, what: str) -> Path:
    """configs/<kind>: inside the installed package (the wheel puts configs/ in iosim/), else at
    the source checkout's top; `what` names the files in the error when neither exists."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "configs" / kind, package.parent / "configs" / kind):
        if candidate.is_dir():
            return candidate
    raise IosimError(f"the shipped {what} are missing (looked in {package / 'configs' / kind}); "
                     "reinstall iosim")



def shipped_yamls(kind: str, what: str) -> list[Path]:
    """The YAML files of configs/<kind> (shipped_dir), sorted by name."""
    return sorted(shipped_dir(kind, what).glob("*.yaml"))


def user_yaml(text: str, what: str, error: type[IosimError]) -> str | None:
    """`text` (stripped) when it is a path to the user's own YAML (it ends in .yaml or .yml, or
    holds a path separator) and that file exists; None when it is a name to look up among the
    shipped ones. A path that is no readable file: `error`, one line naming the `what` file."""
    if not (text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text):
        return None
    try:
        is_file = Path(text).is_file()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        reason = getattr(exc, "strerror", None) or str(exc)
        raise error(f"cannot use {what} file {excerpt(text)}: {reason}") from None
    if not is_file:
        folder = Path(text).is_dir()
        raise error(f"{clip(text, 200)} is a folder, not a {what} file; give the path of a "
                    f"YAML file" if folder else f"no such {what} file: {clip(text, 200)}")
    return text


__all__ = ["shipped_dir", "shipped_yamls", "user_yaml"]
