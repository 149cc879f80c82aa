"""docs/recipe-model.md (issue 13 item 14): five commands from a model's config, each output
block the real output of its `<!-- run: iosim ... -->` marker (as tools/readme_sync.py keeps the
README's)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import readme_sync  # noqa: E402

RECIPE = ROOT / "docs" / "recipe-model.md"


def test_recipe_has_five_commands_and_their_real_outputs() -> None:
    text = RECIPE.read_text(encoding="utf-8")
    lines = text.split("\n")
    marked = [b for b in readme_sync.blocks(lines) if b.marker is not None]
    assert len(marked) == 5
    assert all(b.marker is not None and "iosim " in b.marker.group(0) for b in marked)
    # that each block is its command's real output is test_docs.test_docs_outputs_are_current's
    # check (it syncs every page, this one included): not run twice in the README's test command
    assert RECIPE in readme_sync.markdown_files([ROOT / "docs"])
