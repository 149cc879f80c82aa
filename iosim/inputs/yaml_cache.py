"""The shipped YAMLs' parsed form, cached per user, so that a second `iosim compare` neither
parses YAML nor imports PyYAML (about a tenth of its start-up).

What is cached: the plain data `safe_yaml.read_yaml` returned for a file in one of the shipped
folders (configs/gpus, impls, models; shipped.py) — a user's own YAML is read afresh every time.
The loaders still check that data as they check a freshly parsed file.

When it is used: only while the file is the one that was parsed. An entry holds the file's
absolute path, size, inode, modification time and change time (st_ctime_ns: set by the system
to the time of any write, rename or replacement, and not settable by a user, so even a rewrite
of the same size with the old modification time put back is seen), iosim's version and the
stamp of the reader itself (safe_yaml.py's size and modification time); any difference, and the
file is parsed again and the entry rewritten. A file changed less than SETTLED_NS ago is parsed
but not cached (git's "racy" rule): the system's clock ticks in milliseconds, so a rewrite in
the same tick as the change before it could otherwise leave every time in the key as it was.

Where: `$IOSIM_CACHE_DIR`, else `$XDG_CACHE_HOME/iosim`, else `~/.cache/iosim`;
`IOSIM_CACHE_DIR=` (empty) turns the cache off. An entry is written to a temporary file and
renamed into place, so readers never see half of one; a cache that cannot be read or written
(missing, corrupt, read-only) is passed by: the file is parsed as if there were none.
Format: `marshal` (no import, no code run) of (FORMAT, key, data); a document marshal cannot
hold (a date, say) is not cached.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import time
from collections.abc import Callable
from typing import Any

from iosim._version import __version__

FORMAT = 1
"""Bumped when an entry's layout changes."""

CACHE_DIR_ENV = "IOSIM_CACHE_DIR"

SETTLED_NS = 1_000_000_000
"""A file whose last change is younger than this (1 s) is not cached yet."""


def cache_dir() -> str | None:
    """The folder of the entries, or None when the cache is off (IOSIM_CACHE_DIR empty, or no
    folder to put it in)."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen is not None:
        return chosen or None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):  # the XDG spec: a relative path is invalid and
        # ignored (XDG_CACHE_HOME=relative/x made relative/x/iosim in the working folder)
        home = os.path.expanduser("~")
        if not os.path.isabs(home):  # no home folder known ("~"), or HOME=relative: no
            return None  # cache, rather than one made in the working folder
        base = os.path.join(home, ".cache")
    return os.path.join(base, "iosim")


def _file_key(path: str) -> tuple[int, ...]:
    """What changes when the file does: size, inode, modification and change times."""
    st = os.stat(path)
    return st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns


def _reader_key(path: str) -> tuple[int, ...]:
    """What changes when the reader's code does (an install or an edit): size, modification time."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _entry_name(path: str) -> str:
    """One entry per source file: its name after a checksum of its folder (so that two
    checkouts' files of one name do not take turns in one entry). A tuple of ints hashes alike
    in every process (PYTHONHASHSEED randomises str and bytes only), without importing zlib."""
    folder = tuple(os.path.dirname(path).encode("utf-8", "surrogateescape"))
    return f"{hash(folder) & (2**64 - 1):016x}-{os.path.basename(path)}.marshal"


def cached_read(path: str, parse: Callable[[str], Any], reader_file: str) -> Any:
    """`parse(path)`, or the data it returned for this very file before (see the module doc);
    `reader_file` is the module whose rules `parse` applies (its stamp is part of the key)."""
    folder = cache_dir()
    if folder is None:
        return parse(path)
    try:
        stamp = _file_key(path)
        key = (os.path.abspath(path), stamp, __version__, _reader_key(reader_file))
    except OSError:  # no such file: parse says so, in its words
        return parse(path)
    entry = os.path.join(folder, _entry_name(key[0]))
    try:
        with open(entry, "rb") as file:
            stored = marshal.loads(file.read())
        if isinstance(stored, tuple) and len(stored) == 3 and stored[:2] == (FORMAT, key):
            return stored[2]
    except (OSError, EOFError, ValueError, TypeError):
        pass  # no entry yet, or one that cannot be read: parse the file
    data = parse(path)
    changed_ns = stamp[3]
    if time.time_ns() - changed_ns >= SETTLED_NS:
        _store(folder, entry, (FORMAT, key, data))
    return data


def _store(folder: str, entry: str, value: tuple[Any, ...]) -> None:
    try:
        blob = marshal.dumps(value)
    except ValueError:  # a value marshal cannot hold
        return
    temporary = f"{entry}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(blob)
        os.replace(temporary, entry)
    except OSError:  # a read-only or full cache: the next run parses the file again
        with contextlib.suppress(OSError):
            os.unlink(temporary)


__all__ = ["CACHE_DIR_ENV", "FORMAT", "cache_dir", "cached_read"]
