"""List and range syntax of the sweep flags (iosim/cli/lists.py)."""

from __future__ import annotations

import click
import pytest

from iosim.cli.lists import (
    MAX_VALUES,
    parse_booleans,
    parse_choices,
    parse_list,
    parse_names,
    parse_sizes,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("1024", (1024,)),
    ("1024,4096", (1024, 4096)),
    ("512..65536", (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)),
    ("100..1000", (100, 200, 400, 800)),                     # the end only if reached
    ("64..512:64", (64, 128, 192, 256, 320, 384, 448, 512)),
    ("64..500:100", (64, 164, 264, 364, 464)),
    ("64..4096*4", (64, 256, 1024, 4096)),
    ("7..7", (7,)),
    ("16, 64..256, 16", (16, 64, 128, 256)),                  # repeats dropped, order kept
    ("4096,1024", (4096, 1024)),
    ("65_536", (65536,)),
])
def test_expansions(text: str, expected: tuple[int, ...]) -> None:
    assert parse_list(text, "--n") == expected


def test_auto_only_where_allowed() -> None:
    assert parse_list("auto,64..256", "--block-kv", auto=True) == (None, 64, 128, 256)
    with pytest.raises(click.BadParameter, match="'auto' is not allowed"):
        parse_list("auto", "--n")


@pytest.mark.parametrize(("text", "message"), [
    ("4096..512", "range '4096..512' is descending (empty); write the smaller end first: 512..4096"),
    ("", "no values given"),
    ("512,,1024", "empty item in '512,,1024'"),
    ("512,abc", "'abc' is not a whole number"),
    ("1.5", "'1.5' is not a whole number"),
    ("512..", "range '512..' has no end"),
    ("64..512:0", "needs a step of at least 1"),
    ("64..4096*1", "needs a factor of at least 2"),
    ("0..1024", "'0..1024' must be at least 1"),
    ("-5", "'-5' must be at least 1"),
    (f"1..{MAX_VALUES + 1}:1", "expands to more than 10,000 values"),
])
def test_bad_values_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(click.BadParameter) as info:
        parse_list(text, "--n")
    assert message in info.value.format_message()
    assert "512..65536 (doubling)" in info.value.format_message()  # and how to write it


def test_sizes_take_units() -> None:
    assert parse_sizes("64KiB,96KB", "--sram") == (65536, 96000)
    assert parse_sizes("32KiB..128KiB", "--sram") == (32768, 65536, 131072)
    assert parse_sizes("auto,100000", "--sram") == (None, 100000)
    with pytest.raises(click.BadParameter, match="not a quantity"):
        parse_sizes("lots", "--sram")


def test_choices_booleans_names() -> None:
    assert parse_choices("fp16,BF16", "--dtype", ["fp16", "bf16"]) == ("fp16", "bf16")
    with pytest.raises(click.BadParameter, match="'fp64' is not one of fp16, bf16"):
        parse_choices("fp16,fp64", "--dtype", ["fp16", "bf16"])
    assert parse_booleans("no,yes,on", "--causal") == (False, True)
    with pytest.raises(click.BadParameter, match="'maybe' is not yes or no"):
        parse_booleans("maybe", "--causal")
    assert parse_names("a100, h100,a100", "--gpu") == ("a100", "h100")
    with pytest.raises(click.BadParameter, match="empty item"):
        parse_names("a100,", "--gpu")
