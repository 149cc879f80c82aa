"""A tiny document model for reports, rendered twice (Markdown and HTML) so the two never drift apart."""

from __future__ import annotations

import html
from collections.abc import Sequence

from iosim.record import Record


class Heading(Record):
    """A heading of `level` (1 for the title)."""

    level: int
    text: str


class Para(Record):
    """A paragraph; `code` spans and **bold** are kept in both renderings."""

    text: str


class Code(Record):
    """A preformatted block (a command and its output)."""

    text: str


class Image(Record):
    """A figure: its PNG shown at width_px × height_px (pixels), linked to its SVG."""

    png: str
    svg: str
    alt: str
    width_px: int
    height_px: int


class TableBlock(Record):
    """A table of text cells; `right` says which columns are right-justified."""

    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    right: Sequence[bool]
    caption: str = ""


class Links(Record):
    """A line of links to the report's files."""

    items: Sequence[tuple[str, str]]
    """(text, relative path)."""


Block = Heading | Para | Code | Image | TableBlock | Links


def to_markdown(blocks: Sequence[Block]) -> str:
    """The blocks as GitHub Markdown (index.md), one blank line between blocks."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Code):
            out.append("```\n" + b.text + "\n```")
        elif isinstance(b, Image):
            out.append(f"[![{b.alt}]({b.png})]({b.svg})")
        elif isinstance(b, TableBlock):
            lines = ([f"*{b.caption}*", ""] if b.caption else []) + [
                "| " + " | ".join(b.headers) + " |",
                "|" + "|".join("---:" if r else "---" for r in b.right) + "|",
                *("| " + " | ".join(row) + " |" for row in b.rows)]
            out.append("\n".join(lines))
        else:
            out.append(" · ".join(f"[{text}]({path})" for text, path in b.items))
        out.append("")
    return "\n".join(out)


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e4e4e4; }
th { text-align: left; background: #f6f6f6; } td.r, th.r { text-align: right; }
caption { text-align: left; font-style: italic; padding-bottom: 0.3em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
"""


def to_html(blocks: Sequence[Block], title: str) -> str:
    """The blocks as one self-contained HTML page (index.html) titled `title`, styles inline."""
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{e(title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>"]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{e(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_inline(b.text)}</p>")
        elif isinstance(b, Code):
            out.append(f"<pre><code>{e(b.text)}</code></pre>")
        elif isinstance(b, Image):
            out.append(f'<p><a href="{e(b.svg)}"><img src="{e(b.png)}" alt="{e(b.alt)}" '
                       f'width="{b.width_px}" height="{b.height_px}"></a></p>')
        elif isinstance(b, TableBlock):
            cells = ["<table>"]
            if b.caption:
                cells.append(f"<caption>{e(b.caption)}</caption>")
            cells.append("<tr>" + "".join(
                f'<th{" class=r" if r else ""}>{e(h)}</th>'
                for h, r in zip(b.headers, b.right, strict=True)) + "</tr>")
            for row in b.rows:
                cells.append("<tr>" + "".join(
                    f'<td{" class=r" if r else ""}>{e(c)}</td>'
                    for c, r in zip(row, b.right, strict=True)) + "</tr>")
            cells.append("</table>")
            out.append("\n".join(cells))
        else:
            out.append("<p>" + " · ".join(f'<a href="{e(path)}">{e(text)}</a>'
                                          for text, path in b.items) + "</p>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _inline(text: str) -> str:
    """Markdown-lite for paragraphs: `code` spans and **bold**, everything else escaped."""
    import re

    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)
