"""Implementation profiles (configs/impls): strict loading, the traits each declares against the
launch data Nsight Compute recorded on the H200, bad input, and --impl in compare."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from iosim.analysis.compare import compare
from iosim.errors import ConfigError, IosimError
from iosim.estimates.occupancy import programs_per_sm, sm_limits, utilisation
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.implementations_yaml import get_implementation, shipped_implementations
from iosim.inputs.workload import Workload
from tests.conftest import DATA
from tests.conftest import run_cli as run

LAUNCHES = DATA / "h200-impl-launches.csv"
"""ncu --csv --page raw of benchmarks/impl_launches.py on the H200 (benchmarks/NOTES.md)."""


def _launch_rows() -> list[dict[str, str]]:
    rows = list(csv.reader(LAUNCHES.open()))
    at = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    header = rows[at]
    return [dict(zip(header, r, strict=True)) for r in rows[at + 2:]]


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _attention_rows() -> list[dict[str, str]]:
    """The attention kernels' launches, in benchmarks/impl_launches.py's LAUNCHES order (the
    random-number kernels that build each input are left out)."""
    return [r for r in _launch_rows() if "distribution_" not in r["Kernel Name"]]


def test_every_shipped_profile_loads_with_a_source_for_every_tile() -> None:
    names = shipped_implementations()
    assert set(names) == {"iosim-triton", "sdpa-flash", "sdpa-cudnn", "sdpa-efficient", "flex",
                          "torch-naive"}
    for name in names:
        impl = get_implementation(name)
        for row in impl.forward_tiles + impl.backward_tiles + impl.split_kv.tiles:
            assert row.source.strip(), (name, row)
        for trait in (impl.launch_order, impl.backward, impl.gqa):
            assert trait.source.strip(), (name, trait)


def test_sdpa_flash_tiles_match_the_recorded_launches() -> None:
    """flash_fwd_kernel at 16 heads × N 4096: grid = heads × ⌈N/B_r⌉, 32·warps threads, shared
    memory = (B_r + 2·B_c)·d·2 (kernel_traits.h kSmemSize) — for d = 64, 128 (causal), 256 — and
    the split kernel of a decode step: grid = KV heads × splits, as iosim chose them."""
    rows = _attention_rows()
    impl = get_implementation("sdpa-flash")
    for row, (d, causal) in zip(rows[:3], ((64, False), (128, True), (256, False)), strict=True):
        assert "flash_fwd_kernel" in row["Kernel Name"]
        c = compare(Workload(4096, d=d, heads=16, causal=causal), "h200", impl="sdpa-flash")
        tiling = c.algorithms[-1].tiling
        assert tiling is not None
        assert _int(row["launch__grid_size"]) == 16 * (4096 // tiling.block_q)
        shared = impl.shared_memory.bytes(tiling.block_q, tiling.block_kv, d, 2)  # type: ignore[union-attr]
        assert _int(row["launch__shared_mem_per_block_dynamic"]) == shared
        assert _int(row["launch__block_size"]) == 128  # 4 warps
    split, combine = rows[3], rows[4]
    assert "splitkv_kernel" in split["Kernel Name"] and "combine" in combine["Kernel Name"]
    c = compare(Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8), "h200", impl="sdpa-flash")
    a = c.algorithms[-1]
    assert a.algorithm == "splitkv" and a.tiling is not None
    assert _int(split["launch__grid_size"]) == 8 * a.tiling.splits  # 8 KV heads × 29 splits
    assert _int(split["launch__shared_mem_per_block_dynamic"]) == (64 + 2 * 128) * 128 * 2


def test_small_grids_take_the_split_kernel_as_fa2_does() -> None:
    """One head of N 4096 at d 128: flash_api.cpp's heuristic gives splits (64 query blocks of
    64 rows are under 80 % of 2 × 132): the recorded launch is the split kernel, 64 × 4 splits."""
    split = _attention_rows()[5]
    assert "splitkv_kernel" in split["Kernel Name"]
    c = compare(Workload(4096, d=128, heads=1), "h200", impl="sdpa-flash")
    a = c.algorithms[-1]
    assert a.algorithm == "splitkv" and a.tiling is not None
    assert _int(split["launch__grid_size"]) == 64 * a.tiling.splits


def test_efficient_tiles_match_the_recorded_launches() -> None:
    rows = [r for r in _attention_rows() if "fmha_cutlassF" in r["Kernel Name"]]
    for row, d in zip(rows, (64, 128), strict=True):
        c = compare(Workload(4096, d=d, heads=16), "h200", impl="sdpa-efficient")
        tiling = c.algorithms[-1].tiling
        assert tiling is not None
        assert f"_{tiling.block_q}x{tiling.block_kv}_" in row["Kernel Name"]
        assert _int(row["launch__grid_size"]) == 16 * (4096 // tiling.block_q)


def test_cudnn_is_persistent_and_torch_naive_launches_its_extra_kernels() -> None:
    cudnn = [r for r in _attention_rows() if "cudnn" in r["Kernel Name"]]
    assert {_int(r["launch__grid_size"]) for r in cudnn} == {132}  # one program per SM
    assert get_implementation("sdpa-cudnn").persistent is not None
    # torch-naive, 8 query heads / 2 KV heads, causal: expand K and V, QKᵀ, scale, the mask
    # (~keep, masked_fill's clone, the fill: analysis/eager_mask.py), softmax, PV
    c = compare(Workload(2048, d=64, heads=8, kv_heads=2, causal=True), "h200",
                impl="torch-naive")
    names = [k.name for k in c.algorithms[-1].kernels]
    assert names == ["gqa_expand", "qk", "scale", "mask_not", "mask_copy", "mask", "softmax",
                     "pv"]
    eager = [r["Kernel Name"] for r in _launch_rows()[-9:]]
    assert sum("gemm" in n or "nvjet" in n for n in eager) == 2  # QKᵀ and PV (cuBLAS)
    assert any("softmax_warp_forward" in n for n in eager)


def test_iosim_triton_declares_its_recorded_resources() -> None:
    """Shared memory and registers of the project's kernel as Triton compiled them on the H200
    (tests/data/h200-calibration.json, the main configuration of each head dim)."""
    record = json.loads((DATA / "h200-calibration.json").read_text())
    impl = get_implementation("iosim-triton")
    for row in impl.forward_tiles[:2]:
        label = f"{row.block_q}x{row.block_kv}/w{row.warps}/s{row.stages}"
        recorded = [m for m in record["measurements"]
                    if m["kernel"] == "attn_fwd" and m["d"] == row.d_max and label in m["id"]]
        assert recorded
        assert {m["shared_bytes"] for m in recorded} == {row.shared_bytes}
        assert row.registers_per_thread == max(m["regs"] for m in recorded)


def test_programs_per_sm_follow_the_cuda_limits() -> None:
    h200 = sm_limits(233_472, 90)
    # FA2 d = 64 forward: 49,152 B shared, 4 warps, 255 registers -> registers limit it to 2
    assert programs_per_sm(h200, shared_bytes=49_152, warps=4, registers_per_thread=255) == 2
    # iosim-triton d = 128: 163,840 B shared -> 1
    assert programs_per_sm(h200, shared_bytes=163_840, warps=8, registers_per_thread=181) == 1
    assert sm_limits(102_400, 86).threads == 1536


def test_a100_one_head_speedup_and_occupancy_are_one_number() -> None:
    """compare --n 4096 --gpu a100 (one head): flash2's 32 programs on 108 SMs run at
    u = 32/108 of the GPU's rate; the table's speed-up is standard's time over flash2's
    full-GPU roofline time divided by that u — the same number, not the 4.86× of before."""
    c = compare(Workload(4096), "a100")
    flash2 = c.algorithm("flash2")
    (o,) = flash2.occupancy
    assert (o.programs, o.sm_count) == (32, 108) and o.fraction == pytest.approx(32 / 108)
    (k,) = flash2.kernels
    full_gpu = max(k.memory_time_s, k.compute_time_s)
    assert flash2.speedup_vs_standard == pytest.approx(
        c.algorithm("standard").time_s / (full_gpu / utilisation(32, 108)), rel=1e-12)
    assert flash2.speedup_vs_standard < 4.86 * 32 / 108 * 1.01
    code, out, _ = run("compare", "--n", "4096", "--gpu", "a100")
    assert code == 0 and "flash2 cannot fill the GPU: 32 programs" in out and "30% of" in out


def test_bad_profiles_are_refused_with_file_and_key(tmp_path: Path) -> None:
    source = (Path(get_implementation("sdpa-flash").path)).read_text()
    cases = {
        "unknown key": (source + "\nbogus: 1\n", "bogus"),
        "bad algorithm": (source.replace("algorithm: flash2", "algorithm: flash9"), "algorithm"),
        "tile without source": (source.replace(
            ', source: "flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h:198 '
            'run_mha_fwd_hdim32"', ""), "forward_tiles[0].source"),
        "negative block": (source.replace("{d_max: 32, block_q: 128", "{d_max: 32, block_q: -1"),
                           "forward_tiles[0].block_q"),
        "unknown walk": (source.replace("forward_walk:\n  value: descending",
                                        "forward_walk:\n  value: sideways"),
                         "forward_walk.value"),
    }
    for what, (text, key) in cases.items():
        path = tmp_path / f"{what.replace(' ', '-')}.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError) as err:
            get_implementation(str(path))
        assert key in str(err.value), what
        code, _, stderr = run("compare", "--n", "1024", "--gpu", "h200", "--impl", str(path))
        assert code == 2 and stderr.count("\n") == 1 and key in stderr, what


def test_user_profile_in_one_file(tmp_path: Path) -> None:
    text = Path(get_implementation("sdpa-flash").path).read_text().replace(
        "name: sdpa-flash", "name: my-fa2")
    path = tmp_path / "my-fa2.yaml"
    path.write_text(text)
    c = compare(Workload(4096, d=128, heads=16), "h200", impl=str(path))
    assert c.algorithms[-1].name == "my-fa2"


def test_bad_input_is_one_line_exit_2() -> None:
    cases = [
        (("--n", "128", "--d", "512", "--impl", "sdpa-flash"), "at most 256"),
        (("--n", "128", "--heads", "8", "--kv-heads", "2", "--impl", "sdpa-efficient"),
         "does not run GQA"),
        (("--n", "128", "--impl", "sdpa-fash"), "unknown implementation"),
        (("--n", "128", "--impl", "sdpa-flash", "--algo", "flash1"), "picks the algorithm"),
        (("--n", "128", "--dtype", "fp32", "--impl", "sdpa-flash"), "not --dtype fp32"),
        (("--n", "128", "--pass", "bwd", "--impl", "flex"), "declares no backward"),
        (("--n", "128", "--d", "256", "--pass", "bwd", "--impl", "iosim-triton"),
         "backward runs head dims 16, 32, 64, 128"),
    ]
    for args, text in cases:
        code, _, stderr = run("compare", "--gpu", "h200", *args)
        assert code == 2 and stderr.count("\n") == 1 and text in stderr, (args, stderr)


def test_measured_profile_needs_the_implementations_calibration() -> None:
    code, _, stderr = run("compare", "--n", "1024", "--gpu", "a100", "--impl", "sdpa-flash",
                          "--profile", "measured")
    assert code == 2 and stderr.count("\n") == 1


def test_measure_without_a_gpu_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("click")
    # conftest sets the interpreter for the kernel tests; measure refuses that first, by design
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU is present: measure would run")
    except ImportError:
        pass
    code, _, stderr = run("measure", "--gpu", "h200", "--impl", "sdpa-flash", "--n", "1024")
    assert code == 2 and stderr.count("\n") == 1 and "measure needs" in stderr
    code, _, stderr = run("measure", "--gpu", "h200", "--impl", "sdpa-flash", "--n", "64",
                          "--d", "512")
    assert code == 2 and "at most 256" in stderr


def test_measure_lines_explain_a_large_error() -> None:
    from iosim.output.render_measure import measurement_lines

    point = {"impl": "x", "gpu": "h200", "profile": "measured", "predicted_time_s": 1e-4,
             "measured_time_s": 2e-4,
             "predicted_kernels": [{"name": "attn", "label": "fused attention", "time_s": 1e-4,
                                    "hbm_bytes": 10, "utilisation": 0.5}],
             "measured_kernels": [{"name": "flash_fwd_kernel", "time_s": 2e-4}]}
    lines = measurement_lines(point)
    assert any("-50%" in line for line in lines)
    model = next(i for i, line in enumerate(lines) if line.startswith("model:"))
    assert lines[model].startswith("model: -50% overall, predicted too fast")
    assert all(line.startswith("  ") for line in lines[model + 1:])  # one sentence, wrapped


def test_tiles_alg1_keeps_the_old_rule() -> None:
    c = compare(Workload(4096), "a100", algorithms=["flash2"], tiles="alg1")
    tiling = c.algorithm("flash2").tiling
    assert tiling is not None and (tiling.block_q, tiling.block_kv) == (326, 64)
    with pytest.raises(IosimError, match="unknown tile rule"):
        compare(Workload(4096), "a100", tiles="paper")


def _launch_workloads() -> list[tuple[str, Workload]]:
    """benchmarks/impl_launches.py's LAUNCHES, read without importing torch."""
    source = (Path(__file__).parents[1] / "benchmarks" / "impl_launches.py").read_text()
    block = source[source.index("LAUNCHES = (") + len("LAUNCHES = "):source.index(")\nMORE_LAUNCHES")
                   + 1]
    return list(eval(block, {"Workload": Workload}))  # our own literal tuple of Workloads


