"""output/plain.py against rich: random compact tables, label grids and paragraphs, laid out by
plain.py and printed by rich to a pipe (the console `make_console` gives one), must be the same
characters wherever plain.py answers; and where it cannot know rich's layout it must say so
(None), never guess."""

from __future__ import annotations

import io

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console, Group
from rich.text import Text

from iosim.cli import cli
from iosim.output.console import _RstripWriter
from iosim.output.plain import LabelGrid, TextTable, cell_len, paragraph, plain_text, wrap
from iosim.output.tables import compact_table

WORDS = st.text(alphabet="abcXYZ019 .,:;()/=+-×÷µ·—≤≈²ᵀ⌈⌉'", min_size=0, max_size=14)
ODD = st.sampled_from(["[bold]x[/bold]", "中文", "e\u0301", "a\tb", ":smile:", "x\u200by"])
CELLS = st.one_of(WORDS, WORDS, WORDS, ODD)


def rich_prints(parts: list[object], width: int) -> str:
    """What the pipe console of output/console.py writes for `parts` (str as rich Text)."""
    out = io.StringIO()
    writer = _RstripWriter(out)
    console = Console(file=writer, width=width, highlight=False)  # type: ignore[arg-type]
    console.print(Group(*(Text(p) if isinstance(p, str) else p for p in parts)))
    writer.flush()
    return out.getvalue()


@st.composite
def tables(draw: st.DrawFn) -> TextTable:
    columns = draw(st.integers(1, 6))
    table = compact_table(draw(st.one_of(st.none(), WORDS.filter(bool))),
                          [(draw(WORDS.filter(str.strip)), draw(st.sampled_from(["left", "right"])))
                           for _ in range(columns)])
    for _ in range(draw(st.integers(0, 6))):
        table.add_row(*(draw(CELLS) for _ in range(columns)), end_section=draw(st.booleans()))
        if draw(st.integers(0, 5)) == 0:
            table.add_section()
    return table


@given(tables(), st.integers(20, 120))
def test_a_compact_table_is_laid_out_as_rich_lays_it_out(table: TextTable, width: int) -> None:
    plain = plain_text([table], width)
    if plain is not None:
        assert plain == rich_prints([table], width)


@given(st.lists(st.tuples(st.sampled_from(["GPU", "workload", "blocks", "", "occupancy", "a"]),
                          st.lists(WORDS, max_size=12).map(" ".join)), min_size=1, max_size=6),
       st.integers(20, 120))
def test_a_label_grid_wraps_its_values_as_rich_does(rows: list[tuple[str, str]], width: int) -> None:
    grid = LabelGrid(rows)
    plain = plain_text([grid], width)
    if plain is not None:
        assert plain == rich_prints([grid], width)


@given(st.lists(st.lists(WORDS, max_size=25).map(" ".join), min_size=1, max_size=4).map("\n".join),
       st.integers(20, 120))
def test_a_paragraph_wraps_as_rich_text_wraps(text: str, width: int) -> None:
    lines = paragraph(text, width)
    if lines is not None:
        assert plain_text([text], width) == rich_prints([text], width)


def test_what_plain_cannot_know_it_leaves_to_rich() -> None:
    assert cell_len("[bold]x[/bold]") is None and cell_len("中") is None
    assert cell_len("e\u0301") is None and cell_len("a\tb") is None
    assert cell_len("flash2: B_r × B_c = 128 × 128") == 29
    assert wrap("a" * 30, 20) is None  # rich would fold the word
    table = compact_table("t", [("a", "left")])
    table.add_row("x" * 50)
    assert table.plain_lines(40) is None  # wider than the width: rich would cut it


def test_compare_on_a_pipe_loads_no_rich() -> None:
    """The point of plain.py: `iosim compare`'s default output to a pipe needs no rich module."""
    import subprocess
    import sys

    code = ("import sys; from click.testing import CliRunner; from iosim.cli import cli; "
            "r = CliRunner().invoke(cli, ['compare', '--gpu', 'a100', '--n', '4096']); "
            "assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("args", [
    ("--n", "4096", "--gpu", "a100"), ("--n", "1024", "--causal", "--gpu", "h100", "--wide"),
    ("--n", "1", "--n-kv", "8192", "--d", "128", "--heads", "32", "--kv-heads", "8",
     "--gpu", "h200"),
    ("--n", "2048", "--d", "128", "--heads", "16", "--pass", "fwdbwd", "--gpu", "a100"),
    ("--n", "4096", "--window", "1024", "--causal", "--gpu", "l4")])
@pytest.mark.parametrize("width", [80, 110])
def test_compare_plain_output_is_rich_output(args: tuple[str, ...], width: int) -> None:
    """The same command printed through plain.py and (TTY_COMPATIBLE=0: rich sees no terminal,
    plain.py steps aside) through rich: the same characters."""
    runner = CliRunner()
    plain = runner.invoke(cli, ["compare", *args], env={"COLUMNS": str(width)})
    drawn = runner.invoke(cli, ["compare", *args],
                          env={"COLUMNS": str(width), "TTY_COMPATIBLE": "0"})
    assert plain.exit_code == drawn.exit_code == 0, plain.output + drawn.output
    assert plain.output == drawn.output
