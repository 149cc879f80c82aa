"""The issue-14 decode kernels (split-KV over paged or contiguous KV, combine, cascade) and the
measurement's masks, against dense float64 references written here, on fresh random data with
poisoned outputs.

Without a CUDA GPU the kernels run on the CPU under Triton's interpreter (tiny shapes); on a GPU
the same tests run compiled.
"""

from __future__ import annotations

import math
import os

import pytest

pytestmark = pytest.mark.interpreter
torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
if not GPU:
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")

from iosim.calibrate import kernels_variants as KV  # noqa: E402
from iosim.calibrate import variants as VA  # noqa: E402
from iosim.calibrate.kernels import KernelInputError  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"
SMALL = KV.DecodeConfig(16, 16, 4, 1)


def dense_decode(q: torch.Tensor, keys: list[torch.Tensor], values: list[torch.Tensor]
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """One query row per head against every key of its request, float64, head by head."""
    batch, kv_heads, group, d = q.shape
    out = torch.empty(batch, kv_heads, group, d, dtype=torch.float64)
    lse = torch.empty(batch, kv_heads, group, dtype=torch.float64)
    for b in range(batch):
        for h in range(kv_heads):
            k, v = keys[b][:, h].double().cpu(), values[b][:, h].double().cpu()
            s = q[b, h].double().cpu() @ k.T / math.sqrt(d)
            out[b, h] = torch.softmax(s, -1) @ v
            lse[b, h] = torch.logsumexp(s, -1)
    return out, lse


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double().cpu() - b.double()).norm() / b.double().norm())


def rand(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float16, device=DEVICE)


@pytest.mark.parametrize("page_size", [None, 1, 8])
@pytest.mark.parametrize("splits", [1, 3])
def test_split_kv_matches_dense_attention(page_size: int | None, splits: int) -> None:
    lengths, kv_heads, group, d = [100, 37, 64], 2, 4, 32
    q = rand(len(lengths), kv_heads, group, d)
    keys = [rand(n, kv_heads, d) for n in lengths]
    values = [rand(n, kv_heads, d) for n in lengths]
    cache = (KV.contiguous_cache(keys, values) if page_size is None
             else KV.paged_cache(keys, values, page_size))
    out = KV.decode_buffers(q, splits)
    out.o.fill_(math.nan)
    out.lse.fill_(math.nan)
    kernels = KV.split_kv(q, cache, out, splits=splits, config=SMALL)
    ref_o, ref_lse = dense_decode(q, keys, values)
    assert rel(out.o, ref_o) < 2e-3
    assert rel(out.lse, ref_lse) < 1e-5
    assert kernels[-1] == ("_iosim_decode_split_kernel" if splits == 1
                           else "_iosim_decode_combine_kernel")


def test_split_counts_that_leave_splits_empty_still_combine() -> None:
    """50 keys in blocks of 16 are 4 blocks: 7 splits leave 3 empty (−∞ log-sum-exp)."""
    q = rand(1, 1, 2, 16)
    keys, values = [rand(50, 1, 16)], [rand(50, 1, 16)]
    out = KV.decode_buffers(q, 7)
    KV.split_kv(q, KV.contiguous_cache(keys, values), out, splits=7, config=SMALL)
    assert torch.isinf(out.lse_part[4:7]).all()
    assert rel(out.o, dense_decode(q, keys, values)[0]) < 2e-3


