"""JSON as strict parsers (and jq) read it: never NaN or Infinity, which json.dumps allows."""

from __future__ import annotations

import json
from typing import Any

from iosim.errors import IosimError


def dumps(value: Any, **options: Any) -> str:
    """json.dumps with allow_nan=False. The input boundary (iosim/inputs/limits.py) keeps every
    figure finite and every count positive, so a non-finite number here is a bug in iosim: say
    so in one line rather than print JSON that strict parsers refuse."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        raise IosimError(f"a non-finite number reached the JSON output ({exc}); this is a bug "
                         f"in iosim, please report the command") from None
