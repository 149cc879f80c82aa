"""The one table style of iosim's terminal output, and tables as Markdown.

Every command's tables are in one style (`simple_table`, a rich `Table`; `compact_table`, the
same drawn without padding, whose cells plain.py can also lay out without rich); Markdown and
HTML outputs read the same tables back through `table_cells`, so a table is laid out once and
every format shows the same cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from iosim.output.plain import TextTable

if TYPE_CHECKING:
    from rich.table import Table


def simple_table(title: str | None, columns: Sequence[tuple[str, str]], **options: Any) -> Table:
    """A table with a rule under the header, the title on the left, no outer padding; one
    column per (header, justify) pair ("left" or "right"). `options` go to rich's Table."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
                  **options)
    for header, justify in columns:
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    return table


def compact_table(title: str | None, columns: Sequence[tuple[str, str]]) -> TextTable:
    """simple_table one space apart (the box's column divider), no cell ever wrapped or cut:
    what lets the wide tables (compare, sweep, verify's counts) fit 80 columns. Its cells are
    text (plain.TextTable): rich draws it as `simple_table(..., padding=0)`."""
    return TextTable(title, columns)


def table_cells(table: Table | TextTable, *, one_line_headers: bool = False
                ) -> tuple[list[str], list[list[str]], list[bool]]:
    """(headers, rows of cell texts, whether each column is right-justified) of a table:
    what its Markdown or HTML form shows."""
    headers = [str(col.header) for col in table.columns]
    if one_line_headers:
        headers = [h.replace("\n", " ") for h in headers]
    cells = [[str(x) for x in col.cells] for col in table.columns]
    rows = [list(r) for r in zip(*cells, strict=True)]
    return headers, rows, [col.justify == "right" for col in table.columns]


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
                   right: Sequence[bool] | None = None) -> str:
    """A GitHub Markdown table: header row, alignment row (---: for right), one row each."""
    right = right or [False] * len(headers)
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def rich_markdown(table: Table | TextTable) -> str:
    """A rich table as a GitHub Markdown table (headers on one line)."""
    return markdown_table(*table_cells(table, one_line_headers=True))
