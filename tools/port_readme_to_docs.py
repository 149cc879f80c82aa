"""Carry a branch's README edits into the docs pages the old README became (a one-off for merging).

Branches started before the docs site (commit 722acfe's 1,318-line README) edit README sections that
now live in docs/. After `git merge` of such a branch (README.md in conflict: keep this branch's
front page), run

    python tools/port_readme_to_docs.py BRANCH [SINCE]   # e.g. main; SINCE: the ref already ported

It three-way merges, for each page made from the old README, the branch's changes (722acfe's README
-> BRANCH's README) into the page, with git merge-file. A change to a part of the old README that
another page holds is left to that page. It then lists what is left to do by hand: conflicts
(marked in the page as git does) and every line the branch added to its README that is now on no
page and not in the README. Run it once per merged branch (a second run applies the edits
again, as conflicts). Review the result with `git diff docs/`, then run
`python tools/readme_sync.py --write`. Delete this file once no branch predates the docs site.
"""

from __future__ import annotations

import difflib
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).parents[1]
BASE = "722acfe"
# each page made from the old README: the line ranges of BASE's README it holds, in its order
# (index.md was written anew)
SOURCES = {
    "compare": [(24, 117), (135, 155)],
    "api": [(118, 134), (535, 571), (573, 583)],
    "backward-decoding": [(158, 365)],
    "model": [(1189, 1239), (366, 377)],
    "verify-explain": [(379, 534), (584, 875)],
    "sweeps-plots-reports": [(878, 1073)],
    "calibration-l2": [(1076, 1187)],
    "hardware": [(1241, 1286)],
}
CONFLICT = re.compile(r"<<<<<<< [^\n]*\n(.*?)\|{7} [^\n]*\n(.*?)=======\n(.*?)>>>>>>> [^\n]*\n", re.S)


def as_pages_write_it(lines: list[str]) -> list[str]:
    """Old README lines with the mechanical edits of the move: headings one level up, links made
    relative to docs/, a blank line before every list (Python-Markdown needs it)."""
    out: list[str] = []
    fenced = False
    for line in lines:
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
        if not fenced:
            line = re.sub(r"^##(#*) ", r"#\1 ", line)
            line = line.replace("](reports/", "](../reports/").replace("](docs/", "](")
            if (re.match(r"^(- |\d+\. )", line) and out and out[-1].strip()
                    and not re.match(r"^(- |\d+\. |\s)", out[-1])):
                out.append("")
        out.append(line)
    return out


def their_range(base: list[str], theirs: list[str]) -> Callable[[int, int], list[str]]:
    """Lines [start, stop) of `base` -> the lines of `theirs` that took their place."""
    blocks = difflib.SequenceMatcher(None, base, theirs, autojunk=False).get_opcodes()

    def where(i: int, *, end: bool) -> int:
        for tag, i1, i2, j1, j2 in blocks:
            if tag == "equal" and i1 <= i < i2:
                return j1 + (i - i1)
            if i1 <= i < i2 or (i == i1 == i2):
                return j2 if end else j1
        return len(theirs)

    return lambda start, stop: theirs[where(start, end=False):where(stop, end=True)]


def show(ref: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__)
        return 2
    base = show(BASE, "README.md").split("\n")
    theirs = show(argv[0], "README.md").split("\n")
    since = show(argv[1], "README.md").split("\n") if len(argv) == 2 else base
    region, region_since = their_range(base, theirs), their_range(base, since)
    left = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, ranges in SOURCES.items():
            page = ROOT / "docs" / f"{name}.md"
            old = [line for a, b in ranges for line in region_since(a - 1, b)]
            new = [line for a, b in ranges for line in region(a - 1, b)]
            (Path(tmp) / "base").write_text("\n".join(as_pages_write_it(old)) + "\n")
            (Path(tmp) / "theirs").write_text("\n".join(as_pages_write_it(new)) + "\n")
            merged = subprocess.run(["git", "merge-file", "-p", "--diff3", "-L", page.name, "-L", BASE,
                                     "-L", argv[0], str(page), f"{tmp}/base", f"{tmp}/theirs"],
                                    capture_output=True, text=True).stdout
            # our side empty: that part of the old README is on another page, which takes the change
            merged = CONFLICT.sub(lambda m: m.group(0) if m.group(1).strip() else "", merged)
            conflicts = len(CONFLICT.findall(merged))
            left += conflicts
            if merged != page.read_text():
                page.write_text(merged)
                todo = f", {conflicts} conflict(s) to resolve" if conflicts else ""
                print(f"docs/{page.name}: updated{todo}")
    added = ({line.strip() for line in as_pages_write_it(theirs)}
             - {line.strip() for line in as_pages_write_it(since)})
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    present = {line.strip() for p in pages for line in p.read_text().split("\n")}
    lost = sorted(line for line in added if line and line not in present)
    for line in lost:
        print(f"added on {argv[0]}, now on no page: {line}")
    return 1 if left or lost else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
