"""iosim's compact tables and label grids, and their text layout for a pipe or a terminal.

A `TextTable` (what `tables.compact_table` makes) and a `LabelGrid` (`label_grid`) hold their
cells as text. Drawn by rich (a terminal, or a command that prints other rich renderables),
each becomes the rich table it always was (`__rich__`). Written to a pipe or a file, where rich
prints no colours, `plain_lines(width)` lays them out here instead, to the same characters
rich's layout gives (rich 13–15: `tests/test_plain.py` holds the two equal on random tables),
without importing rich at all: rich's console and tables cost `iosim compare` ≈ 25 ms to
import and ≈ 20 ms to draw, a fifth of its start-up.

On a terminal (`styled=True`) the layout is the same, with what rich adds there: every line
padded to its table's or grid's width, a table's title in italics and its header cells in
bold (SGR 3 and 1, each cell's padding inside its style, as rich writes them; the tests hold
the bytes equal to rich's `force_terminal` output).

`plain_lines` answers only where it knows rich's answer: a table that fits the width, cells of
one line of characters that are one cell wide, no rich markup (`[`) or emoji code (`:name:`).
Anything else returns None, and the caller draws with rich.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

_WORD = re.compile(r"\s*\S+\s*")
"""rich's word: leading space, the word and the spaces after it (rich/_wrap.py)."""
_EMOJI = re.compile(r":\S*?:")
"""What rich's emoji replacement might read as a code (:smile:); a cell with one is left to rich."""
_LABEL_MIN = 9
"""The label column's least width (characters), as rich's `min_width`."""
_ITALIC, _BOLD, _RESET = "\x1b[3m", "\x1b[1m", "\x1b[0m"
"""The SGR sequences rich writes on a terminal for a table's title, its header and the end of
each."""


def cell_len(text: str) -> int | None:
    """Terminal cells of `text`, or None where rich's count might differ (wide, zero-width or
    control characters, tabs, markup brackets, emoji codes)."""
    if "[" in text or (":" in text and _EMOJI.search(text)):
        return None
    if not text.isprintable():
        return None
    if text.isascii():  # printable ASCII: one cell each
        return len(text)
    import unicodedata

    for ch in set(text):  # each distinct character once; printable ASCII is one cell wide
        if not ch.isascii() and (unicodedata.east_asian_width(ch) in ("W", "F")
                                 or unicodedata.combining(ch)
                                 or unicodedata.category(ch) in ("Mn", "Me", "Cf")):
            return None
    return len(text)


def wrap(text: str, width: int) -> list[str] | None:
    """`text` (one line) cut into lines of at most `width` cells where rich cuts it (rich's
    `divide_line`: a word that does not fit starts a new line); None if a word is longer than
    `width` (rich folds it) or a character's width is uncertain."""
    if cell_len(text) is None:
        return None
    breaks = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            return None
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return [text[a:b] for a, b in zip([0, *breaks], [*breaks, len(text)], strict=True)]


def paragraph(text: str, width: int) -> list[str] | None:
    """The lines rich prints for `Text(text)` at `width` columns (each line of `text` wrapped)."""
    lines: list[str] = []
    for line in text.split("\n"):
        wrapped = wrap(line, width) if line else [""]
        if wrapped is None:
            return None
        lines += wrapped
    return lines


class TextColumn:
    """A column of a TextTable: header, justification ("left" or "right"), and whether rich may
    wrap its cells (it never does in the plain layout, which needs every row to fit)."""

    __slots__ = ("cells", "header", "justify", "no_wrap")

    def __init__(self, header: str, justify: str) -> None:
        self.header = header
        self.justify = justify
        self.no_wrap = True
        self.cells: list[str] = []


