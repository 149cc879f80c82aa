"""Golden numbers from the two seed articles (shared/seeds/), through the public API."""

from __future__ import annotations

import pytest

import iosim
from tests.conftest import SEED_ACCELERATOR

# Seed 000: N = 4,096 and 8,192, d = 64, fp16, one head, forward, on its illustrative accelerator.


@pytest.fixture(scope="module")
def seed000() -> dict[int, iosim.Comparison]:
    hw = iosim.load_hardware(SEED_ACCELERATOR)
    return {n: iosim.compare(iosim.Workload(n, d=64), hw, sram_elements=65_536) for n in (4096, 8192)}


def _qkvo_bytes(a: iosim.AlgorithmEstimate) -> int:
    return a.traffic.where(tensors="QKVO", init=False).bytes


def test_seed000_standard_bytes(seed000):
    # "Standard attention moves 136.3 megabytes at 4,096 tokens and 541.1 megabytes at 8,192"
    assert seed000[4096].algorithm("standard").hbm_bytes == 136_314_880
    assert seed000[8192].algorithm("standard").hbm_bytes == 541_065_216


def test_seed000_flash1_blocks_and_passes(seed000):
    # "blocks of 256 columns (illustrative, from an SRAM of 65,536 numbers), N = 4,096 needs 16 passes"
    flash1 = seed000[4096].algorithm("flash1")
    assert flash1.tiling is not None
    assert flash1.tiling.block_kv == 256
    assert -(-4096 // flash1.tiling.block_kv) == 16


def test_seed000_flash1_qkvo_traffic(seed000):
    # "about 26.2 megabytes" at 4,096 and "102.8 megabytes at 8,192 tokens", Q+K+V+O only;
    # the statistics (l, m) and Alg. 1 line 2's initialisation are terms of their own.
    assert _qkvo_bytes(seed000[4096].algorithm("flash1")) == 26_214_400
    assert _qkvo_bytes(seed000[8192].algorithm("flash1")) == 102_760_448
    flash1 = seed000[4096].algorithm("flash1")
    categories = flash1.traffic.by_category()
    assert categories["statistics"]["read"] > 0 and categories["init"]["write"] > 0
    # "roughly 5.2 times less than the standard path"
    assert seed000[4096].algorithm("standard").hbm_bytes / _qkvo_bytes(flash1) == pytest.approx(5.2, abs=0.01)


def test_seed000_times(seed000):
    c = seed000[4096]
    standard, flash1 = c.algorithm("standard"), c.algorithm("flash1")
    # "the matmul FLOPs alone would take 14.3 µs at N = 4,096"
    assert standard.matmul_flops / c.roofs.matmul_flops_per_s == pytest.approx(14.3e-6, abs=0.05e-6)
    # "moving the standard traffic takes 68.2 µs" -> memory-bound
    memory_time = sum(k.memory_time_s for k in standard.kernels)
    assert memory_time == pytest.approx(68.2e-6, abs=0.05e-6)
    assert standard.bound == "memory"
    # "the tiled path's memory time (13.1 µs at N = 4,096) is below the arithmetic time (14.3 µs)"
    assert _qkvo_bytes(flash1) / c.roofs.hbm_bandwidth_bytes_per_s == pytest.approx(13.1e-6, abs=0.05e-6)
    assert flash1.bound == "compute"


def test_seed000_softmax_intensity(seed000):
    # "its intensity is 1.25 FLOPs per byte" (5 FLOPs per element, read 2 + write 2 bytes)
    softmax = next(k for k in seed000[4096].algorithm("standard").kernels if k.name == "softmax")
    assert softmax.intensity_flops_per_byte == pytest.approx(1.25)


def test_seed000_machine_balance():
    # "its balance is 150 FLOPs per byte"
    hw = iosim.load_hardware(SEED_ACCELERATOR)
    assert hw.ridge_point_flops_per_byte == pytest.approx(150)


# Seed 003: A100 figures, M = 98,304 fp16 elements (192 KB), d = 128.


def test_seed003_block_sizes():
    # "the key block holds 192 rows and the query block 128 rows"
    tiling = iosim.make_tiling(iosim.Workload(8192, d=128), 98_304 * 2, "seed 003")
    assert (tiling.block_kv, tiling.block_q) == (192, 128)


def test_seed003_theorem2_ratio():
    # "At 8,192 tokens the ratio of the two leading terms is about 6.1"
    c = iosim.compare(iosim.Workload(8192, d=128), "a100", sram_elements=98_304)
    assert c.theorem2.ratio == pytest.approx(6.1, abs=0.05)


@pytest.mark.parametrize(("n", "heads", "mib"), [(8192, 1, 128), (8192, 32, 4096), (131072, 1, 32768)])
def test_seed003_score_matrix(n, heads, mib):
    # "128 MiB for one head, and 4 GiB for one layer of 32 heads"; "At 131,072 tokens ... 32 GiB"
    c = iosim.compare(iosim.Workload(n, d=128, heads=heads), "a100", algorithms=["standard"])
    assert c.score_matrix_bytes_per_head * heads == mib * 2**20


def test_seed003_statistics_bytes():
    # "At 8,192 tokens that is 65,536 bytes per head in fp32" (m and l)
    c = iosim.compare(iosim.Workload(8192, d=128), "a100", algorithms=["flash1"])
    assert c.algorithm("flash1").footprint.extra == (("l", 32_768), ("m", 32_768))
