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
    blocks = list(readme_sync.BLOCK.finditer(text))
    assert len(blocks) == 5
    for block in blocks:
        command = block.group("command")
        if " report " in f" {command} ":
            assert block.group("output").startswith("wrote ")  # writes files: not rerun here
            continue
        assert block.group("output") == readme_sync.run(command), command