class TextTable:
    """A compact table: title, columns one space apart, a rule under the header, rows in
    sections; no cell wrapped or cut (rich's SIMPLE_HEAD box, no padding)."""

    def __init__(self, title: str | None, columns: Sequence[tuple[str, str]]) -> None:
        self.title = title
        self.columns = [TextColumn(header, justify) for header, justify in columns]
        self.section_ends: set[int] = set()
        """Indexes of the rows that end a section (a blank line follows them)."""

    @property
    def row_count(self) -> int:
        """Rows added so far."""
        return len(self.columns[0].cells) if self.columns else 0

    def add_row(self, *cells: str, end_section: bool = False) -> None:
        """One row, a text per column; `end_section`: a blank line after it."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        for column, cell in zip(self.columns, cells, strict=True):
            column.cells.append(cell)
        if end_section:
            self.section_ends.add(self.row_count - 1)

    def add_section(self) -> None:
        """End the current section: a blank line after the last row."""
        self.section_ends.add(self.row_count - 1)

    def __rich__(self) -> Table:
        """The rich table these cells always were (tables.simple_table with no padding)."""
        from iosim.output.tables import simple_table

        table = simple_table(self.title, [(c.header, c.justify) for c in self.columns],
                             padding=0)
        for rich_column, column in zip(table.columns, self.columns, strict=True):
            rich_column.no_wrap = column.no_wrap
        for i, row in enumerate(zip(*(c.cells for c in self.columns), strict=True)):
            table.add_row(*row, end_section=i in self.section_ends)
        return table

    def _widths(self) -> list[int] | None:
        """Each column's width with no cell cut, or None where a cell's width is uncertain or a
        cell spans lines (rich's answer is not known then: the module doc)."""
        widths = []
        for column in self.columns:
            lengths = [cell_len(t) for t in (column.header, *column.cells)]
            if None in lengths or "\n" in column.header or any("\n" in t for t in column.cells):
                return None
            widths.append(max(n for n in lengths if n is not None))
        return widths

    def natural_width(self) -> int | None:
        """Columns the table needs with no cell cut: an edge each side, one space between."""
        widths = self._widths()
        return None if widths is None else sum(widths) + len(widths) + 1

    def plain_lines(self, width: int, *, styled: bool = False) -> list[str] | None:
        """The table as rich prints it to a pipe `width` columns wide (`styled`: to a terminal),
        or None where this layout does not know rich's (see the module doc)."""
        widths = self._widths()
        if widths is None:
            return None
        table_width = sum(widths) + len(widths) + 1  # an edge each side, one space between
        if not widths or min(widths) == 0 or table_width > width:
            return None
        lines: list[str] = []
        blank = " " * table_width if styled else ""
        if self.title:
            title = wrap(self.title, table_width)
            if title is None:
                return None
            lines += [f"{_ITALIC}{line.rstrip(' ').ljust(table_width)}{_RESET}" if styled
                      else line for line in title]
        lines += [blank, self._line([c.header for c in self.columns], widths, styled, _BOLD),
                  " " + "─" * (table_width - 2) + (" " if styled else "")]
        last = self.row_count - 1
        for i, row in enumerate(zip(*(c.cells for c in self.columns), strict=True)):
            lines.append(self._line(row, widths, styled))
            if i in self.section_ends and i != last:
                lines.append(blank)
        return [*lines, blank]

    def _line(self, cells: Sequence[str], widths: Sequence[int], styled: bool,
              style: str = "") -> str:
        # rich right-justifies a cell's text without its trailing spaces
        parts = [cell.rstrip().rjust(w) if column.justify == "right" else cell.ljust(w)
                 for cell, w, column in zip(cells, widths, self.columns, strict=True)]
        if not styled:
            return (" " + " ".join(parts)).rstrip(" ")
        if style:  # a terminal: each cell in its style (its padding inside), to the table's edge
            parts = [f"{style}{part}{_RESET}" for part in parts]
        return " " + " ".join(parts) + " "


class LabelGrid:
    """'label     value' lines whose values wrap under themselves (not under the label) when
    the width is short: the header of compare and sweep."""

    def __init__(self, rows: Sequence[tuple[str, str]]) -> None:
        self.rows = list(rows)

    def __rich__(self) -> Table:
        """The rich grid: a label column of at least 9 cells, never wrapped, and the values."""
        from rich.table import Table

        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, min_width=_LABEL_MIN)
        grid.add_column(overflow="fold")
        for label, value in self.rows:
            grid.add_row(label, value)
        return grid

    def plain_lines(self, width: int, *, styled: bool = False) -> list[str] | None:
        """The grid as rich prints it to a pipe `width` columns wide (`styled`: to a terminal,
        every line padded to the grid's width), or None (module doc)."""
        labels = [cell_len(label) for label, _ in self.rows]
        values = [cell_len(value) for _, value in self.rows]
        if None in labels or None in values or any("\n" in t for row in self.rows for t in row):
            return None
        label_width = max([_LABEL_MIN, *(n for n in labels if n is not None)]) + 1
        value_width = min(width - label_width, max([0, *(n for n in values if n is not None)]))
        if value_width < 1:
            return None
        lines: list[str] = []
        for label, value in self.rows:
            wrapped = wrap(value, value_width) if value else [""]
            if wrapped is None:
                return None
            lines += [(label if i == 0 else "").ljust(label_width)
                      + part.rstrip(" ").ljust(value_width) for i, part in enumerate(wrapped)]
        return lines if styled else [line.rstrip(" ") for line in lines]


def _within(line: str, width: int) -> str:
    """`line` without the spaces that run past `width` (rich's `Text.rstrip_end`)."""
    return line if len(line) <= width else line[:width] + line[width:].rstrip(" ")


def plain_text(parts: Sequence[Any], width: int, *, styled: bool = False) -> str | None:
    """What rich prints for `Group(*parts)` to a pipe `width` columns wide (`styled`: to a
    terminal), the parts being TextTables, LabelGrids and str (printed as rich prints a
    `Text`): one string with a newline after every line; None if any part is beyond the plain
    layout."""
    lines: list[str] = []
    for part in parts:
        if isinstance(part, str):
            got = paragraph(part, width)
            if styled and got is not None:  # a terminal keeps a break's spaces, to the width
                got = [_within(line, width) for line in got]
        else:
            layout = getattr(part, "plain_lines", None)  # a rich renderable has none
            got = None if layout is None else layout(width, styled=styled)
        if got is None:
            return None
        lines += got
    if styled:
        return "".join(line + "\n" for line in lines)
    return "".join(line.rstrip(" ") + "\n" for line in lines)
