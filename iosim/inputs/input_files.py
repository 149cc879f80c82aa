"""Reading a user's file (a GPU, model or implementation YAML; a measurement record): bounded,
UTF-8, and never a wait.

`open()` on a FIFO blocks until a writer comes, and a device such as /dev/zero never ends: the
file is opened without blocking and read only if it is a regular file, at most `limit` + 1
bytes (so a larger one is known to be larger without reading it all). safe_yaml.py and
calibrate/records.py each word the refusal for their kind of file.
"""

from __future__ import annotations

import os
import stat


class FileTextError(Exception):
    """Why a file's text cannot be read: `problem` is a phrase ("not UTF-8 text (...)"), and
    `too_large` says the file is larger than the limit."""

    def __init__(self, problem: str, *, too_large: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.too_large = too_large


def read_text_capped(path: str | os.PathLike[str], limit: int) -> str:
    """The UTF-8 text of the regular file at `path`, of at most `limit` bytes; else
    FileTextError (cannot be opened or read, not a regular file, larger, not UTF-8)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise FileTextError(f"cannot read file ({_reason(exc)})") from None
    try:  # checked before fdopen: it refuses a folder with an IsADirectoryError of its own
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise FileTextError("is a folder, not a file; give the path of a file")
        if not stat.S_ISREG(mode):
            raise FileTextError("cannot read file (not a regular file: a FIFO, device or "
                                "socket); give the path of a file")
    except BaseException:
        os.close(descriptor)
        raise
    with os.fdopen(descriptor, "rb") as stream:
        try:
            data = stream.read(limit + 1)
        except OSError as exc:
            raise FileTextError(f"cannot read file ({_reason(exc)})") from None
    if len(data) > limit:
        raise FileTextError(f"larger than {limit:,} bytes", too_large=True)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileTextError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                            f"{exc.start:,}); save the file as UTF-8") from None


def _reason(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or type(exc).__name__


__all__ = ["FileTextError", "read_text_capped"]
