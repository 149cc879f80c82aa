"""Keep the example outputs in the README and the docs true: every one is the real command's output.

Two kinds of block are kept, in README.md and every docs/**/*.md page:

- **generated**: the fenced block right after a `<!-- run: iosim ... -->` marker holds that
  command's output; after `<!-- run-error: iosim ... -->`, `$ command` and its error (the command
  must fail). `--write` regenerates them.
- **transcripts**: a fenced block whose first line is `$ iosim ...`. Each `$ iosim` line is followed
  by what that command prints; a line `...` stands for any number of the real output's lines, so a
  transcript may show an excerpt. Every other line must be a line of the real output, in order, with
  the lines between two `...` contiguous. `--write` rewrites a full transcript and, in an excerpt,
  replaces each run of lines that changed with the real lines that match it best at that place
  (and closes an excerpt with `...` where the output goes on).

A fenced block that shows `$ iosim` anywhere but on its first line is refused: it would go unchecked.

    python tools/readme_sync.py --check [PATH ...]   # exit 1 naming each stale block (CI, tests)
    python tools/readme_sync.py [--write] [PATH ...] # rewrite stale blocks in place
    PATH: a Markdown file or a folder of them; default README.md and docs/
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).parents[1]
DEFAULT_PATHS = (ROOT / "README.md", ROOT / "docs")
# the width the outputs are rendered at: wide enough for every table, as a maximised terminal
COLUMNS = "110"
PROMPT = "$ iosim "
ELISION = "..."
MARKER = re.compile(r"<!-- (?P<kind>run|run-error): (?P<command>iosim [^>]*?) -->")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
# an excerpt line that changed is replaced by the real line it resembles most, if at least this much
FUZZY_CUTOFF = 0.5
# float64 rounding errors (below 1e-12, printed like 1.4e-16) depend on the CPU's SIMD paths and
# numpy's build, not on iosim: an example shows one machine's, and another's must still match it
ROUNDING_NOISE = re.compile(r"\b\d\.\de-(?:1[3-9]|[2-9]\d)\b")


def _key(line: str) -> str:
    """The line as compared: rounding noise masked."""
    return ROUNDING_NOISE.sub("<1e-12", line)


def _same(a: list[str], b: list[str]) -> bool:
    return [_key(line) for line in a] == [_key(line) for line in b]


class StaleBlock(Exception):
    """A block whose text is not what its command prints, with the reason."""


@dataclass(frozen=True)
class Output:
    text: str  # lines right-stripped, each ending in a newline
    exit_code: int

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@contextmanager
def _scratch_copy_of_the_repository() -> Iterator[None]:
    """Run in a fresh folder that links to everything at the top of the repository: a command reads
    `configs/...` or `tests/data/...` as a user in a clone would, and what it writes (`--out DIR`,
    `--plot DIR`) lands in the scratch folder, never in the repository, and is new every run."""
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="readme_sync-") as scratch:
        for entry in ROOT.iterdir():
            if entry.name != ".git":
                (Path(scratch) / entry.name).symlink_to(entry)
        os.chdir(scratch)
        try:
            yield
        finally:
            os.chdir(here)


@cache
def run(command: str) -> Output:
    """What `command` (a line starting with `iosim `) prints, through click's test runner.

    The program name is `iosim`, as a user's shell shows it (click's runner would say `cli`)."""
    from click.testing import CliRunner

    from iosim.cli import cli

    args = shlex.split(command)[1:]
    with _scratch_copy_of_the_repository():
        result = CliRunner().invoke(cli, args, prog_name="iosim", env={"COLUMNS": COLUMNS})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise StaleBlock(f"`{command}` raised {type(result.exception).__name__}: {result.exception}")
    text = "".join(line.rstrip() + "\n" for line in result.output.splitlines())
    return Output(text, result.exit_code)


def generated(kind: str, command: str) -> str:
    """The body of a block after a `run` or `run-error` marker."""
    out = run(command)
    if (out.exit_code != 0) != (kind == "run-error"):
        expected = "fail" if kind == "run-error" else "succeed"
        raise StaleBlock(f"`{command}` was marked to {expected} but exited {out.exit_code}:\n{out.text}")
    return f"$ {command}\n{out.text}" if kind == "run-error" else out.text


def _segments(lines: list[str]) -> list[list[str] | None]:
    """Split an excerpt at its `...` lines; None stands for an elision."""
    parts: list[list[str] | None] = []
    for line in lines:
        last = parts[-1] if parts else None
        if line.strip() == ELISION:
            parts.append(None)
        elif last is not None:
            last.append(line)
        else:
            parts.append([line])
    return parts


def _find(segment: list[str], real: list[str], start: int, anchored: bool) -> int:
    """Where `segment` occurs contiguously in `real` at or after `start` (exactly there if anchored)."""
    stop = start + 1 if anchored else len(real) - len(segment) + 1
    for i in range(start, max(stop, start)):
        if _same(real[i:i + len(segment)], segment):
            return i
    return -1


def _closest(segment: list[str], real: list[str], start: int, anchored: bool) -> int:
    """Where the lines most like `segment` start, or -1 when nothing is alike enough."""
    best, best_score = -1, FUZZY_CUTOFF
    stop = start + 1 if anchored else len(real) - len(segment) + 1
    for i in range(start, max(stop, start)):
        window = real[i:i + len(segment)]
        # a window cut short by the end of the output scores its missing lines as 0
        pairs = zip(segment, window, strict=False)
        score = sum(difflib.SequenceMatcher(None, a, b).ratio() for a, b in pairs) / len(segment)
        if score > best_score:
            best, best_score = i, score
    return best


def excerpt(command: str, shown: list[str], *, fix: bool) -> list[str]:
    """The output lines a transcript shows for `command`, checked (and with `fix`, updated)."""
    real = run(command).lines
    if not any(line.strip() == ELISION for line in shown):
        if _same(shown, real):
            return shown
        if fix:
            return real
        diff = "\n".join(difflib.unified_diff(shown, real, "shown", "real", lineterm="", n=1))
        raise StaleBlock(f"`{command}` prints something else:\n{diff}")
    out: list[str] = []
    position, after_elision = 0, False
    parts = _segments(shown)
    for index, part in enumerate(parts):
        if part is None:
            out.append(ELISION)
            after_elision = True
            continue
        last = index == len(parts) - 1
        at = _find(part, real, position, anchored=not after_elision)
        matched = at >= 0
        if at < 0 and fix:
            at = _closest(part, real, position, anchored=not after_elision)
        if at < 0 and not after_elision and _find(part, real, position, anchored=False) >= 0:
            raise StaleBlock(f"`{command}`: {part[0]!r} is in its output but not where the excerpt "
                             f"puts it; put a `{ELISION}` line before it")
        if at < 0:
            keys = {_key(line) for line in real[position:]}
            missing = next((line for line in part if _key(line) not in keys), part[0])
            near = difflib.get_close_matches(missing, real[position:], n=1, cutoff=0.0)
            hint = f"\n  closest real line: {near[0]!r}" if near else ""
            raise StaleBlock(f"`{command}`: the shown line {missing!r} is not in its output "
                             f"(at this place){hint}")
        if last and at + len(part) != len(real):
            if not fix:
                raise StaleBlock(f"`{command}`: its output goes on after {part[-1]!r}; "
                                 f"end the excerpt with a `{ELISION}` line")
            out.extend([*real[at:at + len(part)], ELISION])  # still an excerpt, now saying so
            break
        # a part that matched stays as shown (its rounding noise too); a changed one is replaced
        out.extend(part if matched else real[at:at + len(part)])
        position, after_elision = at + len(part), False
    return out


def transcript(lines: list[str], *, fix: bool) -> list[str]:
    """A block of `$ iosim` commands each followed by its (possibly excerpted) output."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        command = lines[i][2:]
        j = i + 1
        while j < len(lines) and not lines[j].startswith(PROMPT):
            j += 1
        out.append(lines[i])
        out.extend(excerpt(command, lines[i + 1:j], fix=fix))
        i = j
    return out


