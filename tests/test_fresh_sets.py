"""tests/fresh_sets.py's `assert_fresh`, and that every round's novelty test still bites: with
one point of its fresh set swapped for a point measured before, each round's test fails on the
overlap (not on some other assertion), naming the earlier source."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.fresh_sets import assert_fresh, seen
from tests.seen_sets import NEEDS_TORCH

EVEN = seen("the even numbers below 20", range(0, 20, 2))


def test_a_new_set_passes() -> None:
    assert_fresh([1, 3, 5], lambda p: p, [EVEN], size=(3, 3), axes={"value": lambda p: p})


@pytest.mark.parametrize(("points", "kwargs", "says"), [
    ([1, 4], {}, "already in the even numbers below 20: ['4']"),
    ([1, 1, 3], {}, "repeats ['1']"),
    ([1, 3], {"size": (3, None)}, "has 2 points, not 3 to None"),
    ([1, 3, 5], {"size": (1, 2)}, "has 3 points, not 1 to 2"),
    ([1, 3], {"axes": {"parity": lambda p: p % 2}}, "does not vary parity: only {1}"),
])
def test_each_failure_names_what_is_wrong(points: list[int], kwargs: dict[str, Any],
                                          says: str) -> None:
    with pytest.raises(AssertionError, match=re.escape(says)):
        assert_fresh(points, lambda p: p, [EVEN], **kwargs)


def test_a_source_read_as_empty_fails() -> None:
    """A moved or emptied record must not make the check pass for want of points."""
    with pytest.raises(AssertionError, match="0 points read, fewer than 1"):
        assert_fresh([1], lambda p: p, [seen("a record that moved", [])])
    with pytest.raises(AssertionError, match="10 points read, fewer than 11"):
        assert_fresh([1], lambda p: p, [seen("the evens", range(0, 20, 2), at_least=11)])


def test_a_source_compares_under_its_own_key() -> None:
    tens = seen("the tens", [10, 20], key=lambda p: p // 10 * 10)
    assert_fresh([31, 45], lambda p: p, [tens])
    with pytest.raises(AssertionError, match=r"already in the tens: \['20'\]"):
        assert_fresh([31, 25], lambda p: p, [tens])


# --- the mutation check: each round's test against its own set with one seen point swapped in


def _swap_list(module: str, name: str, earlier: Callable[[Any], Any]) -> Callable[..., None]:
    """Replace the point list `module`.`name` by itself with its first point an earlier one."""
    def patch(monkeypatch: pytest.MonkeyPatch) -> None:
        owner = importlib.import_module(module)
        points = getattr(owner, name)
        monkeypatch.setattr(owner, name, type(points)([earlier(owner), *points[1:]]))
    return patch


def _swap_grid(name: str) -> Callable[..., None]:
    """Replace benchmarks/backward_h200.py's grid `name` by one whose first point is the main
    grid's first (measured in tests/data/backward-h200.json)."""
    def patch(monkeypatch: pytest.MonkeyPatch) -> None:
        pytest.importorskip("torch")
        from benchmarks import backward_h200 as BH

        made, old = getattr(BH, name)(), BH.grid(False)[0][0]
        if isinstance(made, tuple):  # (torch points, Algorithm 4's, Triton's)
            made = ([(old, True, "s"), *made[0][1:]], *made[1:])
        elif isinstance(made[0], tuple):  # (point, with eager, split)
            made = [(old, True, "s"), *made[1:]]
        else:
            made = [old, *made[1:]]
        monkeypatch.setattr(BH, name, lambda: made)
    return patch


def _swap_record(module: str) -> Callable[..., None]:
    """Make the test module's record loader (torch_bwd_fit.load) give every record with its
    first point's id one of the main record's (torch_bwd_fit.RECORDS[0])."""
    def patch(monkeypatch: pytest.MonkeyPatch) -> None:
        from iosim.calibrate import torch_bwd_fit as F

        old_id = F.load([F.RECORDS[0]])[0]["points"][0]["id"]
        load = F.load

        def swapped(paths: Any) -> list[dict[str, Any]]:
            return [{**r, "points": [{**r["points"][0], "id": old_id}, *r["points"][1:]]}
                    for r in load(paths)]
        monkeypatch.setattr(importlib.import_module(module).F, "load", swapped)
    return patch


