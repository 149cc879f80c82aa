"""A user's value quoted in an error message: cut short (`excerpt`, `clip`) so that a message
never embeds a whole large value, whatever the flag, file or API call it came from."""

from __future__ import annotations

from typing import Final

EXCERPT_CHARS: Final = 60
"""Longest excerpt of a user's value quoted in an error message."""


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """repr(value), cut to `limit` characters (with '…') so a message never embeds a whole
    large value (a 2 GB alias expansion, a 300-character name)."""
    text = _short_repr(value, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip(text: object, limit: int = EXCERPT_CHARS) -> str:
    """str(text) cut to `limit` characters (with '…'): a key or name quoted in a message."""
    shown = str(text) if not isinstance(text, str) or len(text) <= 4 * limit else text[: 4 * limit]
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _short_repr(value: object, limit: int) -> str:
    if isinstance(value, (str, bytes)) and len(value) > 4 * limit:
        value = value[: 4 * limit]
    elif isinstance(value, (list, tuple, dict, set)) and len(value) > limit:
        return f"<{type(value).__name__} of {len(value):,} items>"
    try:
        return repr(value)
    except (RecursionError, ValueError):  # a self-referencing YAML structure, a huge int
        return f"<{type(value).__name__}>"
