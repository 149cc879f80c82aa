"""The type of every path flag (--out, --plot, --record, --from, --report): click's Path, less
the empty path, which click and pathlib both take as the current folder. `--out "$DIR"` with
DIR unset wrote `iosim roofline`'s figures and `iosim sweep --plot`'s plots into the folder the
command ran in, and read `--record ""` as that folder."""

from __future__ import annotations

from typing import Any

import click


class PathType(click.Path):
    """click.Path that refuses '' (and a path of spaces) with one line naming the flag."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> Any:
        """click.Path's conversion, after refusing an empty path."""
        if isinstance(value, str) and not value.strip():
            wanted = "the path of a file" if not self.dir_okay else "a folder (`.` for this one)"
            self.fail(f"the path is empty; give {wanted}", param, ctx)
        return super().convert(value, param, ctx)
