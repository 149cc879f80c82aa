"""`iosim compare` and `iosim gpus` through click's CliRunner: outputs, formats, bad input."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from iosim.cli import cli
from tests.conftest import SEED_ACCELERATOR
from tests.conftest import run_cli as run


def test_compare_default_table():
    result = run("compare", "--n", "4096", "--gpu", "a100")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "'a100' is an alias of a100-80gb-sxm" in out
    for piece in ("S = QKᵀ", "P = softmax(S)", "O = PV", "init O, l, m", "fused attention",
                  "standard", "flash1", "flash2", "Theorem 2", "HBM bytes by tensor"):
        assert piece in out
    # standard at N = 4096, d = 64, fp16 moves 4Nd + 4N² elements = 136,314,880 bytes (Alg. 0)
    assert "136.3 MB" in out


def test_compare_json_is_the_documented_schema():
    result = run("compare", "--n", "4096", "--gpu", "a100", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["schema"] == "iosim.compare/1"
    assert [a["name"] for a in data["algorithms"]] == ["standard", "flash1", "flash2"]
    for algorithm in data["algorithms"]:
        for key in ("hbm_read_bytes", "hbm_write_bytes", "hbm_bytes", "flops", "time_s", "bound",
                    "kernels", "bytes_by_tensor", "terms", "speedup_vs_standard",
                    "traffic_ratio_vs_standard", "footprint"):
            assert key in algorithm
        # totals are sums of the terms
        assert algorithm["hbm_bytes"] == sum(t["bytes"] for t in algorithm["terms"])
        assert algorithm["hbm_read_bytes"] == sum(k["hbm_read_bytes"] for k in algorithm["kernels"])
    standard = data["algorithms"][0]
    assert standard["hbm_bytes"] == 136_314_880
    assert standard["bytes_by_tensor"]["S"] == {"read": 33_554_432, "write": 33_554_432}


def test_compare_csv_rows_sum_to_totals():
    result = run("compare", "--n", "1024", "--gpu", "h100", "--format", "csv", "--causal")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.output)))
    for algorithm in ("standard", "flash1", "flash2"):
        kernels = [r for r in rows if r["algorithm"] == algorithm and r["kernel"] != "total"]
        total = next(r for r in rows if r["algorithm"] == algorithm and r["kernel"] == "total")
        assert sum(int(r["hbm_bytes"]) for r in kernels) == int(total["hbm_bytes"])


def test_compare_markdown():
    result = run("compare", "--n", "2048", "--gpu", "h200", "--format", "markdown", "--algo", "flash2")
    assert result.exit_code == 0
    assert "| algorithm | kernel |" in result.output and "|---|---|" in result.output


def test_compare_user_yaml_and_sram_override():
    result = run("compare", "--n", "4096", "--gpu", str(SEED_ACCELERATOR), "--sram-elements", "65536",
                 "--format", "json", "--algo", "flash1")
    data = json.loads(result.output)
    assert data["sram"] == {"bytes": 131072, "elements": 65536, "source": "--sram-elements 65536"}
    assert data["algorithms"][0]["tiling"]["block_kv"] == 256


def test_gpus_list_and_show():
    result = run("gpus")
    assert result.exit_code == 0
    for name in ("a100-80gb-sxm", "h100-sxm", "mi300x", "t4"):
        assert name in result.output
    shown = run("gpus", "show", "h100")
    assert shown.exit_code == 0
    assert "'h100' is an alias of h100-sxm" in shown.output and "sram_per_block" in shown.output
    data = json.loads(run("gpus", "--format", "json").output)
    assert len(data) == 13


@pytest.mark.parametrize(("args", "message"), [
    (["--n", "0"], "--n must be at least 1, got 0"),
    (["--n", "-5"], "--n must be at least 1, got -5"),
    (["--n", "4.5"], "'4.5' is not a valid integer"),
    (["--n", "1024", "--d", "100000"], "d = 100000 does not fit in the SRAM"),
    (["--n", "1024", "--gpu", "a1000"], "unknown GPU 'a1000'. Did you mean 'a100'"),
    (["--n", "1024", "--gpu", "missing.yaml"], "no such hardware file: missing.yaml"),
    (["--n", "1024", "--block-q", "512", "--block-kv", "512"], "blocks B_r = 512, B_c = 512 do not fit"),
    (["--n", "1024", "--heads", "8", "--kv-heads", "3"], "--kv-heads 3 does not divide --heads 8"),
    (["--n", "1024", "--dtype", "fp12"], "Invalid value for '--dtype'"),
    (["--n", "1024", "--format", "xml"], "Invalid value for '--format'"),
    (["--n", "1024", "--algo", "flash3"], "unknown algorithm 'flash3'"),
    (["--n", "1024", "--unfused", "softmax"], "unknown unfused op 'softmax'"),
    (["--n", "1024", "--sram", "lots"], "--sram: 'lots' is not a quantity"),
    (["--n", "1024", "--sram", "1KiB", "--sram-elements", "4"], "give --sram or --sram-elements"),
    (["--n", "1024", "--dtype", "fp8"], "a100-80gb-sxm has no fp8 peak"),
    ([], "Missing option '--n'"),
])
def test_compare_bad_input_is_one_line_exit_2(args, message):
    if "--gpu" not in args:
        args = [*args, "--gpu", "a100"]
    result = run("compare", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert message in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("yaml_text", "message"), [
    ("name: [unclosed\n", "not valid YAML"),
    ("schema_version: 1\nname: x\ncolour: red\n", "colour: unknown key"),
    ("schema_version: 1\nname: x\n", "hbm_capacity: missing"),
    ("schema_version: 1\nname: !!python/object:os.system x\n", "YAML tags are not allowed"),
])
def test_compare_bad_user_yaml(tmp_path, yaml_text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    result = run("compare", "--n", "1024", "--gpu", str(path))
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and message in result.output and "bad.yaml" in result.output


def test_no_heavy_imports_on_the_compare_path():
    code = ("import sys\nfrom click.testing import CliRunner\nfrom iosim.cli import cli\n"
            "r = CliRunner().invoke(cli, ['compare', '--n', '4096', '--gpu', 'a100'])\n"
            "assert r.exit_code == 0\n"
            "print(sorted(m for m in ('matplotlib', 'pandas', 'torch', 'triton') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_python_dash_m_and_version():
    out = subprocess.run([sys.executable, "-m", "iosim", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("iosim, version ")


def test_every_command_has_help_and_is_in_the_readme():
    from pathlib import Path

    import click

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    context = click.Context(cli)
    names = cli.list_commands(context)
    assert len(names) == 10
    for name in names:
        command = cli.get_command(context, name)
        assert command is not None and command.help, f"{name} has no help"
        assert f"iosim {name}" in readme, f"`iosim {name}` is not in the README"
