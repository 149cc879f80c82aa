"""The hierarchical roofline (issue 13, item 4): DRAM, L2 and SRAM ceilings, each kernel once
per level at one performance; measured kernels from a calibration record beside them."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from iosim.analysis.compare import compare
from iosim.calibrate.points import measured_kernels
from iosim.calibrate.records import load_calibration
from iosim.cli import cli
from iosim.inputs.workload import Workload
from iosim.output import plot

RECORD = Path(__file__).parent / "data" / "h200-calibration.json"
# a shape the record measured: N 4096, d 64, batch 4 × 16 heads, the fused kernel at 128×64
RECORDED = Workload(4096, d=64, batch=4, heads=16)


def dots(ax: Any, kind: str) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if gid.startswith(kind + ":"):
            out.setdefault(gid.split(":")[1], []).append(
                (float(line.get_xdata()[0]), float(line.get_ydata()[0])))
    return out


def bandwidths(ax: Any) -> dict[str, float]:
    """Each level's ceiling, read back from its drawn line (its slope below the ridge)."""
    out = {}
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if gid.startswith("roof:"):
            out[gid[5:]] = float(line.get_ydata()[0] / line.get_xdata()[0])
    return out


CASES = {
    "h100 causal": (Workload(8192, d=128, heads=32, causal=True), "h100", "spec", {}),
    "a100 figure 2": (Workload(1024, d=64, heads=16, batch=64), "a100", "spec", {}),
    "a100 decode": (Workload(1, n_kv=8192, heads=32, kv_heads=8), "a100", "spec", {}),
    "h200 measured": (RECORDED, "h200", "measured", {"block_q": 128, "block_kv": 64}),
}


@functools.cache
def figure_of(case: str) -> tuple[Any, Any]:
    """Each case's comparison and figure, drawn once for the tests that read them."""
    workload, gpu, profile, blocks = CASES[case]
    c = compare(workload, gpu, profile=profile, **blocks)
    return c, plot.hierarchical_roofline(c)


@pytest.mark.parametrize("case", list(CASES))
def test_no_predicted_dot_sits_above_its_ceiling(case: str) -> None:
    c, fig = figure_of(case)
    (ax,) = fig.axes
    ceilings = bandwidths(ax)
    peak = c.roofs.matmul_flops_per_s
    predicted = dots(ax, "predicted")
    assert set(predicted) == {"DRAM", "L2", "SRAM"}
    for level, points in predicted.items():
        for x, y in points:
            if level in ceilings:
                assert y <= x * ceilings[level] * (1 + 1e-12), f"{case}: a {level} dot above"
            # elementwise FLOPs run on the vector units beside the tensor cores (the roofline
            # footnote): a compute-bound kernel may pass the matmul peak by their share, ≲ 3 %
            assert y <= peak * 1.03


def test_each_kernel_has_one_dot_per_level_at_its_bytes() -> None:
    c = compare(RECORDED, "h200", block_q=128, block_kv=64)
    (ax,) = plot.hierarchical_roofline(c).axes
    flash2 = c.algorithm("flash2").kernels[0]
    y = flash2.flops / flash2.time_s
    predicted = dots(ax, "predicted")
    x_of = {level: [x for x, yy in points if yy == y] for level, points in predicted.items()}
    dram = c.algorithm("flash2").dram
    assert dram is not None
    assert x_of["DRAM"] == [flash2.flops / dram.of_kernel("attn").bytes]
    assert x_of["L2"] == [flash2.flops / flash2.hbm_bytes]
    # SRAM: FA2 reads its resident Q_i once per visited pair, T_c = 4096 / 64 = 64 times
    # instead of once: (64 − 1) · N·d · 2 B · (batch 4 × 16 heads) more bytes than the L2 count
    assert x_of["SRAM"] == [flash2.flops / (flash2.hbm_bytes + 63 * 4096 * 64 * 2 * 64)]


