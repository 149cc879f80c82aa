"""What hostile10 (2 Dec 2026) found in the YAMLs a user writes: GPU, model and implementation
files. Each test is one finding; its comment says what the input did before (on main at
6d7ab46)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iosim.inputs.gpus import config_dir
from iosim.inputs.implementations_yaml import impls_dir
from iosim.inputs.model_files import models_dir
from tests.hostile import A100_YAML, check_run, workdir

LLAMA_YAML = (models_dir() / "llama-3.2-1b.yaml").read_text(encoding="utf-8")
FLEX_YAML = (impls_dir() / "flex.yaml").read_text(encoding="utf-8")
A100_ALIASES = "aliases: [a100, a100-80gb, a100-sxm]"


def _edited(text: str, pattern: str, new: str) -> str:
    edited, count = re.subn(pattern, lambda _: new, text, count=1, flags=re.M)
    assert count == 1, pattern
    return edited


def _refused(folder: Path, args: list[str]) -> str:
    outcome = check_run(args, folder)
    assert outcome.code == 2, outcome.out[-300:]
    return outcome.err


# -- names, aliases and display names (leftover 4 of hostile9) ---------------------------------

@pytest.mark.parametrize(("pattern", "new", "key"), [
    # before: accepted; an alias no --gpu can give ('' never matches a stripped lookup)
    (re.escape(A100_ALIASES), 'aliases: [""]', "aliases[0]"),
    (re.escape(A100_ALIASES), 'aliases: ["   "]', "aliases[0]"),
    # before: accepted; a newline in a name breaks every line that prints it
    (re.escape(A100_ALIASES), 'aliases: ["a\\nb"]', "aliases[0]"),
    # before: accepted; lookups ignore case, so the second is the first again
    (re.escape(A100_ALIASES), "aliases: [a100, A100]", "aliases[1]"),
    (re.escape(A100_ALIASES), "aliases: [a100-80gb-sxm]", "aliases[0]"),
    # before: '' silently became the name; '   ' printed a blank GPU title
    (r"^display_name: .*$", 'display_name: ""', "display_name"),
    (r"^display_name: .*$", 'display_name: "   "', "display_name"),
    (r"^vendor: .*$", 'vendor: ""', "vendor"),
    (r"^architecture: .*$", 'architecture: "\\t"', "architecture"),
    (r"^name: .*$", 'name: "a100\\nx"', "name"),
    (r"^name: .*$", 'name: "a100 x"', "name"),
])
def test_a_gpu_yamls_empty_or_broken_name_is_refused_by_key(pattern: str, new: str,
                                                             key: str) -> None:
    with workdir() as folder:
        (folder / "mine.yaml").write_text(_edited(A100_YAML, pattern, new), encoding="utf-8")
        err = _refused(folder, ["compare", "--gpu", "mine.yaml", "--n", "1024"])
    assert f": {key}:" in err


@pytest.mark.parametrize(("pattern", "new", "key"), [
    # before: '  ' printed the model as a blank title; '' silently became the name
    (r"^display_name: .*$", 'display_name: "  "', "display_name"),
    (r"^display_name: .*$", 'display_name: ""', "display_name"),
    # before: accepted; an alias with a newline, or a space, no --model gives
    (r"^aliases: .*$", 'aliases: ["a\\nb"]', "aliases[0]"),
    (r"^aliases: .*$", 'aliases: ["a b"]', "aliases[0]"),
    (r"^aliases: .*$", "aliases: [x, X]", "aliases[1]"),
])
def test_a_model_yamls_empty_or_broken_name_is_refused_by_key(pattern: str, new: str,
                                                              key: str) -> None:
    with workdir() as folder:
        (folder / "mine.yaml").write_text(_edited(LLAMA_YAML, pattern, new), encoding="utf-8")
        err = _refused(folder, ["compare", "--gpu", "h200", "--n", "1024", "--model",
                                "mine.yaml"])
    assert f": {key}:" in err


def test_an_impl_yamls_name_with_a_control_character_is_refused() -> None:
    # before: accepted; the implementation's column header carried an escape character
    with workdir() as folder:
        (folder / "mine.yaml").write_text(_edited(FLEX_YAML, r"^name: flex$",
                                                  'name: "fl\\x1bex"'), encoding="utf-8")
        err = _refused(folder, ["compare", "--gpu", "h200", "--n", "1024", "--impl",
                                "mine.yaml"])
    assert ": name:" in err and "control character" in err


# -- datasheet figures that cannot be one GPU's -------------------------------------------------

H200_TEXT = (config_dir() / "h200.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(("old", "new", "key"), [
    # before: accepted; occupancy counted on a per-SM shared memory no block fits
    ("value: 228 KiB", "value: 100 KiB", "sram_per_sm"),
    # before: accepted; "60 GB" for "60 MiB", and every byte an L2 hit to the DRAM estimate
    ("value: 60 MiB", "value: 200 GB", "l2_size"),
])
def test_figures_that_do_not_nest_are_refused(old: str, new: str, key: str) -> None:
    assert old in H200_TEXT
    with workdir() as folder:
        (folder / "mine.yaml").write_text(H200_TEXT.replace(old, new, 1), encoding="utf-8")
        err = _refused(folder, ["compare", "--gpu", "mine.yaml", "--n", "4096"])
    assert f": {key}:" in err and "units" in err