@dataclass
class Block:
    start: int  # index of the first line inside the fence
    stop: int  # index of the closing fence
    marker: re.Match[str] | None  # the run marker on the line before the fence, if any


def blocks(lines: list[str]) -> Iterator[Block]:
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, j = opening.group("fence"), i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        marker = MARKER.fullmatch(lines[i - 1].strip()) if i > 0 else None
        yield Block(i + 1, j, marker)
        i = j + 1


def synced(text: str, *, fix: bool, where: str = "") -> tuple[str, list[str]]:
    """`text` with every kept block made current (`fix`) or checked; and the problems found."""
    lines = text.split("\n")
    problems: list[str] = []
    replacements: list[tuple[Block, list[str]]] = []
    for block in blocks(lines):
        body = lines[block.start:block.stop]
        place = f"{where}:{block.start}"
        try:
            if block.marker is not None:
                new = generated(block.marker.group("kind"), block.marker.group("command")).splitlines()
            elif body and body[0].startswith(PROMPT):
                new = transcript(body, fix=fix)
            elif any(line.startswith(PROMPT) for line in body):
                raise StaleBlock(f"a `{PROMPT.strip()}` line that is not the block's first line; start "
                                 "the block with the command (or mark it `<!-- run: ... -->`)")
            else:
                continue
        except StaleBlock as stale:
            problems.append(f"{place}: {stale}")
            continue
        if not _same(new, body):
            if not fix:
                diff = "\n".join(difflib.unified_diff(body, new, "shown", "real", lineterm="", n=1))
                problems.append(f"{place}: stale output\n{diff}")
            replacements.append((block, new))
    if fix:
        for block, new in reversed(replacements):
            lines[block.start:block.stop] = new
    return "\n".join(lines), problems


def markdown_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            # the example reports (docs/reports links to reports/) are written by `iosim report`
            files += sorted(p for p in path.rglob("*.md") if "reports" not in p.relative_to(path).parts)
        elif path.exists():
            files.append(path)
        else:
            raise SystemExit(f"Error: {path} does not exist")
    return files


def main(argv: list[str], write: Callable[[Path, str], object] = Path.write_text) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if not a.startswith("--")] or list(DEFAULT_PATHS)
    stale = 0
    for path in markdown_files(paths):
        text = path.read_text()
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        new, problems = synced(text, fix=not check, where=name)
        for problem in problems:
            print(problem)
        stale += len(problems)
        if not check and new != text:
            write(path, new)
            print(f"updated {name}")
    if stale:
        action = "run `python tools/readme_sync.py --write`" if check else "fix these by hand"
        print(f"{stale} example output block(s) are stale or unchecked: {action}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
