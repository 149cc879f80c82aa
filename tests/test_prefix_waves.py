"""estimates/prefix_waves.py: the shared prefix re-read by later waves of split-KV's grid."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

import iosim
from iosim.calibrate.dirty_ledger import as_counted
from iosim.estimates.prefix_waves import PrefixGrid, partition_copies, waves_spanned
from tests.conftest import DATA, without_prefix_rereads

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize(("sequences", "kv_heads", "splits", "slots"),
                         [(14, 8, 8, 660), (14, 8, 64, 660), (3, 2, 5, 7), (40, 1, 16, 33),
                          (9, 4, 3, 12), (5, 3, 7, 4)])
def test_waves_spanned_is_the_distinct_waves_of_the_readers(sequences: int, kv_heads: int,
                                                            splits: int, slots: int) -> None:
    """Against the launch order enumerated: chunk (h, k) read by sequence q at position
    q·H·S + h·S + k, wave ⌊position / W⌋ (calibrate/kernels_variants.py decode_split's grid)."""
    grid = PrefixGrid(sequences=sequences, kv_heads=kv_heads, splits=splits, slots=slots,
                      chunk_keys=64, prefix_len=64)
    for h, k in itertools.product(range(kv_heads), range(splits)):
        offset = h * splits + k
        waves = {(q * kv_heads * splits + offset) // slots for q in range(sequences)}
        assert waves_spanned(grid, offset) == len(waves)


@pytest.mark.parametrize("readers", [1, 2, 3, 5, 8])
def test_partition_copies_is_the_expected_distinct_partitions(readers: int) -> None:
    """Each reader on one of two partitions, every assignment equally likely: the mean count
    of distinct partitions, enumerated."""
    assignments = list(itertools.product((0, 1), repeat=readers))
    mean = sum(len(set(a)) for a in assignments) / len(assignments)
    assert partition_copies(readers, 2) == pytest.approx(mean)
    assert partition_copies(0.5, 2) == 1.0  # a chunk a wave reads at most once: one copy


def _splitkv(batch: int, prefix: int, suffix: int, splits: int) -> iosim.AlgorithmEstimate:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import variants_compare as vc

    point = {"kind": "cascade", "dtype": "fp16", "d": 128, "n": 1, "heads": 32, "kv_heads": 8,
             "batch": batch, "causal": False, "page_size": 16, "prefix_len": prefix,
             "suffix_lens": [suffix] * batch}
    return iosim.compare(vc.workload(point), vc.GPU, algorithms=["splitkv"], profile="measured",
                         splits=splits, **vc.DECODE_TILES).algorithm("splitkv")


def _kv(est: iosim.AlgorithmEstimate) -> int:
    assert est.dram is not None
    return sum(t.bytes for t in est.dram.terms if t.kernel == "splitkv_attn"
               and t.tensor in ("K", "V"))


def test_one_wave_reads_the_prefix_once() -> None:
    """8 requests × 8 KV heads × 4 splits = 256 programs, under one wave of 660: unchanged."""
    with without_prefix_rereads():
        before = _kv(_splitkv(8, 16000, 100, 4))
    assert _kv(_splitkv(8, 16000, 100, 4)) == before


def test_the_h200_batch_the_prefix_rule_missed_by_five_times() -> None:
    """cas-b32-p16k-s16 at 16 splits (tests/data/h200-variants.json, section cascade: ncu DRAM
    read + write of benchmarks/variants_h200.py's split-KV kernels, the command in its
    counters entry): 4,096 programs in 7 waves over a 67 MB prefix. prefix_once alone charged
    it once (−83 %); with the later waves' re-reads it is within ±10 %."""
    record = json.loads((DATA / "h200-variants.json").read_text())
    counted = next(p for c in record["counters"] for p in c["points"]
                   if p["count_id"] == "cas-b32-p16k-s16 splitkv s16")
    ncu = counted["dram_read_bytes"] + counted["dram_write_bytes"]
    est = _splitkv(32, 16384, 16, 16)
    assert est.dram is not None
    assert abs(as_counted(est.dram.bytes) / ncu - 1) <= 0.10
    with without_prefix_rereads():
        old = _splitkv(32, 16384, 16, 16)
    assert old.dram is not None and as_counted(old.dram.bytes) / ncu - 1 < -0.5


@pytest.mark.parametrize("readers", [0.5, 1, 2.6, 5.2, 10.3])
def test_held_copies_counts_the_far_copies_at_their_share(readers: float) -> None:
    """The first copy whole, the further ones (partition_copies − 1) at the share: var10's whole
    copies at share 1, one copy at share 0, and linear in the share between."""
    from iosim.estimates.prefix_waves import held_copies

    assert held_copies(readers, 1.0) == pytest.approx(partition_copies(readers))
    assert held_copies(readers, 0.0) == 1.0
    assert held_copies(readers, 0.5) == pytest.approx((1.0 + partition_copies(readers)) / 2)


def test_far_copy_share_is_the_best_of_its_grid_on_the_seen_points() -> None:
    """FAR_COPY_SHARE 0.65, re-checked at var12's occupancy (the paged split kernel's 8
    programs per SM at d 64): the seen shared-prefix split-KV points (tests/data/h200-variants.json
    before cascade_fresh8 and mla5's prefix probes) within ±10 % of ncu with the protocol
    residue, 148 of 163, against 129 at var10's whole copies and fewer at the grid's neighbours
    (`python benchmarks/var12_prefix_judge.py --fit`; var11 found 123 of its 128 the same way)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import var12_prefix_judge as judge

    import iosim.estimates.prefix_waves as waves

    def within(share: float) -> int:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(waves, "FAR_COPY_SHARE", share)
            errors = [r["error"] for r in judge.seen_rows() if r["family"] == judge.v11.v10.FAMILY]
        assert len(errors) == 163
        return sum(abs(e) <= 0.10 for e in errors)

    best = within(waves.FAR_COPY_SHARE)
    assert waves.FAR_COPY_SHARE == 0.65 and best == 148
    assert within(1.0) == 129
    assert within(0.6) < best and within(0.7) < best


def _mha_grid(batch: int, splits: int) -> PrefixGrid | None:
    from iosim.algorithms import get_algorithm
    from iosim.estimates.prefix_waves import prefix_grid

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import variants_compare as vc

    point = {"kind": "cascade", "dtype": "fp16", "d": 64, "n": 1, "heads": 16, "kv_heads": 16,
             "batch": batch, "causal": False, "page_size": 16, "prefix_len": 22000,
             "suffix_lens": [150] * batch}
    est = iosim.compare(vc.workload(point), vc.GPU, algorithms=["splitkv"], profile="measured",
                        splits=splits, **vc.DECODE_TILES).algorithm("splitkv")
    kernels = get_algorithm("splitkv").kernels(vc.workload(point), est.tiling)
    assert not next(k for k in kernels if k.name == "splitkv_attn").pack_heads  # MHA packs none
    return prefix_grid(kernels, vc.workload(point), est.tiling, 1056)


def test_mha_grid_is_one_sequence_a_request_over_every_head() -> None:
    """MHA's split kernel packs nothing (one query head per KV head), and its grid is
    calibrate/kernels_variants.py decode_split's at group 1: (splits, heads, requests), so rule 1
    reads it with a sequence per request and the 16 heads as its KV heads (var13; var12's rule
    returned None here)."""
    grid = _mha_grid(12, 8)
    assert grid is not None
    assert (grid.sequences, grid.kv_heads, grid.splits, grid.slots) == (12, 16, 8, 1056)
    assert grid.prefix_len == 22000 and grid.chunk_keys * 8 >= 22000 + 150


def test_the_mha_batch_read_once_per_wave_its_readers_span() -> None:
    """pcas-b12-p22000-s150-mha-d64 (tests/data/h200-variants.json section cascade_fresh8: ncu
    DRAM read + write of `benchmarks/variants_h200.py --sections cascade_fresh8`, the command in
    its run entry), a 90 MB prefix in 1,536 / 3,072 / 6,144 programs at 8 / 16 / 32 splits,
    1.5-5.8 waves of 1,056: var12's rule left it at one prefix read (−50 / −71 / −83 %); with
    MHA's grid in the rule it is within ±17 % at each (`python benchmarks/var13_prefix_judge.py
    --json --seen`: −3.7 / −16.8 / −8.3 %)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import var9_residue_judge as v9

    from tests.conftest import as_var12_shipped

    ids = [f"pcas-b12-p22000-s150-mha-d64 splitkv s{s}" for s in (8, 16, 32)]

    def errors() -> list[float]:
        rows = {r["id"]: r for r in v9.residue_rows(v9.load([]))}
        return [rows[i]["error"] for i in ids]

    assert all(abs(e) <= 0.17 for e in errors())
    with as_var12_shipped():
        assert all(e < -0.45 for e in errors())
