"""Output files written whole or not at all.

Every file a command writes (figures, report pages and tables, calibrated YAMLs, measurement
records) is written into a temporary file beside its target and renamed over it once complete
(`os.replace`, atomic on one file system). So a full disk or an interrupted run never leaves
half a file where the user's was, and a link in the target's place is replaced, never written
through (which would change a file the user did not name). Whether the target may be replaced
at all (--force, a folder or a FIFO in its place) is checked before, by
inputs/limits.py:check_output_files.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from iosim.errors import IosimError


def _default_mode() -> int:
    """The mode a file made by open() gets: 0o666 less the umask (mkstemp makes 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path: Path, write: Callable[[Path], object]) -> Path:
    """`write(temporary)` fills a temporary file in `path`'s folder, which then replaces `path`.

    On any failure the temporary file is removed and `path` is as it was; an OSError becomes
    one IosimError naming `path`."""
    path = Path(path)
    temporary: Path | None = None
    try:
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:200]}.",
                                        suffix=".part")
        os.close(handle)
        temporary = Path(name)
        write(temporary)
        os.chmod(temporary, _default_mode())
        os.replace(temporary, path)
    except OSError as exc:
        raise IosimError(f"cannot write {path}: {exc.strerror or exc}; nothing was written "
                         f"there (choose a disk with room, or a folder you can write to)"
                         ) from None
    finally:
        if temporary is not None:  # gone once renamed into place
            with contextlib.suppress(OSError):
                temporary.unlink()
    return path


def write_text_atomically(path: Path, text: str) -> Path:
    """`text` (UTF-8) as the whole of `path` (write_atomically)."""
    return write_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


__all__ = ["write_atomically", "write_text_atomically"]