def test_fused_kernels_dram_reads_match_ncu() -> None:
    """ncu's dram__bytes_read of each fused kernel launch (flash, efficient, cuDNN at N 4096
    and the decode step; caches flushed before each kernel) against iosim's L2-aware DRAM
    estimate of its reads: within 8 % (d = 256 reads 7 % more than Q, K, V once)."""
    fused = [r for r in _attention_rows()
             if any(k in r["Kernel Name"] for k in ("flash_fwd", "fmha_cutlassF", "cudnn"))
             and "combine" not in r["Kernel Name"]]
    launches = [(n, w) for n, w in _launch_workloads() if n != "torch-naive"]
    assert len(fused) == len(launches) == 9
    checked = 0
    for row, (name, w) in zip(fused, launches, strict=True):
        a = compare(w, "h200", impl=name).algorithms[-1]
        if a.algorithm == "splitkv" and w.n > 1:
            continue  # the L2 model does not cover the split kernel of a prefill (README)
        assert a.dram is not None
        predicted = sum(t.bytes for t in a.dram.terms if t.op == "read"
                        and t.kernel in ("attn", "splitkv_attn"))
        measured = _int(row["dram__bytes_read.sum"])
        assert abs(predicted - measured) / measured < 0.08, (name, w, predicted, measured)
        checked += 1
    assert checked == 8


