"""The decoding fields of Workload (issue 14 items 2-3): page_size, prefix_len, suffix_lens."""

from __future__ import annotations

import pytest

from iosim import Workload
from iosim.errors import WorkloadError


def test_defaults_leave_a_workload_as_before() -> None:
    w = Workload(128)
    assert (w.page_size, w.prefix_len, w.suffix_lens) == (None, None, None)
    assert w.describe() == Workload(128).describe()
    assert "paged" not in w.describe()


def test_a_paged_workload_and_a_shared_prefix_batch_are_accepted() -> None:
    paged = Workload(1, n_kv=1000, page_size=16)
    assert paged.page_size == 16 and "16 tokens/page" in paged.describe()
    batch = Workload(1, n_kv=512 + 40, batch=3, prefix_len=512, suffix_lens=[16, 40, 9])
    assert batch.suffix_lens == (16, 40, 9)  # a list becomes a tuple (hashable, frozen)
    assert "shared prefix 512" in batch.describe()


@pytest.mark.parametrize(("changes", "words"), [
    ({"page_size": 0}, "page_size must be at least 1"),
    ({"page_size": 2.5}, "page_size must be a whole number"),
    ({"page_size": True}, "page_size must be a whole number"),
    ({"page_size": 1 << 30}, "beyond"),
    ({"page_size": 16, "sparsity": 0.5}, "dense mask"),
])
def test_bad_page_sizes_are_refused_naming_the_parameter(changes: dict[str, object],
                                                         words: str) -> None:
    with pytest.raises(WorkloadError, match=words) as info:
        Workload(1, n_kv=256, **changes)  # type: ignore[arg-type]
    assert info.value.param in ("page_size", "sparsity")


@pytest.mark.parametrize(("kwargs", "param", "words"), [
    ({"prefix_len": 8}, "suffix_lens", "needs both"),
    ({"suffix_lens": (1, 2)}, "prefix_len", "needs both"),
    ({"prefix_len": 8, "suffix_lens": ()}, "suffix_lens", "empty"),
    ({"prefix_len": 8, "suffix_lens": "1,2"}, "suffix_lens", "list of whole numbers"),
    ({"prefix_len": 8, "suffix_lens": (1, 0)}, "suffix_lens", "at least 1"),
    ({"prefix_len": 0, "suffix_lens": (1, 2)}, "prefix_len", "at least 1"),
    ({"prefix_len": 8, "suffix_lens": (1, 2, 3)}, "batch", "3 requests"),
    ({"prefix_len": 8, "suffix_lens": (1, 4)}, "n_kv", "longest request"),
])
def test_bad_shared_prefix_batches_are_refused(kwargs: dict[str, object], param: str,
                                               words: str) -> None:
    with pytest.raises(WorkloadError, match=words) as info:
        Workload(1, n_kv=10, batch=2, **kwargs)  # type: ignore[arg-type]
    assert info.value.param == param


def test_a_shared_prefix_needs_a_decoding_step() -> None:
    with pytest.raises(WorkloadError, match="one query token") as info:
        Workload(4, n_kv=10, batch=1, prefix_len=8, suffix_lens=(2,))
    assert info.value.param == "n"


@pytest.mark.parametrize("kwargs", [
    {"page_size": 16, "window": 8},
    {"prefix_len": 64, "suffix_lens": (36,), "window": 8},
    {"prefix_len": 64, "suffix_lens": (36,), "latent_kv": True, "d": 576, "d_v": 512},
])
def test_combinations_not_modelled_yet_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(WorkloadError, match="not modelled yet"):
        Workload(1, n_kv=100, **kwargs)  # type: ignore[arg-type]