@pytest.mark.parametrize("page_size", [None, 8])
def test_cascade_equals_attention_over_prefix_and_suffix(page_size: int | None) -> None:
    kv_heads, group, d, prefix_len, suffix = 2, 4, 32, 48, [5, 30, 1]
    q = rand(len(suffix), kv_heads, group, d)
    pk, pv = rand(prefix_len, kv_heads, d), rand(prefix_len, kv_heads, d)
    sk = [rand(n, kv_heads, d) for n in suffix]
    sv = [rand(n, kv_heads, d) for n in suffix]
    ref_o, ref_lse = dense_decode(q, [torch.cat([pk, s]) for s in sk],
                                  [torch.cat([pv, s]) for s in sv])
    if page_size is None:
        prefix, sfx = KV.contiguous_cache([pk], [pv]), KV.contiguous_cache(sk, sv)
    else:
        prefix, sfx = KV.paged_cache([pk], [pv], page_size), KV.paged_cache(sk, sv, page_size)
    out = KV.decode_buffers(q, 2 + 2)
    out.o.fill_(math.nan)
    KV.cascade(q, prefix, sfx, out, prefix_splits=2, suffix_splits=2, prefix_config=SMALL,
               config=SMALL)
    assert rel(out.o, ref_o) < 2e-3
    assert rel(out.lse, ref_lse) < 1e-5


def test_shared_prefix_pages_are_one_set_of_pages() -> None:
    """Plain split-KV over a batch sharing its first pages (prefix caching's block table)."""
    prefix = [rand(32, 1, 16), rand(32, 1, 16)]
    keys = [torch.cat([prefix[0], rand(n, 1, 16)]) for n in (3, 20)]
    values = [torch.cat([prefix[1], rand(n, 1, 16)]) for n in (3, 20)]
    cache = KV.paged_cache(keys, values, 8, shared_pages=4)
    assert torch.equal(cache.table[0, :4], cache.table[1, :4])
    assert cache.k.shape[0] == 4 + 1 + 3  # the prefix's pages once, then each suffix's own
    for s in range(2):
        k, v = cache.key_rows(s)
        assert torch.equal(k, keys[s]) and torch.equal(v, values[s])


def test_paged_cache_refuses_a_page_size_of_zero() -> None:
    with pytest.raises(KernelInputError, match="positive integer"):
        KV.paged_cache([rand(4, 1, 16)], [rand(4, 1, 16)], 0)


@pytest.mark.parametrize(("max_len", "splits", "block"), [(1, 1, 64), (1000, 3, 64),
                                                          (131072, 47, 64), (65, 2, 16)])
def test_chunk_is_whole_key_blocks_per_split(max_len: int, splits: int, block: int) -> None:
    """FA2 flash_api.cpp: n_blocks_per_split = ceil(ceil(L / kBlockN) / num_splits)."""
    blocks = math.ceil(max_len / block)
    assert KV.chunk_for(max_len, splits, block) == math.ceil(blocks / splits) * block


# masks: the predicates the measurement gives FlexAttention, against the interface's wording


def brute_keep(point: dict, i: int, j: int) -> bool:  # type: ignore[type-arg]
    n, n_kv = point["n"], point["n_kv"]
    p = i + n_kv - n
    if point.get("seqlens"):
        bounds, start = [], 0
        for length in point["seqlens"]:
            bounds.append((start, start + length))
            start += length
        same = any(a <= i < b and a <= j < b for a, b in bounds)
        return same and (j <= i or not point["causal"])
    w = point.get("window")
    if w:
        return (p - w < j <= p) if point["causal"] else abs(j - p) < w
    return j <= p or not point["causal"]


@pytest.mark.parametrize("point", [
    {"n": 40, "n_kv": 40, "causal": True, "window": 7},
    {"n": 40, "n_kv": 40, "causal": False, "window": 7},
    {"n": 10, "n_kv": 40, "causal": True, "window": 5},
    {"n": 40, "n_kv": 40, "causal": True, "seqlens": [10, 3, 27]},
    {"n": 40, "n_kv": 40, "causal": False, "seqlens": [10, 3, 27]},
    {"n": 12, "n_kv": 30, "causal": True},
])
def test_mask_predicate_is_the_interface_definition(point: dict) -> None:  # type: ignore[type-arg]
    keep = VA.mask_predicate(point, "cpu")
    q = torch.arange(point["n"])[:, None]
    k = torch.arange(point["n_kv"])[None, :]
    got = keep(q, k).expand(point["n"], point["n_kv"])
    want = torch.tensor([[brute_keep(point, i, j) for j in range(point["n_kv"])]
                         for i in range(point["n"])])
    assert torch.equal(got, want)


