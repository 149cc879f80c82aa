"""The documentation site cannot drift from the code: its example outputs are the real commands',
its nav lists every page, and its Python examples run."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"


def _readme_sync():
    spec = importlib.util.spec_from_file_location("readme_sync", ROOT / "tools" / "readme_sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_sync"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


sync = _readme_sync()


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md"))


def _nav_files(nav: list) -> list[str]:
    files: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        files += _nav_files(value) if isinstance(value, list) else [value]
    return files


# slow (8 s, about thirty commands): the README's `pytest -q` leaves it to `pytest -m slow` and to
# .ci/run's docs step, which runs the same `tools/readme_sync.py --check` over README and docs
@pytest.mark.slow
def test_docs_outputs_are_current():
    out = subprocess.run([sys.executable, "tools/readme_sync.py", "--check", "docs"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# Issue 13 item 13: the docs showed `Try 'cli sweep --help'` (click's test runner names the program
# `cli`); the tool prints `Try 'iosim sweep --help'`, and the check must say so.
STALE_HELP_LINE = """\
<!-- run-error: iosim sweep --gpu a100 --n 4096..512 -->
```text
$ iosim sweep --gpu a100 --n 4096..512
Error: Invalid value for '--n': range '4096..512' is descending (empty); write the smaller end first: \
512..4096. Write a list such as 64,128 or a range: 512..65536 (doubling), 64..512:64 (step) or \
64..4096*4 (factor). Try 'cli sweep --help'.
```
"""


def test_the_stale_cli_help_line_is_caught_and_rewritten():
    _, problems = sync.synced(STALE_HELP_LINE, fix=False)
    assert len(problems) == 1 and "Try 'cli sweep --help'" in problems[0]
    fixed, problems = sync.synced(STALE_HELP_LINE, fix=True)
    assert problems == []
    assert "Try 'iosim sweep --help'." in fixed and "'cli sweep" not in fixed


def _transcript(*lines: str) -> str:
    return "```text\n" + "\n".join(lines) + "\n```\n"


def _gpus_rows() -> list[str]:
    return sync.run("iosim gpus").lines


def test_an_excerpt_passes_and_a_changed_line_in_it_is_named():
    rows = _gpus_rows()
    a100 = next(line for line in rows if line.startswith(" a100-80gb-sxm"))
    good = _transcript("$ iosim gpus", "...", a100, "...")
    assert sync.synced(good, fix=False)[1] == []
    wrong = a100.replace("2.04 TB/s", "2.05 TB/s")
    _, problems = sync.synced(_transcript("$ iosim gpus", "...", wrong, "..."), fix=False)
    assert len(problems) == 1 and "2.05 TB/s" in problems[0] and "2.04 TB/s" in problems[0]
    fixed, problems = sync.synced(_transcript("$ iosim gpus", "...", wrong, "..."), fix=True)
    assert problems == [] and fixed == good


def test_an_excerpt_must_say_where_it_leaves_lines_out():
    rows = _gpus_rows()
    # an excerpt that ends on a middle line without a closing `...`: the output goes on after it
    _, problems = sync.synced(_transcript("$ iosim gpus", rows[0], "...", rows[4]), fix=False)
    assert len(problems) == 1 and "end the excerpt with a `...` line" in problems[0]
    # a middle line shown as the first: the output does not start there
    _, problems = sync.synced(_transcript("$ iosim gpus", rows[4], "..."), fix=False)
    assert len(problems) == 1 and "put a `...` line before it" in problems[0]


def test_a_whole_transcript_is_compared_and_rewritten():
    rows = _gpus_rows()
    block = _transcript("$ iosim gpus", *rows)
    assert sync.synced(block, fix=False)[1] == []
    stale = _transcript("$ iosim gpus", *rows[:-2])
    assert sync.synced(stale, fix=False)[1] != []
    assert sync.synced(stale, fix=True)[0] == block


def test_a_command_not_first_in_its_block_is_refused_as_unchecked():
    _, problems = sync.synced(_transcript("some output", "$ iosim gpus"), fix=False)
    assert len(problems) == 1 and "not the block's first line" in problems[0]


def test_a_run_marker_must_match_the_exit_status():
    block = "<!-- run: iosim sweep --gpu a100 --n 4096..512 -->\n```text\n```\n"
    _, problems = sync.synced(block, fix=True)
    assert len(problems) == 1 and "marked to succeed but exited 2" in problems[0]


def test_the_nav_lists_every_page_and_only_pages():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_files(config["nav"])
    assert len(nav) == len(set(nav))
    committed = {p.name for p in _pages()}
    assert committed <= set(nav), f"pages missing from mkdocs.yml's nav: {sorted(committed - set(nav))}"
    # the pages other helpers write are listed before they exist; every other nav entry is a page
    written_elsewhere = {"architecture.md", "contributing.md", "input-limits.md", "recipe-model.md",
                         "sweeps-benchmarks.md"}
    assert set(nav) - committed <= written_elsewhere


def _links(page: Path) -> list[str]:
    """The page's relative link targets, anchors dropped (mkdocs build --strict checks those)."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text())
    return [t for t in targets if not t.startswith(("http://", "https://", "mailto:"))]


