"""Where a command may write: the checks of an output path, made before anything is written.

A folder must exist or be makeable and be writable; a file's name must be one the file system
takes (no control character, at most MAX_FILE_NAME_BYTES); a folder, FIFO or device in a file's
place is refused even with --force, any other existing file (a link too, even to nothing)
without it; and no two outputs, or an output and an input, may be one file. The writing itself
is output/files.py's (whole files, renamed into place).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from iosim.errors import IosimError, arg
from iosim.inputs.excerpts import clip
from iosim.inputs.limits import MAX_FILE_NAME_BYTES


def check_folder(path: Path, name: str) -> None:
    """A folder that exists, or can be made, and can be written in; nothing is created here."""
    _check_path_text(path, name)
    for part in path.parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_FILE_NAME_BYTES:
            raise IosimError(f"{arg(name)}: the name {clip(part)} is longer than the "
                             f"{MAX_FILE_NAME_BYTES} bytes file systems allow; choose a shorter one")
    if path.exists() and not path.is_dir():
        raise IosimError(f"{arg(name)} {path} is a file, not a folder; choose a folder")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise IosimError(f"cannot write to {arg(name)} {path}: Not a directory; choose a folder you "
                         f"can write to")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise IosimError(f"cannot write to {arg(name)} {path}: permission denied on "
                         f"{existing}; choose a folder you can write to")


def _check_path_text(path: Path, name: str) -> None:
    """A path a file or folder may be made at: no NUL (no file system takes one) and no other
    control character (a newline or escape in a name is a paste gone wrong, and every line that
    names the file, `wrote ...` included, would print broken)."""
    control = next((c for c in str(path) if ord(c) < 32 or ord(c) == 127), None)
    if control == "\x00":
        raise IosimError(f"{arg(name)} contains a NUL character; give a plain path")
    if control is not None:
        raise IosimError(f"{arg(name)} contains a control character ({control!r}); give a "
                         f"plain path")


def check_output_files(paths: Sequence[Path], name: str, *, overwrite: bool) -> None:
    """Every target file can be written: a plain name that the file system takes, not a folder,
    not an existing file unless `overwrite` (--force). Checked before the first file is written."""
    for path in paths:
        _check_path_text(path, name)
        if len(path.name.encode("utf-8", "surrogateescape")) > MAX_FILE_NAME_BYTES:
            raise IosimError(f"{arg(name)}: the file name {clip(path.name)} is longer than the "
                             f"{MAX_FILE_NAME_BYTES} bytes file systems allow; choose a shorter "
                             f"name")
        if path.is_dir():
            raise IosimError(f"{path} is a folder, not a file; remove it or choose "
                             f"another {arg(name)}")
        if path.exists() and not path.is_file():  # --force replaces files, never a device
            raise IosimError(f"{path} is not a regular file (a FIFO, device or socket); "
                             f"choose another {arg(name)}")
        if os.path.lexists(path) and not overwrite:  # a link, even to nothing, is the user's
            raise IosimError(f"{path} exists; pass --force to overwrite it, or "
                             f"choose another folder or name")
        check_folder(path.parent, "out")


def check_distinct_files(outputs: Sequence[tuple[str, Path]],
                         inputs: Sequence[tuple[str, Path]] = ()) -> None:
    """No two outputs are one file, and no output is a file the command reads: refused even
    with --force, before anything is read or written (`--out rec.json --from rec.json` would
    replace the measurements with what was fitted from them). Each entry is (parameter, path);
    one file is one real path (links resolved) or, for files that exist, one inode."""
    def same(a: Path, b: Path) -> bool:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        try:
            return os.path.samefile(a, b)
        except (OSError, ValueError):  # either is missing: not one file
            return False

    for at, (name, path) in enumerate(outputs):
        for other, other_path in outputs[at + 1:]:
            if same(path, other_path):
                raise IosimError(f"{arg(name)} and {arg(other)} both name {clip(path, 200)}; "
                                 f"give each its own file", param=name)
        for source, source_path in inputs:
            if same(path, source_path):
                raise IosimError(f"{arg(name)} {clip(path, 200)} is the file {arg(source)} "
                                 f"reads; writing it would replace what is read: choose "
                                 f"another {arg(name)}", param=name)
