"""Output folders: made when needed, checked writable first, refused when not empty (no --force)."""

from __future__ import annotations

from pathlib import Path

from iosim.errors import IosimError
from iosim.inputs.output_paths import check_folder


def ensure_writable_dir(path: Path, flag: str, *, must_be_empty: bool = False,
                        force: bool = False, create: bool = True) -> Path:
    """Create `path` if needed and check that files can be written in it; one-line errors.
    With create=False only check (nothing is made): a refusal leaves the disk as it was."""
    check_folder(path, flag.lstrip("-").replace("-", "_"))  # a parameter name, as limits names it
    if must_be_empty and not force and path.is_dir() and any(path.iterdir()):
        raise IosimError(f"{flag} {path} is not empty; choose a new folder or add "
                         f"--force to write over it")
    if not create:
        return path
    try:
        if not path.is_dir():  # a folder already there was checked by check_folder (os.access);
            path.mkdir(parents=True)  # a probe file in it would change its mtime for nothing
            probe = path / ".iosim-write-test"
            probe.write_bytes(b"")
            probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise IosimError(f"cannot write to {flag} {path}: {reason}; choose a folder you can "
                         f"write to") from None
    return path
