"""Workload.window and Workload.seqlens (issue 14 item 1): validation, one clear error each."""

from __future__ import annotations

import pytest

import iosim
from iosim.errors import WorkloadError
from iosim.inputs.limits import MAX_SEQLENS


def test_defaults_change_nothing() -> None:
    w = iosim.Workload(1024)
    assert w.window is None and w.seqlens is None and not w.masked
    assert "window" not in w.describe() and "packed" not in w.describe()


def test_fields_are_kept_and_described() -> None:
    w = iosim.Workload(3589, window=256, causal=True, seqlens=[512, 3000, 77])
    assert w.window == 256 and w.seqlens == (512, 3000, 77) and w.masked
    assert "window 256" in w.describe() and "3 packed sequences (longest 3000)" in w.describe()
    assert w.with_(window=None).window is None


@pytest.mark.parametrize(("changes", "param", "words"), [
    (dict(window=0), "window", "at least 1"),
    (dict(window=-4), "window", "at least 1"),
    (dict(window=2.5), "window", "whole number"),
    (dict(window=True), "window", "whole number"),
    (dict(window=1025), "window", "leave window out"),
    (dict(seqlens=[]), "seqlens", "empty"),
    (dict(seqlens=[512, 511]), "seqlens", "add up to 1,023 tokens, not n=1024"),
    (dict(seqlens=[512, 512.0]), "seqlens", "entry 2 must be a whole number"),
    (dict(seqlens=[1024, 0]), "seqlens", "entry 2 is 0"),
    (dict(seqlens="512,512"), "seqlens", "must be a list"),
    (dict(seqlens=[1] * (MAX_SEQLENS + 1)), "seqlens", f"beyond the {MAX_SEQLENS:,}"),
    (dict(seqlens=[512, 512], n_kv=2048), "seqlens", "leave n_kv unset"),
    (dict(seqlens=[512, 512], batch=2), "seqlens", "batch=1"),
    (dict(window=64, sparsity=0.5), "window", "sparsity=1"),
])
def test_bad_masks_name_the_parameter(changes: dict[str, object], param: str, words: str) -> None:
    with pytest.raises(WorkloadError) as caught:
        iosim.Workload(1024, **changes)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_fp8_scales_with_a_mask_are_refused() -> None:
    with pytest.raises(WorkloadError) as caught:
        iosim.Workload(1024, window=64, dtype="fp8_e4m3")
    assert caught.value.param == "window" and "not modelled yet" in str(caught.value)