def test_measured_dots_from_the_calibration_record() -> None:
    measured = measured_kernels(load_calibration(RECORD), RECORDED)
    c = compare(RECORDED, "h200", block_q=128, block_kv=64, profile="measured")
    fig = plot.hierarchical_roofline(c, measured)
    (ax,) = fig.axes
    got = dots(ax, "measured")
    assert set(got) == {"DRAM", "L2"}  # ncu counts no SRAM bytes
    flops = c.algorithm("flash2").kernels[0].flops
    # tests/data/h200-calibration.json, attn_fwd/fp16/n4096/d64/full/128x64/w8/s3: median
    # 673.66 µs; ncu DRAM read 100,712,960 + write 24,881,664 + the next evict's write
    # 10,260,736 (dirty lines it left in L2); L2 2,061,269,696 B
    y = flops / 0.000673664003610611
    assert (flops / (100712960 + 24881664 + 10260736), y) in got["DRAM"]
    assert (flops / 2061269696, y) in got["L2"]
    # standard's three kernels, and only the fused configuration the prediction uses
    assert len(got["DRAM"]) == 4
    key = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("measured attn_fwd 128x64/w8/s3" in k for k in key)
    assert not any("64x64" in k for k in key)


def test_roofline_command_draws_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [
        "roofline", "--gpu", "h200", "--n", "4096", "--batch", "4", "--heads", "16",
        "--block-q", "128", "--block-kv", "64", "--record", str(RECORD), "--out",
        str(tmp_path), "--name", "levels"])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["levels.png", "levels.svg"]



def test_a_record_without_the_shape_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    from iosim.cli.roofline_cmd import _measured

    assert _measured(RECORD, compare(Workload(333), "h200"), None) == ([], None)
    assert "has no counted kernel at N 333, d 64, batch 1, 1 heads" in capsys.readouterr().err


def test_without_an_l2_model_there_are_no_dram_dots_and_the_plot_says_why() -> None:
    seed = Path(__file__).parent / "data" / "seed-accelerator.yaml"  # no l2_size, no sm_count
    fig = plot.hierarchical_roofline(compare(Workload(4096), str(seed)))
    (ax,) = fig.axes
    assert set(dots(ax, "predicted")) == {"L2", "SRAM"}
    assert any("No DRAM estimate" in t.get_text() for t in ax.texts)
    assert not any(t.get_text().startswith("DRAM bytes") for t in fig.legends[0].get_texts())


@pytest.mark.parametrize("case", ["h100 causal", "a100 figure 2"])
def test_labels_clear_of_each_other_the_ceilings_and_the_dots(case: str) -> None:
    from tests.test_plot_layout import assert_readable_roofline

    assert_readable_roofline(figure_of(case)[1])


def test_a_crowd_of_dots_is_magnified() -> None:
    # causal d 128 on the A100: standard's QKᵀ/PV dots, flash1's DRAM dot and flash2's L2 dot
    # all near 100 FLOP/B and 200 TFLOP/s
    c = compare(Workload(1024, d=128, heads=16, batch=64, causal=True), "a100")
    (ax,) = plot.hierarchical_roofline(c).axes
    (inset,) = ax.child_axes
    assert len([m for m in inset.get_lines() if len(m.get_xdata()) == 1]) >= 3


MEASURE_RECORD = Path(__file__).parent / "data" / "h200-measure.jsonl"
# `iosim measure --record` points (benchmarks/NOTES.md): lines 1-2 from issue 11 round 3,
# recorded before measure read ncu (time only): sdpa-flash at N 4096, d 128, batch 2 × 32
# heads and at a decode step (N 1, N_kv 65,536, 32/8 heads); lines 3-6 with ncu's counters
# (helper measure5, benchmarks/measure_ncu_h200.sh), the first two at the same shapes
TIMED = Workload(4096, d=128, heads=32, batch=2)


def _roofline_with(tmp_path: Path, *flags: str) -> Any:
    return CliRunner().invoke(cli, ["roofline", "--gpu", "h200", "--profile", "measured",
                                    "--record", str(MEASURE_RECORD), "--out", str(tmp_path),
                                    *flags])


