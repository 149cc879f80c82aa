"""`iosim sweep` and `iosim roofline` through click's CliRunner: formats, figures, bad input."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from iosim.analysis.compare import compare
from iosim.inputs.workload import Workload
from tests.conftest import run_cli as run


def test_csv_rows_equal_compare() -> None:
    code, out, _ = run("sweep", "--gpu", "a100,h100", "--n", "1024..4096", "--d", "64,128",
                       "--causal", "no,yes", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 2 * 3 * 2 * 2 * 3  # gpus × N × d × causal × algorithms
    for row in rows[:: 7]:
        w = Workload(int(row["n"]), d=int(row["d"]), causal=row["causal"] == "True")
        a = compare(w, row["gpu"]).algorithm(row["algorithm"])
        assert int(row["hbm_read_bytes"]) == a.hbm_read_bytes
        assert int(row["hbm_write_bytes"]) == a.hbm_write_bytes
        assert int(row["flops"]) == a.flops
        assert float(row["time_s"]) == pytest.approx(a.time_s, rel=1e-15)
        assert row["bound"] == a.bound
        if a.tiling is None:
            assert row["block_q"] == row["block_kv"] == ""
        else:
            assert (int(row["block_q"]), int(row["block_kv"])) == (a.tiling.block_q,
                                                                   a.tiling.block_kv)


def test_json_has_metadata_and_every_row() -> None:
    code, out, _ = run("sweep", "--gpu", "a100", "--n", "512..4096", "--algo", "flash2",
                       "--block-q", "auto,64", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "iosim.sweep/1" and data["points"] == 8
    assert data["axes"]["n"] == [512, 1024, 2048, 4096]
    assert data["axes"]["block_q"] == [None, 64]
    assert len(data["rows"]) == 8 and {r["algorithm"] for r in data["rows"]} == {"flash2"}
    # auto = FA2's code at d = 64: 128 rows (flash_fwd_launch_template.h:210)
    assert [r["block_q"] for r in data["rows"][:2]] == [128, 64]


def test_table_shows_varying_axes_and_limits_rows() -> None:
    code, out, _ = run("sweep", "--gpu", "a100-40gb-sxm", "--n", "1024", "--heads", "16",
                       "--batch", "64", "--algo", "flash1", "--block-kv", "64..1024", "--limit",
                       "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("sweep     5 grid points × 1 algorithm (spec profile")
    assert lines[1] == "varying   B_c (5 values)"
    header = next(line for line in lines if "algorithm" in line and "B_r×B_c" in line)
    assert header.split() == ["algorithm", "B_r×B_c", "fits", "HBM", "÷", "std", "time",
                              "speed-up", "bound"]
    rows = [line.split() for line in lines if line.strip().startswith("flash1")]
    assert [r[1] for r in rows] == ["64×64", "64×128", "64×256"]
    assert "… 2 more rows; use --limit, or --format csv/jsonl/json for all 5" in out
    code, out, _ = run("sweep", "--gpu", "a100-40gb-sxm", "--n", "1024", "--heads", "16",
                       "--batch", "64", "--algo", "flash1", "--block-kv", "512,1024")
    assert "NO: SRAM (the blocks exceed it" in out
    assert [line.split()[2:4] for line in out.splitlines()
            if line.strip().startswith("flash1")] == [["yes", "1.2"], ["NO:", "SRAM"]]


def test_markdown_is_a_table() -> None:
    code, out, _ = run("sweep", "--gpu", "a100", "--n", "1024,2048", "--format", "markdown")
    assert code == 0
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert table[0].startswith("| N | algorithm | B_r×B_c |")
    assert len(table) == 2 + 2 * 3


def test_plot_writes_the_figures_the_axes_allow(tmp_path: Path) -> None:
    code, _, err = run("sweep", "--gpu", "a100,h100", "--n", "256..4096", "--block-kv",
                       "auto,64", "--plot", str(tmp_path / "figs"))
    assert code == 0
    names = sorted(p.name for p in (tmp_path / "figs").iterdir())
    stems = ("traffic_vs_n", "time_vs_n", "block-kv_sweep", "gpu_comparison")
    assert names == sorted(f"{stem}.{ext}" for stem in stems for ext in ("png", "svg"))
    assert err.count("wrote ") == 8
    code, _, err = run("sweep", "--gpu", "a100", "--n", "1024", "--plot", str(tmp_path / "none"))
    assert code == 0 and "nothing to plot" in err


def test_roofline_command(tmp_path: Path) -> None:
    code, out, err = run("roofline", "--gpu", "a100", "--n", "4096", "--out", str(tmp_path))
    assert code == 0
    assert (tmp_path / "roofline.png").stat().st_size > 10_000
    assert (tmp_path / "roofline.svg").read_text().lstrip().startswith("<?xml")
    assert "ridge 153 FLOP/B" in out  # 312 TFLOP/s / 2,039 GB/s (configs/gpus/a100-80gb-sxm.yaml)
    assert "fused attention" in out and "wrote" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--n", "4096..512"], "range '4096..512' is descending (empty)"),
    (["--n", ""], "no values given"),
    (["--n", "512,abc"], "'abc' is not a whole number"),
    (["--n", "512", "--d", "64,sixty"], "'sixty' is not a whole number"),
    (["--n", "512", "--gpu", "a100,zzz"], "unknown GPU 'zzz'"),
    (["--n", "512", "--gpu", "a100,a100-80gb-sxm"], "lists a100-80gb-sxm twice"),
    (["--n", "512", "--causal", "maybe"], "'maybe' is not yes or no"),
    (["--n", "512", "--dtype", "fp16,fp8"], "a100-80gb-sxm has no fp8 peak"),
    (["--n", "512", "--sram", "64KiB", "--sram-elements", "4096"], "not both"),
])
def test_bad_sweep_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    if "--gpu" not in args:
        args = ["--gpu", "a100", *args]
    code, out, err = run("sweep", *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("Error: ")
    assert message in err


def test_unwritable_output_folders_are_one_line_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for args in (["sweep", "--gpu", "a100", "--n", "512..1024", "--plot", str(blocker / "x")],
                 ["roofline", "--gpu", "a100", "--n", "512", "--out", str(blocker / "x")],
                 ["roofline", "--gpu", "a100", "--n", "512", "--out", str(blocker)]):
        code, _, err = run(*args)
        assert code == 2, args
        assert err.count("\n") == 1 and err.startswith("Error: ")
        assert ("cannot write to" in err) or ("is a file, not a folder" in err)


def test_progress_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from rich.console import Console

    from iosim.analysis.sweep import SweepSpec
    from iosim.cli import sweep_cmd

    monkeypatch.setenv("TERM", "xterm")  # conftest makes terminals dumb (no live display)
    monkeypatch.setattr(sweep_cmd, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(importlib.import_module("iosim.analysis.sweep"), "CHUNK_POINTS", 4)
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    result = sweep_cmd.run_with_progress(SweepSpec(n=tuple(range(64, 64 * 17, 64)),
                                                   gpu=("a100",)), terminal)
    assert result.points == 16
    shown = terminal.file.getvalue()
    assert "sweep" in shown and "16/16 points" in shown
    # not a terminal: no bar at all
    pipe = Console(file=io.StringIO(), force_terminal=False)
    sweep_cmd.run_with_progress(SweepSpec(n=(64, 128), gpu=("a100",)), pipe)
    assert pipe.file.getvalue() == ""


def test_compare_and_sweep_tables_do_not_load_matplotlib_or_pandas() -> None:
    code = ("import sys; from click.testing import CliRunner; from iosim.cli import cli; "
            "r = CliRunner().invoke(cli, ['sweep', '--gpu', 'a100', '--n', '512..2048']); "
            "assert r.exit_code == 0, r.output; "
            "r = CliRunner().invoke(cli, ['compare', '--gpu', 'a100', '--n', '512']); "
            "print(sorted(m for m in ('matplotlib', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_plot_never_overwrites_without_force(tmp_path):
    # issue standard: nothing a user wrote is overwritten without their asking


    args = ["sweep", "--gpu", "a100", "--n", "512..2048", "--plot", str(tmp_path)]
    assert run(*args).exit_code == 0
    before = (tmp_path / "traffic_vs_n.png").read_bytes()
    (tmp_path / "traffic_vs_n.png").write_bytes(b"mine")
    again = run(*args)
    assert again.exit_code == 2
    assert again.output.strip().splitlines() == [
        f"Error: {tmp_path / 'traffic_vs_n.png'} exists; pass --force to overwrite it, or choose "
        "another folder or name"]
    assert (tmp_path / "traffic_vs_n.png").read_bytes() == b"mine"
    forced = run(*[*args, "--force"])
    assert forced.exit_code == 0 and (tmp_path / "traffic_vs_n.png").read_bytes() == before


def test_roofline_never_overwrites_without_force(tmp_path):


    args = ["roofline", "--gpu", "a100", "--n", "1024", "--out", str(tmp_path)]
    (tmp_path / "roofline.png").write_bytes(b"mine")  # a file of the user's (one build less)
    second = run(*args)
    assert second.exit_code == 2 and "roofline.png exists; pass --force" in second.output
    assert (tmp_path / "roofline.png").read_bytes() == b"mine"
    assert run(*[*args, "--force"]).exit_code == 0
    assert (tmp_path / "roofline.png").read_bytes().startswith(b"\x89PNG")
