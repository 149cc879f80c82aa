"""MkDocs hooks (mkdocs.yml `hooks:`): the docs link the example reports as `../reports/...`, which
is where they are in the repository (so the links work on GitHub too); the site reaches the same
files through the `docs/reports` link to `../reports`, so a page's `../reports/` becomes `reports/`."""

from __future__ import annotations

from typing import Any


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace("](../reports/", "](reports/")
