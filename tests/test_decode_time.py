"""The decoding time model (analysis/decode_time.py), the shared-prefix DRAM rules it uses
(estimates/shared_prefix_dram.py) and the GPU YAML keys that carry its constants."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosim import Workload
from iosim.analysis.compare import compare
from iosim.analysis.decode_time import CascadeTimer, Tiles, timed_verdict
from iosim.errors import ConfigError
from iosim.estimates.launch_order_dram import STATES_NOTE
from iosim.inputs.hardware_yaml import load_hardware

SHIPPED = Path(__file__).resolve().parents[1] / "configs" / "gpus" / "h200.yaml"


def _batch(batch: int, prefix: int, suffix: int, heads: int = 32, kv_heads: int = 8,
           d: int = 128) -> Workload:
    return Workload(1, n_kv=prefix + suffix, d=d, heads=heads, kv_heads=kv_heads, batch=batch,
                    prefix_len=prefix, suffix_lens=(suffix,) * batch)


def _dram(workload: Workload, kernel: str, tensor: str, **options: object) -> int:
    result = compare(workload, "h200", algorithms=["cascade"], **options)  # type: ignore[arg-type]
    est = result.algorithms[0]
    assert est.dram is not None
    return sum(t.bytes for t in est.dram.terms
               if t.kernel == kernel and t.tensor == tensor and t.op == "read")


def test_cascade_prefix_comes_from_dram_once_and_the_suffixes_keep_their_bytes() -> None:
    # 64 requests × 4 query heads per KV head = 256 rows: 4 query blocks of 64 read the prefix;
    # DRAM sees it once (L · kv_heads · d · 2 B); each suffix is read by its own program only
    w = _batch(64, 1024, 100)
    once = 1024 * 8 * 128 * 2
    assert _dram(w, "cascade_prefix", "K", block_q=64, block_kv=64, splits=4) == once
    assert _dram(w, "cascade_prefix", "V", block_q=64, block_kv=64, splits=4) == once
    assert _dram(w, "cascade_suffix", "K", block_q=64, block_kv=64, splits=4) == 64 * 100 * 8 * 128 * 2


def test_partial_states_are_read_from_l2_while_they_fit() -> None:
    small = Workload(1, n_kv=4096, d=128, heads=32, kv_heads=8, batch=4)
    result = compare(small, "h200", algorithms=["splitkv"], splits=8)
    est = result.algorithms[0]
    assert est.dram is not None
    reads = [t for t in est.dram.terms if t.tensor == "O_partial" and t.op == "read"]
    assert reads and all(t.bytes == 0 and t.note == STATES_NOTE for t in reads)
    # 128 splits × 64 requests × 32 heads × 128 × 4 B = 128 MiB of states: more than the 60 MiB
    # L2, so every one is gone before the combine reads it (its reuse distance is at least them)
    big = Workload(1, n_kv=16384, d=128, heads=32, kv_heads=32, batch=64)
    est = compare(big, "h200", algorithms=["splitkv"], splits=128).algorithms[0]
    assert est.dram is not None
    reads = [t for t in est.dram.terms if t.tensor == "O_partial" and t.op == "read"]
    assert reads and all(t.bytes == t.oblivious_bytes > 0 for t in reads)


def test_the_merge_at_a_split_pair_reads_each_pass_states_once() -> None:
    # independent count: rows = batch · heads query rows; the merge reads s_p prefix and s_s
    # suffix states of (d_v + 1) fp32 each, writes O (fp16) and L (fp32)
    w = _batch(6, 640, 200)
    timer = CascadeTimer(w, "h200", Tiles())
    rows, d = 6 * 32, 128
    for sp, ss in ((4, 2), (8, 1), (1, 1)):
        merge = timer.timed(sp, ss).kernels[2]
        l2_bytes = merge.l2_s * timer.c.efficiency * timer.c.l2_bytes_per_s
        expected = rows * (d + 1) * 4 * (sp + ss) + rows * d * 2 + rows * 4
        assert l2_bytes == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("batch", "prefix", "suffix", "winner"), [
    # tests/data/h200-variants.json "cascade_fresh2" (benchmarks/variants_h200.py, NVIDIA H200):
    # gcas-b8-p10000-s10 cascade 36.0 µs against split-KV 62.8 µs; gcas-b1-p2048-s500 split-KV
    # 16.7 µs against cascade 20.6 µs
    (8, 10000, 10, "cascade"),
    (1, 2048, 500, "splitkv"),
])
def test_the_timed_verdict_names_the_measured_winner(batch: int, prefix: int, suffix: int,
                                                     winner: str) -> None:
    assert timed_verdict(_batch(batch, prefix, suffix), "h200").winner == winner


def _yaml_with(tmp_path: Path, extra: str) -> Path:
    text = SHIPPED.read_text().rstrip("\n") + "\n" + extra
    path = tmp_path / "gpu.yaml"
    path.write_text(text)
    return path


def test_the_shipped_h200_carries_the_measured_l2_rate_and_launch_cost() -> None:
    m = load_hardware(SHIPPED).measured
    assert m is not None and m.decode_fit is not None
    # tests/data/h200-variants.json "microbench" (calibrate/decode_microbench.py)
    assert m.l2_bandwidth_bytes_per_s == pytest.approx(9.58e12)
    assert m.launch_overhead_s == pytest.approx(1.09e-6)


@pytest.mark.parametrize(("key", "body", "words"), [
    ("launch_overhead", "  launch_overhead:\n    value_us: -1\n    source: x\n", "value_us"),
    ("decode_fit", "  decode_fit:\n    ramp_us: 1\n    efficiency: 2\n    source: x\n",
     "efficiency"),
    ("decode_fit", "  decode_fit:\n    ramp_us: 1\n", "expected a mapping"),
    ("decode_fit", "  decode_fit:\n    ramp_us: 1\n    efficiency: 1\n    block_us: -1\n"
                   "    source: x\n", "block_us"),
    ("decode_fit", "  decode_fit:\n    ramp_us: 1\n    efficiency: 1\n    program_tflops: 0\n"
                   "    source: x\n", "program_tflops"),
    ("decode_fit", "  decode_fit:\n    ramp_us: 1\n    efficiency: 1\n    mla_shared_dots: -0.5\n"
                   "    source: x\n", "mla_shared_dots"),
])
def test_bad_decode_constants_name_the_key(tmp_path: Path, key: str, body: str,
                                           words: str) -> None:
    text = SHIPPED.read_text()
    start = text.index(f"  {key}:")
    rest = text[start + 1:]
    nxt = min((rest.index(f"\n  {k}:") for k in ("l2_bandwidth", "launch_overhead",
                                                  "decode_fit", "impls")
               if f"\n  {k}:" in rest), default=len(rest))
    path = tmp_path / "gpu.yaml"
    path.write_text(text[:start] + body + rest[nxt + 1:])
    with pytest.raises(ConfigError, match=words):
        load_hardware(path)


def test_mla_row_blocks_read_the_latent_once() -> None:
    # 128 query heads over one latent head in 32-row tiles: 4 row blocks per request read the
    # same 576-column latent rows; independent count: batch · n_kv · 576 · 2 B (bf16) once
    w = Workload(1, n_kv=512, d=576, d_v=512, heads=128, kv_heads=1, batch=3, latent_kv=True,
                 dtype="bf16")
    est = compare(w, "h200", algorithms=["splitkv"], block_q=32, block_kv=32,
                  splits=2).algorithms[0]
    assert est.dram is not None
    k = [t for t in est.dram.terms if t.kernel == "splitkv_attn" and t.tensor == "K"]
    assert [t.bytes for t in k] == [3 * 512 * 576 * 2]
    assert k[0].oblivious_bytes == 4 * k[0].bytes
