"""Report folders: `iosim report` writes plots, tables, summary.json, index.md and index.html."""

from __future__ import annotations

from pathlib import Path

from iosim.errors import IosimError


def ensure_writable_dir(path: Path, flag: str, *, must_be_empty: bool = False,
                        force: bool = False) -> Path:
    """Create `path` if needed and check that files can be written in it; one-line errors."""
    if path.exists() and not path.is_dir():
        raise IosimError(f"{flag} {path} is a file, not a folder; choose a folder")
    if must_be_empty and not force and path.is_dir() and any(path.iterdir()):
        raise IosimError(f"{flag} {path} is not empty; choose a new folder or add --force to "
                         f"write over it")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".iosim-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise IosimError(f"cannot write to {flag} {path}: {reason}; choose a folder you can "
                         f"write to") from None
    return path