def test_the_readme_is_a_front_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("page", [ROOT / "README.md", *_pages()], ids=lambda p: p.name)
def test_links_resolve_in_the_repository_as_on_github(page: Path):
    """mkdocs checks the site's links; these are the same pages read in the repository."""
    nav = set(_nav_files(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))
    for target in _links(page):
        path = Path(os.path.normpath(page.parent / target))
        in_repo = path.relative_to(ROOT).as_posix()
        assert path.exists() or (in_repo.startswith("docs/") and in_repo[5:] in nav), target
        assert not in_repo.startswith("docs/reports/"), (
            f"{target}: link the reports as ../reports/ (docs/reports is the site's link to them)")


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)


# the pages whose Python blocks are whole programs a reader can paste (elsewhere a block may be a
# REPL excerpt or a template to fill in)
RUNNABLE_EXAMPLES = ("api.md",)


@pytest.mark.parametrize("page", [DOCS / name for name in RUNNABLE_EXAMPLES], ids=lambda p: p.name)
def test_the_python_examples_run(page: Path):
    assert _python_blocks(page), f"{page.name} has no Python example to run"
    pytest.importorskip("pandas")
    for block in _python_blocks(page):
        exec(compile(block, f"{page.name} example", "exec"), {})


def test_shown_commands_read_the_repository_and_write_outside_it():
    # what a page shows must not depend on an earlier run (`--plot DIR` refuses an existing figure)
    # nor leave files in the repository
    for _ in range(2):
        with sync._scratch_copy_of_the_repository():
            assert Path("configs/gpus/a100-80gb-sxm.yaml").is_file()
            assert not Path("readme-sync-output").exists()
            Path("readme-sync-output").mkdir()
    assert not (ROOT / "readme-sync-output").exists()


def test_write_closes_an_excerpt_that_stops_short_instead_of_pasting_the_rest():
    rows = _gpus_rows()
    fixed, problems = sync.synced(_transcript("$ iosim gpus", rows[0], "...", rows[4]), fix=True)
    assert problems == [] and fixed == _transcript("$ iosim gpus", rows[0], "...", rows[4], "...")


# The docs' `iosim explain softmax` example showed "largest difference 2.2e-16" where another
# machine's numpy printed 4.4e-16 (its SIMD paths sum in another order): float64 rounding noise
# below 1e-12 matches any other such noise, and a shown value stays as written.
SOFTMAX = "iosim explain softmax --scores 1,3,-2,0.5,2.5,4 --block 3 --values '1,0;0,1;1,1;2,0;0,2;3,1'"


def test_rounding_noise_in_an_example_matches_another_machines_noise_but_a_real_change_does_not():
    real = sync.run(SOFTMAX).lines
    line = next(x for x in real if "largest difference" in x)
    shown = re.sub(r"\d\.\de-1\d", "9.9e-17", line)
    assert shown != line
    block = _transcript(f"$ {SOFTMAX}", "...", shown, "...")
    assert sync.synced(block, fix=False)[1] == []
    assert sync.synced(block, fix=True)[0] == block  # kept as shown, not churned
    changed = shown.replace("[1.8600,", "[1.8601,", 1)
    assert changed != shown
    assert sync.synced(_transcript(f"$ {SOFTMAX}", "...", changed, "..."), fix=False)[1] != []
