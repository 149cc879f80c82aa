"""`iosim explain softmax` and the online softmax behind it, on the seed articles' toy runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.analysis.explain import ExplainError, online_softmax, parse_scores, parse_values
from tests.conftest import examples, run_cli


def explain(*args: str) -> tuple[int, str, str]:
    return tuple(run_cli("explain", "softmax", *args))  # type: ignore[return-value]


def test_seed_000_two_blocks() -> None:
    """Seed 000, "A toy run": scores 2, 1, 0, 3 in two blocks; "the first block sets the maximum
    at 2, and the second raises it to 3 ... The final running maximum is 3 and the running sum is
    1.553 ... the weights are 0.2369, 0.0871, 0.0321 and 0.6439"."""
    t = online_softmax([2, 1, 0, 3], 2)
    assert [s.max_after for s in t.steps] == [2, 3]
    assert t.final_max == 3
    assert round(t.final_sum, 3) == 1.553
    assert [round(w, 4) for w in t.weights] == [0.2369, 0.0871, 0.0321, 0.6439]
    assert t.steps[1].rescale == pytest.approx(math.exp(-1))  # e^{2 − 3}


def test_seed_003_blocks_of_three_with_values() -> None:
    """Seed 003, Step 2: 1.0, 3.0, −2.0, 0.5, 2.5, 4.0 as two blocks of three: "After block one the
    running maximum is 3.0 and the running sum is 1.1421 ... the old sum is multiplied by e^{3−4}
    ... The final sum is 1.6735"; with value vectors "the largest difference from the full
    computation was ≈ 5.6×10⁻¹⁷, which is floating-point rounding" (their vectors are not given:
    ours are seeded random ones, so the bound is rounding level, 1e-15)."""
    values = np.random.default_rng(0).standard_normal((6, 4))
    t = online_softmax([1.0, 3.0, -2.0, 0.5, 2.5, 4.0], 3, values.tolist())
    first, second = t.steps
    assert first.max_after == 3.0 and round(first.sum_after, 4) == 1.1421
    assert second.rescale == pytest.approx(math.exp(3 - 4))
    assert t.final_max == 4.0 and round(t.final_sum, 4) == 1.6735
    assert t.max_output_difference is not None and t.max_output_difference < 1e-15
    assert t.max_weight_difference < 1e-15


@settings(max_examples=examples(100))
@given(scores=st.lists(st.floats(-50, 50), min_size=1, max_size=40), block=st.integers(1, 45))
def test_online_softmax_equals_one_pass(scores: list[float], block: int) -> None:
    t = online_softmax(scores, block)
    assert t.max_weight_difference < 1e-12
    assert t.final_max == max(scores)
    assert len(t.steps) == -(-len(scores) // block)


def test_cli_seed_000_prints_blocks_and_final_weights() -> None:
    code, out, _ = explain("--scores", "2,1,0,3", "--block", "2")
    assert code == 0
    assert ("     1   2, 1             2   −∞ → 2                —                 0        "
            "1.3679            1.3679") in out
    assert ("     2   0, 3             3   2 → 3            0.3679            0.5032        "
            "1.0498            1.5530") in out
    assert "     2                  0.2369             0.2369" in out
    assert "final max m = 3, sum l = 1.5530" in out


def test_cli_values_print_the_partial_output() -> None:
    code, out, _ = explain("--scores", "1,3,-2,0.5,2.5,4", "--block", "3", "--values",
                           "1,0;0,1;1,1;2,0;0,2;3,1")
    assert code == 0
    assert "Partial output after each block" in out
    assert "final max m = 4, sum l = 1.6735" in out
    assert "output O: online [1.8600, 1.0855], one pass [1.8600, 1.0855]" in out


@pytest.mark.parametrize("args", [["--scores", "1,-2"], ["--scores", "-2,1"], ["--scores=-2,1"],
                                  ["--scores", "−2,1"]])
def test_cli_negative_scores_are_numbers_not_options(args: list[str]) -> None:
    code, out, err = explain(*args, "--block", "1")
    assert code == 0, err
    assert "−2" in out


def test_scalar_values_are_one_number_per_score() -> None:
    assert parse_values("10,20,30", 3) == ((10.0,), (20.0,), (30.0,))
    assert parse_values("1,0;0,1", 2) == ((1.0, 0.0), (0.0, 1.0))
    assert parse_scores(" 1.5, −2 ,3e1") == (1.5, -2.0, 30.0)


@pytest.mark.parametrize("args,message", [
    (["--scores", "2,x,0"], "--scores: 'x' is not a number; give comma-separated numbers"),
    (["--scores", ""], "--scores is empty"),
    (["--scores", "1,,2"], "--scores has an empty entry"),
    (["--scores", "1,nan"], "--scores: 'nan' is not a finite number"),
    (["--scores", "2,1", "--block", "0"], "--block must be a whole number of at least 1, got 0"),
    (["--scores", "2,1", "--block", "-1"], "--block must be a whole number of at least 1, got -1"),
    (["--scores", "2,1", "--values", "1;2;3"], "--values needs one vector per score: 2 scores, 3 vectors"),
    (["--scores", "2,1", "--values", "1,2;3"], "every vector needs the same length"),
    (["--scores", "2,1", "--values", "a;b"], "--values: 'a' is not a number"),
])
def test_cli_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    code, out, err = explain(*args)
    assert code == 2
    assert message in err
    assert err.startswith("Error: ") and err.count("\n") == 1
    assert "Traceback" not in out + err


def test_core_rejects_bad_input_without_the_cli() -> None:
    """From Python the messages name the parameters (the CLI test above: the flags)."""
    with pytest.raises(ExplainError, match=r"^scores is empty") as empty:
        online_softmax([], 2)
    assert empty.value.param == "scores"
    with pytest.raises(ExplainError, match=r"^block must be"):
        online_softmax([1.0], 0)