def test_measure_records_feed_the_implementation_fit(tmp_path: Path) -> None:
    """`iosim measure --record FILE` appends JSON Lines that calibrate/impl_fit.py fits from:
    points measured at twice the unit-efficiency prediction fit an efficiency of 0.5."""
    from iosim.calibrate import impl_fit
    from iosim.cli.measure_cmd import measurement_point
    from iosim.inputs.hardware import ImplCalibration
    from iosim.inputs.impl_calibration import with_impl_calibration

    h200 = resolve_hardware("h200").hardware
    unit = with_impl_calibration(h200, "sdpa-flash",
                                 ImplCalibration({"fused": 1.0, "memory": 1.0}, "unit"))
    path = tmp_path / "points.jsonl"
    with path.open("w") as out:
        for w in (Workload(4096, d=128, heads=32, batch=2), Workload(2048, d=64, heads=64)):
            est = compare(w, unit, impl="sdpa-flash", profile="measured").algorithms[-1]
            point = measurement_point("sdpa-flash", w, "h200", "measured", est, 2 * est.time_s,
                                      [], 0.0)
            out.write(json.dumps(point) + "\n")
    record = impl_fit.load_points(path)
    fitted = impl_fit.fit_record(record, h200)["sdpa-flash"]
    # both calls measured twice their unit-efficiency kernels: each head dim's fused kernel
    # fits 0.5 of its roof, with no time per call and no host-bound floor
    assert fitted["efficiency"]["fused_d128"] == 0.5
    assert fitted["efficiency"]["fused_d64"] == 0.5
    assert fitted["call_overhead_s"] == 0.0 and "host_floor_s" not in fitted["terms"]