VP = "iosim.calibrate.variants_points"
IV = "benchmarks.impl_validation_h200"
ROUNDS: list[tuple[str, str, dict[str, Any], Callable[..., None]]] = [
    ("test_variants_fresh_var7", "test_var7_fresh_set_has_no_earlier_shape",
     {"name": "MLA_FRESH3"}, _swap_list(VP, "MLA_FRESH3", lambda m: m.MLA[0])),
    ("test_variants_fresh_var9", "test_var9_fresh_sets_have_no_earlier_shape", {},
     _swap_list(VP, "DECODE_FRESH3", lambda m: m.DECODE[0])),
    ("test_variants_fresh_var9", "test_var9_fp8_fresh_set_has_no_earlier_point", {},
     _swap_list(VP, "FP8_FRESH3", lambda m: m.FP8[0])),
    ("test_variants_fresh_var10", "test_cascade_fresh6_has_no_earlier_shape", {},
     _swap_list(VP, "CASCADE_FRESH6", lambda m: m.CASCADE[0])),
    ("test_variants_fresh_var11", "test_cascade_fresh7_has_no_earlier_shape", {},
     _swap_list(VP, "CASCADE_FRESH7", lambda m: m.CASCADE[0])),
    ("test_variants_fresh_var12", "test_cascade_fresh8_has_no_earlier_shape", {},
     _swap_list(VP, "CASCADE_FRESH8", lambda m: m.CASCADE[0])),
    ("test_variants_fresh_var13", "test_cascade_fresh9_has_no_earlier_shape", {},
     _swap_list(VP, "CASCADE_FRESH9", lambda m: m.CASCADE[0])),
    ("test_mla_prefill_fresh2", "test_fresh2_has_no_earlier_shape", {},
     _swap_list("iosim.calibrate.mla_prefill_points", "FRESH2", lambda m: m.FIT[0])),
    ("test_fresh_backward", "test_the_second_fresh_set_is_new", {},
     _swap_record("tests.test_fresh_backward")),
    ("test_fresh3_backward", "test_the_third_and_fourth_fresh_sets_are_new", {"n": "3"},
     _swap_record("tests.test_fresh3_backward")),
    ("test_fresh3_backward", "test_the_third_and_fourth_fresh_sets_are_new", {"n": "4"},
     _swap_record("tests.test_fresh3_backward")),
    *((f"test_fresh{n}_backward", test, {}, _swap_grid(f"fresh{n}_grid")) for n, test in (
        ("5", "test_the_fifth_fresh_set_is_new_and_varies_every_axis"),
        ("6", "test_the_sixth_fresh_set_is_new_and_varies_every_axis"),
        ("7", "test_the_seventh_grid_is_new"), ("8", "test_the_eighth_grid_is_new"),
        ("9", "test_the_ninth_grid_is_new"), ("10", "test_the_tenth_grid_is_new"),
        ("11", "test_the_eleventh_grid_is_new"), ("12", "test_the_twelfth_grid_is_new"),
        ("14", "test_the_fourteenth_grid_is_new"), ("15", "test_the_fifteenth_grid_is_new"))),
    *(("test_calibrate_impl", "test_the_fresh_validation_set_is_new_and_varies_every_acceptance_"
       "axis", {"name": name}, _swap_list(IV, name, lambda m: m.FIT[0]))
      for name in ("VALIDATION3", "VALIDATION4", "VALIDATION5", "VALIDATION6", "VALIDATION10",
                   "VALIDATION12")),
    *((module, test, {}, _swap_list(IV, name, lambda m: m.FIT[0])) for module, test, name in (
        ("test_calibrate_impl", "test_the_fresh_flex_set_is_new", "FLEXFRESH7"),
        ("test_calibrate_impl", "test_the_second_blind_set_is_new_and_covers_the_changed_models",
         "VALIDATION11"),
        ("test_flex_forward", "test_the_fresh_flex8_set_is_new_and_varies_every_axis",
         "FLEXFRESH8"),
        ("test_flex_forward", "test_the_fresh_flex9_set_is_new_and_varies_every_axis",
         "FLEXFRESH9"),
        ("test_flex_decoding", "test_the_fresh_flex10_set_is_new_and_varies_every_axis",
         "FLEXFRESH10"),
        ("test_l2_launch_walk", "test_the_fresh_descending_set_is_new_and_varies_its_axes",
         "IMPL8FRESH"),
        ("test_l2_launch_walk", "test_the_fresh_launch_walk_set_is_new_and_varies_its_axes",
         "IMPL9FRESH"),
        ("test_stream_k", "test_the_fresh_cudnn_set_is_new_and_pins_the_switch", "CUDNNFRESH8"),
        ("test_lean_time", "test_the_fresh_cudnn9_set_is_new_and_covers_the_lean_cases",
         "CUDNNFRESH9"),
        ("test_lean_rows", "test_the_fresh_cudnn10_set_is_new_and_reaches_many_query_heads_per_"
         "kv_head", "CUDNNFRESH10"),
        ("test_eager_forward", "test_the_fresh_eager8_set_is_new_and_varies_every_axis",
         "EAGERFRESH8"),
        ("test_eager_mask", "test_the_fresh_eager9_set_is_new_and_varies_every_axis",
         "EAGERFRESH9"),
        ("test_spills", "test_the_fresh_instance_set_is_new_and_varies_its_axes", "IMPL12FRESH"),
        ("test_l2_launch_walk", "test_the_fresh_walk_copies_set_is_new_and_varies_its_axes",
         "IMPL13FRESH"),
        ("test_lone_prologue", "test_the_fresh_triton13_set_is_new_and_varies_every_axis",
         "TRITONFRESH13"),
        ("test_cudnn11", "test_the_fresh_cudnn11_sets_are_new_and_vary_every_axis",
         "CUDNNFRESH11"),
        ("test_cudnn11", "test_the_fresh_cudnn11_sets_are_new_and_vary_every_axis",
         "EAGERFRESH11"))),
]


@pytest.mark.parametrize(("module", "test", "args", "patch"), ROUNDS,
                         ids=[f"{m}::{t}{list(a.values()) or ''}" for m, t, a, _ in ROUNDS])
def test_every_round_fails_on_a_seen_point(module: str, test: str, args: dict[str, Any],
                                           patch: Callable[..., None],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    round_test = getattr(importlib.import_module(f"tests.{module}"), test)
    if NEEDS_TORCH.mark in getattr(round_test, "pytestmark", []):  # called here, not collected
        pytest.importorskip("torch")
    patch(monkeypatch)
    with pytest.raises(AssertionError, match="fresh points already in"):
        round_test(**args)