@pytest.mark.slow
def test_flex_point_matches_its_dense_reference() -> None:
    """The measurement's Flex check on the CPU (eager FlexAttention, unfused): ragged causal
    documents with GQA; 6 of the 3 × 3 blocks of 128 hold a kept pair (the lower triangle)."""
    point = {"id": "t", "kind": "flex", "dtype": "fp16", "d": 16, "n": 300, "n_kv": 300,
             "heads": 2, "kv_heads": 1, "batch": 1, "causal": True, "block_size": 128,
             "window": None, "seqlens": [100, 17, 183]}
    built = VA.build_flex(point, torch.Generator().manual_seed(3), device="cpu")
    assert built.rel_error < 2e-3
    assert built.info["block_grid"] == [3, 3]
    assert built.info["partial_blocks"] + built.info["full_blocks"] == 6


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize("page_size", [None, 16])
def test_split_kv_at_a_real_size_on_the_gpu(page_size: int | None) -> None:
    """The measured tiles (16 query rows × 64 keys) compiled, GQA 4, 4096 keys, 8 splits."""
    q = rand(2, 8, 4, 128)
    keys = [rand(4096, 8, 128) for _ in range(2)]
    values = [rand(4096, 8, 128) for _ in range(2)]
    cache = (KV.contiguous_cache(keys, values) if page_size is None
             else KV.paged_cache(keys, values, page_size))
    out = KV.decode_buffers(q, 8)
    out.o.fill_(math.nan)
    KV.split_kv(q, cache, out, splits=8)
    assert rel(out.o, dense_decode(q, keys, values)[0]) < 2e-3


# phase 2's bookkeeping: ncu's launches back into points


def launch(kernel: str, read: float, write: float) -> dict:  # type: ignore[type-arg]
    return {"kernel": kernel, "dram__bytes_read.sum": read, "dram__bytes_write.sum": write,
            "lts__t_bytes.sum": read + write, "gpu__time_duration.sum": 1000.0}


def test_launches_split_at_the_evicts_with_the_residue_counted() -> None:
    from iosim.calibrate.ncu import EVICT
    from iosim.calibrate.variants_ncu import attach_launches

    launches = [launch(EVICT, 5e8, 1e3), launch("split", 100, 10), launch("combine", 20, 5),
                launch(EVICT, 5e8, 7), launch(EVICT, 5e8, 2), launch("flex", 300, 30),
                launch(EVICT, 5e8, 11)]
    points = attach_launches(launches, [{"count_id": "a", "id": "a"}, {"count_id": "b", "id": "b"}])
    assert [len(p["kernels"]) for p in points] == [2, 1]
    assert points[0]["dram_read_bytes"] == 120 and points[0]["dram_write_bytes"] == 15 + 7
    assert points[1]["dram_write_bytes"] == 30 + 11
    assert points[0]["kernel_time_s"] == pytest.approx(2e-6)
    with pytest.raises(ValueError, match="no evict kernel after its launches"):
        attach_launches(launches[:3], [{"count_id": "a", "id": "a"}])


def test_every_recorded_point_is_counted() -> None:
    """count_spec over the committed record: every Flex point, each decode shape at 1, 2, 4, ...
    and its fastest count, each shared-prefix batch's best of both methods."""
    import json

    from iosim.calibrate.variants_ncu import count_spec
    from tests.conftest import DATA

    record = json.loads((DATA / "h200-variants.json").read_text())
    spec = {s["count_id"] for s in count_spec(record)}
    assert {p["id"] for p in record["flex"]} <= spec
    for p in record["decode"]:
        assert f"{p['id']} s1" in spec and f"{p['id']} s{p['best_splits']}" in spec
    for p in record["cascade"]:
        assert f"{p['id']} splitkv s{p['best_splitkv']['splits']}" in spec
