"""Where the YAML files that ship with iosim live: configs/<kind>/ (gpus, impls, models); and
whether a --gpu or --model value names the user's own YAML file instead.

The lookups that `iosim compare` makes work on path strings (os.path): pathlib, with the
urllib.parse and ipaddress it imports, costs a few milliseconds of start-up, so it is imported
only where a caller asks for `Path`s (`shipped_dir`, `shipped_yamls`) or gives its own file.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING

from iosim.errors import IosimError
from iosim.inputs.excerpts import clip, excerpt

if TYPE_CHECKING:
    from pathlib import Path


SHIPPED_KINDS = ("gpus", "impls", "models")
"""The folders of configs/ that ship with iosim."""


@cache  # an install does not move while it runs, and realpath stats every folder on the way
def _package() -> str:
    """The iosim package's folder (its links resolved)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


@cache
def _folder(kind: str) -> str | None:
    package = _package()
    for candidate in (os.path.join(package, "configs", kind),
                      os.path.join(os.path.dirname(package), "configs", kind)):
        if os.path.isdir(candidate):
            return candidate
    return None


def shipped_folder(kind: str, what: str) -> str:
    """configs/<kind> as a path string: inside the installed package (the wheel puts configs/ in
    iosim/), else at the source checkout's top; `what` names the files in the error when neither
    exists."""
    folder = _folder(kind)
    if folder is None:
        raise IosimError(f"the shipped {what} are missing (looked in "
                         f"{os.path.join(_package(), 'configs', kind)}); reinstall iosim")
    return folder


def is_shipped_file(path: str) -> bool:
    """Whether `path` is a file of one of the shipped folders, as their lookups spell it."""
    folder = os.path.dirname(path)
    return any(folder == _folder(kind) for kind in SHIPPED_KINDS)


def shipped_dir(kind: str, what: str) -> Path:
    """`shipped_folder` as a Path."""
    from pathlib import Path

    return Path(shipped_folder(kind, what))


def shipped_yaml_files(kind: str, what: str) -> list[str]:
    """The YAML files of configs/<kind> (shipped_folder) as path strings, sorted by name."""
    folder = shipped_folder(kind, what)
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(".yaml"))


def shipped_yamls(kind: str, what: str) -> list[Path]:
    """`shipped_yaml_files` as Paths."""
    from pathlib import Path

    return [Path(p) for p in shipped_yaml_files(kind, what)]


def yaml_stem(path: str) -> str:
    """A shipped YAML's name without its folder and `.yaml` (pathlib's `stem`)."""
    return os.path.basename(path)[:-len(".yaml")]


def path_text(path: str | os.PathLike[str]) -> str:
    """`path` as pathlib writes it (`str(Path(path))`: no `.` parts, no doubled or trailing
    separators), importing pathlib only where the text is not already in that form."""
    text = os.fspath(path)
    if text and os.path.normpath(text) == text:  # normpath also folds `..`: pathlib keeps those
        return text
    from pathlib import Path

    return str(Path(text))


def user_yaml(text: str, what: str, error: type[IosimError]) -> str | None:
    """`text` (stripped) when it is a path to the user's own YAML (it ends in .yaml or .yml, or
    holds a path separator) and that file exists; None when it is a name to look up among the
    shipped ones. A path that is no readable file: `error`, one line naming the `what` file."""
    if not (text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text):
        return None
    from pathlib import Path

    try:
        is_file = Path(text).is_file()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        reason = getattr(exc, "strerror", None) or str(exc)
        raise error(f"cannot use {what} file {excerpt(text)}: {reason}") from None
    if not is_file:
        raise error(not_a_file(text, f"a {what} file") or f"no such {what} file: {clip(text, 200)}")
    return text


def not_a_file(text: str, what: str) -> str | None:
    """Why the path `text`, which is no regular file, is not `what` ("a model file"): a folder
    or a FIFO, device or socket there; None when nothing is there."""
    from pathlib import Path

    path = Path(text)
    if path.is_dir():
        return f"{clip(text, 200)} is a folder, not {what}; give the path of a YAML file"
    if path.exists():
        return (f"{clip(text, 200)} is not a regular file (a FIFO, device or socket), not "
                f"{what}; give the path of a YAML file")
    return None


__all__ = ["SHIPPED_KINDS", "is_shipped_file", "not_a_file", "path_text", "shipped_dir", "shipped_folder",
           "shipped_yaml_files", "shipped_yamls", "user_yaml", "yaml_stem"]
