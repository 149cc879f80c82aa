"""Keep the README's example outputs true: every block after a `<!-- run: iosim ... -->` marker is
the real output of that command.

    python tools/readme_sync.py          # rewrite the blocks in place
    python tools/readme_sync.py --check  # exit 1 if any block is stale (tests/test_readme.py)
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from click.testing import CliRunner

README = Path(__file__).parents[1] / "README.md"
BLOCK = re.compile(
    r"(<!-- (?P<kind>run|run-error): (?P<command>iosim [^>]*?) -->\n```text\n)(?P<output>.*?)(```)", re.S)


def run(command: str, *, expect_error: bool = False) -> str:
    """The command's output; a `run-error` block shows `$ command` and its one-line error."""
    from iosim.cli import cli

    args = shlex.split(command)[1:]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "110"})
    if (result.exit_code != 0) != expect_error:
        raise SystemExit(f"`{command}` exited {result.exit_code}: {result.output}")
    output = "\n".join(line.rstrip() for line in result.output.splitlines()) + "\n"
    return f"$ {command}\n{output}" if expect_error else output


def synced(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + run(m.group("command"),
                                                  expect_error=m.group("kind") == "run-error")
                     + m.group(5), text)


def main() -> int:
    text = README.read_text()
    new = synced(text)
    if "--check" in sys.argv:
        if new != text:
            print("README example outputs are stale: run `python tools/readme_sync.py`")
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