def _rw_launches() -> list[tuple[str, Workload, list[dict[str, str]], float]]:
    """benchmarks/impl_launches.py --evict under ncu (tests/data/h200-impl-launches-rw.csv):
    per call its implementation, workload, kernel rows and the next evict's DRAM writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "impl_dram_h200", Path(__file__).parents[1] / "benchmarks" / "impl_dram_h200.py")
    assert spec is not None and spec.loader is not None
    dram = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dram)
    source = (Path(__file__).parents[1] / "benchmarks" / "impl_launches.py").read_text()
    more = source[source.index("MORE_LAUNCHES = (") + len("MORE_LAUNCHES = "):
                  source.index(")\n\n\ndef main") + 1]
    todo = [(name, i, w) for i, (name, w) in enumerate(
        _launch_workloads() + list(eval(more, {"Workload": Workload})))]  # our own literal
    rows = dram.counted((DATA / "h200-impl-launches-rw.csv").read_text(), todo)
    return [(todo[r["index"]][0], todo[r["index"]][2], r["kernels"], r["dram"]) for r in rows]


def test_split_kv_grids_and_dram_match_the_ncu_record() -> None:
    """sdpa-flash's split-KV launches on the H200 (ncu, evicts around each call): the profile's
    split rule gives the recorded grid, and the DRAM estimate (K, V read once per KV head by
    the split pass) is within 10 % of the counted bytes, writes included."""
    rows = {(name, w): (kernels, counted) for name, w, kernels, counted in _rw_launches()}
    cases = {Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8): 232,   # grid (1, 29, 8)
             Workload(1, n_kv=131072, d=64, heads=8, kv_heads=1, batch=4): 228,  # (1, 57, 4)
             Workload(256, n_kv=32768, d=128, heads=32, kv_heads=8): 256}  # (4, 2, 32)
    for w, programs in cases.items():
        kernels, counted = rows[("sdpa-flash", w)]
        assert "splitkv_kernel" in kernels[0]["name"] and "combine" in kernels[1]["name"]
        est = compare(w, "h200", impl="sdpa-flash", profile="measured").algorithms[-1]
        assert est.algorithm == "splitkv"
        assert est.occupancy[0].programs == programs
        assert est.dram is not None
        predicted = est.dram.read_bytes + est.dram.write_bytes
        assert abs(predicted - counted) <= 0.10 * counted, (w, predicted, counted)


def test_the_fit_predicts_what_compare_predicts() -> None:
    """calibrate/impl_fit.py's `predict` (the model the fit searches) equals compare's call
    time under the shipped H200 figures on points of every kind (sub-wave, split prefill,
    decode, eager, d = 256), so the fitted figures mean in compare what they meant in the fit."""
    from iosim.calibrate import impl_fit as F
    from iosim.estimates.combine import TERMS as COMBINE_TERMS

    h200 = resolve_hardware("h200").hardware
    points = [("sdpa-flash", Workload(2048, heads=4)), ("sdpa-flash", Workload(1, n_kv=98304,
              heads=8, kv_heads=1, batch=2)), ("sdpa-flash", Workload(384, n_kv=24576, heads=16,
              kv_heads=4)), ("sdpa-flash", Workload(3072, d=256, heads=8, dtype="bf16")),
              ("torch-naive", Workload(1, n_kv=8192, heads=32, kv_heads=8)),
              ("torch-naive", Workload(3072, heads=8, causal=True)),
              ("iosim-triton", Workload(8192, heads=1)), ("sdpa-cudnn", Workload(4096, d=64,
              heads=2))]
    bandwidth = {"sdpa-flash": h200.measured.impls["sdpa-flash"].terms["program_bandwidth"]}
    for name, w in points:
        shipped = h200.measured.impls[name]
        combine = {k: shipped.terms[k] for k in COMBINE_TERMS if k in shipped.terms}
        pieces = F._pieces(w, get_implementation(name), h200, 1.0, bandwidth.get(name), combine)
        params = {**F.START, **{k: shipped.efficiency.get(v, shipped.efficiency.get("fused", 1))
                                for k, v in F.COMPUTE_KEYS.items()},
                  **{k: v for k, v in shipped.efficiency.items() if k.startswith("memory")},
                  "call_overhead_s": shipped.call_overhead_s or 0.0, **shipped.terms}
        a = compare(w, h200, impl=name, profile="measured").algorithms[-1]
        assert F.predict(pieces, params) == pytest.approx(a.call_time_s, rel=1e-9), (name, w)


def test_a_decode_call_is_at_least_its_host_floor() -> None:
    """call_time_s = max(host-bound floor, kernels + time per call): a short decode step of
    sdpa-flash is host-bound (tests/data/h200-impl-fit2.json: 8,192 keys, 32/8 heads, kernels
    ~25 µs, the call 61 µs), a long prefill device-bound."""
    h200 = resolve_hardware("h200").hardware
    terms = h200.measured.impls["sdpa-flash"].terms
    short = compare(Workload(1, n_kv=8192, heads=32, kv_heads=8), h200, impl="sdpa-flash",
                    profile="measured").algorithms[-1]
    assert short.time_s < terms["decode_host_floor_s"] == short.call_time_s
    long = compare(Workload(16384, heads=16), h200, impl="sdpa-flash",
                   profile="measured").algorithms[-1]
    assert long.call_time_s == pytest.approx(long.time_s + long.call_overhead_s)


def test_the_combine_kernels_grid_matches_the_recorded_launches() -> None:
    """FA2's split-KV combine kernel (estimates/combine.py): ⌈b·h·n ÷ kBlockM⌉ programs of 128
    threads, kBlockM = 4 at d = 128. ncu on the H200 (tests/data/h200-impl-launches.csv):
    decoding 32 query heads over 8 KV heads, and one head × 4,096 rows (split-KV prefill)."""
    from iosim.estimates.combine import THREADS, combine_programs

    combines = [r for r in _attention_rows() if "splitkv_combine" in r["Kernel Name"]]
    shapes = {8: Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8),
              1024: Workload(4096, d=128, heads=1)}
    grids = {_int(r["launch__grid_size"]) for r in combines}
    assert set(shapes) <= grids
    for grid, w in shapes.items():
        assert combine_programs(w) == grid
    assert {_int(r["launch__block_size"]) for r in combines} == {THREADS}


def _dram_calls(csv_name: str, set_name: str) -> list[tuple[dict[str, Any], Workload]]:
    """benchmarks/impl_dram_h200.py's counted calls of a committed ncu record, with their
    workloads (the judge's own parser; no GPU)."""
    from benchmarks import impl_dram_h200 as D

    points = D._set(set_name)
    rows = D.counted((DATA / csv_name).read_text(), D.calls(points))
    return [(r, points[r["index"]]) for r in rows]


def test_an_expanding_implementation_reads_its_gqa_copies_as_ncu_counted() -> None:
    """iosim-triton's attention reads K_rep, V_rep per query head after repeat_interleave
    (analysis/impl_kernels.py _reading_the_copies): its GQA calls of the fit record
    tests/data/h200-impl-dram3.csv (VALIDATION2, ratios 2-12) within 10 % of ncu's bytes,
    where one pass over K, V per KV head was 19-30 % under."""
    checked = 0
    for r, w in _dram_calls("h200-impl-dram3.csv", "validation2"):
        if r["impl"] != "iosim-triton" or w.group_size == 1 or w.n_kv > 8192:
            continue
        est = compare(w, "h200", impl="iosim-triton", profile="measured").algorithms[-1].dram
        assert est is not None
        assert abs(est.bytes - r["dram"]) <= 0.10 * r["dram"], (w, est.bytes, r["dram"])
        checked += 1
    assert checked >= 5


def test_a_split_kernel_that_fits_in_l2_reads_q_and_its_states_once() -> None:
    """sdpa-flash's split-KV prefill of tiny grids (VALIDATION2 points 0-2: 6 × 1,792, 2 ×
    4,608, 1 × 10,240 causal): ncu read Q + K + V once (tests/data/h200-impl-dram3.csv);
    the estimate's reads equal that within 2 %, its Q no longer charged once per split."""
    for r, w in _dram_calls("h200-impl-dram3.csv", "validation2"):
        if r["impl"] != "sdpa-flash" or r["index"] > 2:
            continue
        est = compare(w, "h200", impl="sdpa-flash", profile="measured").algorithms[-1].dram
        assert est is not None
        read = sum(k["read"] for k in r["kernels"])
        assert abs(est.read_bytes - read) <= 0.02 * read, (w, est.read_bytes, read)


def test_a_combine_kernel_timed_by_its_latency_says_latency_not_a_roof() -> None:
    """A decode step's combine kernel moves 0.25 MB: the roofline gives it under a microsecond,
    its latency model (estimates/combine.py, fitted on measured device times) several. Its bound
    column said "compute" although neither roof set its time; it says "latency", in the table,
    the JSON and the legend."""
    argv = ["compare", "--n", "1", "--n-kv", "65536", "--heads", "32", "--kv-heads", "8",
            "--gpu", "h200", "--profile", "measured", "--impl", "sdpa-flash"]
    kernels = json.loads(run(*argv, "--format", "json").output)["algorithms"][1]["kernels"]
    combine = next(k for k in kernels if k["kernel"] == "splitkv_combine")
    roof = max(combine["memory_time_s"], combine["compute_time_s"]) / combine["efficiency"]
    assert combine["time_s"] > roof
    assert (combine["bound"], combine["timed_by"]) == ("latency", "combine")
    assert all(k["bound"] != "latency" for k in kernels if k is not combine)
    table = " ".join(run(*argv).output.split())  # the legend wraps at the runner's width
    assert "combine splits" in table and "latency: too small a kernel" in table