def test_a_measure_record_gives_time_only_dots_at_the_predicted_bytes(tmp_path: Path) -> None:
    from iosim.cli.roofline_cmd import _measured

    old = tmp_path / "old.jsonl"  # the record's first line alone: measured before ncu was read
    old.write_text(MEASURE_RECORD.read_text().splitlines()[0] + "\n")
    c = compare(TIMED, "h200", impl="sdpa-flash", profile="measured")
    measured, note = _measured(old, c, "sdpa-flash")
    assert note == ("hollow: sdpa-flash by `iosim measure` (time only, no counters: at the "
                    "predicted bytes)")
    (ax,) = plot.hierarchical_roofline(c, measured, title_note=note).axes
    got, predicted = dots(ax, "measured"), dots(ax, "predicted")
    fused = c.algorithm("sdpa-flash").kernels[0]
    y = fused.flops / 0.0015507149999999996  # the record's profiled device time of the kernel
    x_dram = [x for x, yy in predicted["DRAM"] if yy == fused.flops / fused.time_s]
    assert got["DRAM"] == [(x_dram[0], y)]  # same intensity as predicted, measured height
    assert got["L2"] == [(fused.flops / fused.hbm_bytes, y)]


def test_a_measure_record_draws_each_kernel_of_the_decode_step(tmp_path: Path) -> None:
    from iosim.cli.roofline_cmd import _measured

    w = Workload(1, n_kv=65536, d=128, heads=32, kv_heads=8)
    c = compare(w, "h200", impl="sdpa-flash", profile="measured")
    measured, _ = _measured(MEASURE_RECORD, c, "sdpa-flash")
    assert [m.kernel for m in measured] == ["splitkv_attn", "splitkv_combine"]
    result = _roofline_with(tmp_path, "--impl", "sdpa-flash", "--n", "1", "--n-kv", "65536",
                            "--d", "128", "--heads", "32", "--kv-heads", "8")
    assert result.exit_code == 0, result.stderr
    assert "plotting the predictions alone" not in result.stderr


@pytest.mark.parametrize(("flags", "says"), [
    (("--n", "4096", "--d", "128", "--heads", "32", "--batch", "2"),
     "is an `iosim measure` record (implementations "),
    (("--impl", "sdpa-flash", "--n", "333"),
     "has no sdpa-flash point on h200 at N 333, d 64, batch 1, 1 heads, fp16: plotting the "
     "predictions alone"),
])
def test_a_measure_record_without_the_point_says_so(tmp_path: Path, flags: tuple[str, ...],
                                                     says: str) -> None:
    result = _roofline_with(tmp_path, *flags)
    assert result.exit_code == 0, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if not x.startswith("wrote ")]
    assert says in line


def test_measure_points_with_counters_sit_at_ncus_bytes() -> None:
    from iosim.cli.roofline_cmd import _measured

    c = compare(TIMED, "h200", impl="sdpa-flash", profile="measured")
    measured, note = _measured(MEASURE_RECORD, c, "sdpa-flash")
    assert note == ("hollow: sdpa-flash by `iosim measure` (ncu's bytes, one profiled call's "
                    "kernel times; latest of 2)")
    (ax,) = plot.hierarchical_roofline(c, measured, title_note=note).axes
    got = dots(ax, "measured")
    flops = c.algorithm("sdpa-flash").kernels[0].flops
    # tests/data/h200-measure.jsonl line 3 (benchmarks/measure_ncu_h200.sh on the H200):
    # flash_fwd_kernel's device time 1,553.7 µs (torch.profiler, cold L2); ncu DRAM read
    # 206,575,360 + write 70,190,848 + the closing evict's write 16,197,888; L2 5,689,482,272 B
    (m,) = measured
    y = flops / m.time_s
    assert got["DRAM"] == [(flops / (206575360 + 70190848 + 16197888), y)]
    assert got["L2"] == [(flops / 5689482272, y)]
